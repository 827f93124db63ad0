"""Where an install's targets are, on the sample package's real files: each target found once (a
mention in a comment is none), a name defined twice refused, a place remembered from an earlier
run or walk trusted only while the files still define the targets there, a reinstall of the same
release found without a walk, and status's quick look in the known folders first."""

from __future__ import annotations

import shutil
from pathlib import Path

from layerkit import BRIDGE, PROVIDER, UPSTREAM, dedupe

from senpi_guard.core import locate
from senpi_guard.core.patch.classify import State
from senpi_guard.core.patch.definition import load
from senpi_guard.discover import Install
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import where
from senpi_guard.layers.dist import Reconciler
from senpi_guard.prove.replays import package_stamp


def look(install: Install, store: Store, quick: bool = False, walked: dict | None = None) -> tuple[dict, int]:
    return where.locate_targets(dedupe(), store, install, install.package_dir / "dist", quick, walked)


def found(hits: dict, install: Install) -> dict[str, list[str]]:
    return {name: [h.path.relative_to(install.package_dir).as_posix() for h in at] for name, at in hits.items()}


def all_js(install: Install) -> int:
    """How many .js files a walk of the install's dist/ reads."""
    return len(locate.js_files(install.package_dir / "dist"))


def test_each_target_is_found_once_where_it_is_defined(install, store):
    hits, searched = look(install, store)
    assert found(hits, install) == {
        "buildPromptBlocks": [BRIDGE],  # (the fillers mention it only in a comment)
        "dedupeUltraworkBlocks": [UPSTREAM],
        "sentHashesFromBranch": [],  # (the binding is not in this release)
    }
    assert searched == all_js(install)


def test_a_target_defined_twice_is_refused(install, store):
    copy = install.package_dir / "dist/core/other/prompt-bridge.js"
    copy.parent.mkdir()
    shutil.copy(install.package_dir / BRIDGE, copy)
    walked: dict = {}
    hits, _ = look(install, store, walked=walked)
    assert len(hits["buildPromptBlocks"]) == 2
    assert "buildPromptBlocks" not in walked[install.package_dir]["targets"]  # (never remembered as found)
    insp = Reconciler(dedupe(), Config(), store).inspect(install)
    assert insp.state == State.ERROR
    assert "2 definitions of buildPromptBlocks (core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js:" in (
        insp.detail
    )
    assert insp.detail.endswith("senpi-guard will not guess: report this version")


def test_this_runs_walk_serves_the_next_look_while_the_package_is_unchanged(install, store):
    walked: dict = {}
    first, _ = look(install, store, walked=walked)
    assert walked[install.package_dir] == {
        "stamp": package_stamp(install.package_dir),
        "targets": {"buildPromptBlocks": BRIDGE, "dedupeUltraworkBlocks": UPSTREAM, "sentHashesFromBranch": None},
    }
    again, searched = look(install, store, walked=walked)
    assert found(again, install) == found(first, install) and searched == 2  # (only the two files read)


def test_the_place_recorded_last_time_is_trusted_only_while_the_file_still_defines_the_target(install, store):
    rec = Reconciler(dedupe(), Config(), store)
    insp = rec.inspect(install)
    record = where.location_record(rec.patch, insp)
    assert record == {
        "stamp": package_stamp(install.package_dir),
        "targets": {"buildPromptBlocks": BRIDGE, "dedupeUltraworkBlocks": UPSTREAM, "sentHashesFromBranch": None},
    }
    store.update_install(install.package_dir, patch=rec.patch.name, located=record)
    assert look(install, store)[1] == 2
    # the function moves to another file of the same folder (dist/ itself is unchanged)
    bridge = install.package_dir / BRIDGE
    moved = bridge.with_name("prompt-blocks.js")
    bridge.rename(moved)
    bridge.write_text("export const nothing = 0;\n")
    hits, searched = look(install, store)
    assert found(hits, install)["buildPromptBlocks"] == [f"{PROVIDER}/prompt-blocks.js"]
    assert searched == all_js(install)


def test_a_reinstall_of_the_same_release_is_found_without_a_walk(install, store, tmp_path):
    reinstalled = Install(tmp_path / "again", install.version, "npm")
    shutil.copytree(install.package_dir, reinstalled.package_dir)
    look(install, store)
    walked: dict = {}
    hits, searched = look(reinstalled, store, walked=walked)
    assert searched == 2 and found(hits, reinstalled)["buildPromptBlocks"] == [BRIDGE]
    assert walked[reinstalled.package_dir]["stamp"] == package_stamp(reinstalled.package_dir)
    assert look(reinstalled, store)[1] == 2  # (with no walk of this run to fill in, too)


def test_status_looks_in_the_known_folders_first_and_remembers_nothing(install, store, tmp_path):
    hits, searched = look(install, store, quick=True)
    builtin = install.package_dir / "dist/core/extensions/builtin"
    assert found(hits, install)["buildPromptBlocks"] == [BRIDGE]
    assert searched == len(locate.js_files(builtin)) < all_js(install)
    reinstalled = Install(tmp_path / "again", install.version, "npm")
    shutil.copytree(install.package_dir, reinstalled.package_dir)
    assert look(reinstalled, store)[1] == all_js(reinstalled)  # (no walk was remembered: it walks)


def test_status_trusts_one_definition_in_the_known_folders_and_walks_when_they_hold_two(install, store):
    elsewhere = install.package_dir / "dist/core/other/prompt-bridge.js"  # (outside the known folders)
    elsewhere.parent.mkdir()
    shutil.copy(install.package_dir / BRIDGE, elsewhere)
    hits, searched = look(install, store, quick=True)
    assert found(hits, install)["buildPromptBlocks"] == [BRIDGE] and searched < all_js(install)
    elsewhere.unlink()
    shutil.copy(install.package_dir / BRIDGE, install.package_dir / PROVIDER / "prompt-bridge-2.js")
    hits, searched = look(install, store, quick=True)
    assert len(hits["buildPromptBlocks"]) == 2 and searched == all_js(install)


def test_a_patch_that_names_no_known_folders_walks_even_for_status(install, store):
    blocks = load("prompt-blocks", Path(__file__).resolve().parents[2] / "patches" / "prompt-blocks")
    hits, searched = where.locate_targets(blocks, store, install, install.package_dir / "dist", True)
    assert found(hits, install) == {"buildPromptBlocks": [BRIDGE]} and searched == all_js(install)


def test_status_walks_when_the_known_folders_lack_a_target_and_remembers_nothing_of_it(install, store, tmp_path):
    moved = install.package_dir / "dist/core/other/prompt-bridge.js"
    moved.parent.mkdir()
    (install.package_dir / BRIDGE).rename(moved)
    hits, searched = look(install, store, quick=True)
    assert found(hits, install)["buildPromptBlocks"] == ["dist/core/other/prompt-bridge.js"]
    assert searched == all_js(install)
    reinstalled = Install(tmp_path / "again", install.version, "npm")
    shutil.copytree(install.package_dir, reinstalled.package_dir)
    assert look(reinstalled, store)[1] == all_js(reinstalled)  # (status wrote nothing: this one walks too)
