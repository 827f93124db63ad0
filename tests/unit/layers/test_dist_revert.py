"""revert of the dist layer in-process, on a sample package apply patched: every file gets its
original bytes back (from its backup, else with the edit taken out) and the install is held; a file
edited by hand is kept aside first; a backup that does not fit, or an edit that cannot be taken out
without one, is refused in one line with nothing changed; `revert --patch` rebuilds a shared file
without that patch alone; and `plan` says each of these before anything is done."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import hand_patched, tree_digest
from layerkit import BRIDGE, TEST_PATCHES, UPSTREAM, dedupe, dry_run_once, sample_install, store_with

from senpi_guard.core.patch import apply
from senpi_guard.core.patch.classify import State
from senpi_guard.core.patch.definition import load
from senpi_guard.demo import sample
from senpi_guard.discover import Install
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import dist_revert
from senpi_guard.layers.change import Hold, Want
from senpi_guard.layers.dist import Reconciler
from senpi_guard.layers.house import House


@pytest.fixture(scope="module")
def proven(tmp_path_factory) -> bytes:
    dry, *_, replays = dry_run_once(tmp_path_factory.mktemp("proven"))
    assert dry.ok, dry.detail
    return replays


@pytest.fixture
def store(tmp_path: Path, proven: bytes) -> Store:
    return store_with(tmp_path, proven)


def applied(install: Install, store: Store) -> Reconciler:
    rec = Reconciler(dedupe(), Config(), store)
    done = rec.reconcile(install)
    assert done.ok and done.after == State.PATCHED, done.detail
    return rec


def edit_by_hand(path: Path, old: bytes = b"// (code is full of", new: bytes = b"// (edited: code is full of") -> bytes:
    """An edit of the file as a user would make it (by default, inside our payload)."""
    data = path.read_bytes()
    assert old in data
    edited = data.replace(old, new, 1)
    path.write_bytes(edited)
    return edited


def test_revert_gives_every_file_its_original_bytes_and_holds_the_install(install, store):
    pkg = install.package_dir
    original = tree_digest(pkg)
    rec = applied(install, store)
    assert tree_digest(pkg) != original
    done = rec.revert(install)
    assert done.ok and done.after == State.HELD and tree_digest(pkg) == original
    assert sorted(done.changed) == [BRIDGE, UPSTREAM]
    assert done.detail.count("restored from the backup") == 2
    assert store.hold(pkg)["reason"] == dist_revert.REVERTED
    watched = rec.reconcile(install)  # (the watcher's pass: a held install is left alone)
    assert watched.ok and watched.before == State.HELD and not watched.changed and tree_digest(pkg) == original


def test_a_file_edited_by_hand_is_kept_aside_before_it_is_reverted(install, store):
    rec = applied(install, store)
    bridge = install.package_dir / BRIDGE
    edited = edit_by_hand(bridge)
    done = rec.revert(install)
    assert done.ok and bridge.read_bytes() == sample.prompt_bridge_source(3).encode()
    (kept,) = [line for line in done.detail.split("; ") if line.startswith("the hand-edited file was kept at ")]
    copy = Path(kept.removeprefix("the hand-edited file was kept at "))
    assert copy.read_bytes() == edited and str(copy) in done.backups


def test_without_a_backup_revert_takes_the_edit_out(install, store):
    pkg = install.package_dir
    original = tree_digest(pkg)
    rec = applied(install, store)
    shutil.rmtree(store.backups_dir)
    done = rec.revert(install)
    assert done.ok and tree_digest(pkg) == original and done.backups == []
    assert done.detail.count("removed the edit (sha256 matches the original); no backup was found") == 2
    assert store.hold(pkg) is not None


def test_from_edit_takes_the_edit_out_though_a_backup_exists(install, store):
    hand_fixed = hand_patched(sample.prompt_bridge_source(3))
    install = sample_install(install.package_dir, bridge_source=hand_fixed)
    rec = applied(install, store)
    done = rec.revert(install, from_edit=True)
    # (the backup holds the hand fix apply replaced; the edit taken out gives senpi as shipped)
    bridge = (install.package_dir / BRIDGE).read_bytes()
    assert done.ok and bridge == sample.prompt_bridge_source(3).encode()
    assert "removed the edit (sha256 matches the original)" in done.detail and "no backup" not in done.detail


def test_restoring_a_hand_fixed_backup_says_what_that_costs_and_the_way_to_senpi_as_shipped(install, store):
    hand_fixed = hand_patched(sample.prompt_bridge_source(3))
    install = sample_install(install.package_dir, bridge_source=hand_fixed)
    rec = applied(install, store)
    done = rec.revert(install)
    assert done.ok and (install.package_dir / BRIDGE).read_text() == hand_fixed
    assert "which holds the hand-applied dedupeRepeatedDirectiveBlocks that was there before apply" in done.detail
    assert "beside upstream's own dedupe (2026.8.4-2+) that hand fix drops every directive block" in done.detail
    assert "`senpi-guard apply`, then `senpi-guard revert --from-edit`" in done.detail


def test_a_backup_that_does_not_fit_is_refused_in_one_line_and_nothing_is_changed(install, store):
    pkg = install.package_dir
    rec = applied(install, store)
    patched = tree_digest(pkg)
    header = apply.read_file_header((pkg / BRIDGE).read_bytes())
    shutil.rmtree(store.backups_dir)
    wrong = store.save_backup(pkg, install.version, BRIDGE, b"export const other = 1;\n", header.original_sha256)
    done = rec.revert(install)
    assert not done.ok and done.changed == [] and "\n" not in done.detail
    assert done.detail.startswith(f"the backup {wrong} does not fit {BRIDGE}")
    assert "nothing was changed" in done.detail
    assert tree_digest(pkg) == patched and store.hold(pkg) is None
    (bridge,) = [c for c in dist_revert.plan(rec, install) if c.where == pkg / BRIDGE]
    assert not bridge.executable and "does not fit" in bridge.detail  # (said before: uninstall refuses)


def test_an_edit_that_cannot_be_taken_out_and_has_no_backup_is_refused(install, store):
    pkg = install.package_dir
    rec = applied(install, store)
    edit_by_hand(pkg / BRIDGE, b"export function buildPromptBlocks(", b"// edited\nexport function buildPromptBlocks(")
    shutil.rmtree(store.backups_dir)
    edited = tree_digest(pkg)
    done = rec.revert(install)
    assert not done.ok and done.changed == [] and f"{BRIDGE} cannot be reverted" in done.detail
    assert "no backup exists; reinstall senpi" in done.detail
    assert tree_digest(pkg) == edited and store.hold(pkg) is None


def test_an_edit_of_senpis_own_code_is_undone_from_the_backup(install, store):
    pkg = install.package_dir
    original = tree_digest(pkg)
    rec = applied(install, store)
    edit_by_hand(pkg / BRIDGE, b"export function buildPromptBlocks(", b"// edited\nexport function buildPromptBlocks(")
    done = rec.revert(install)
    assert done.ok and tree_digest(pkg) == original and "prompt-bridge.js: restored from the backup" in done.detail
    assert "the hand-edited file was kept at " in done.detail


def test_revert_of_the_one_patch_on_its_files_alone_gives_their_originals(install, store):
    pkg = install.package_dir
    original = tree_digest(pkg)
    done = applied(install, store).revert(install, alone=True)
    assert done.ok and tree_digest(pkg) == original and done.detail.count("restored from the backup") == 2


def test_an_install_never_patched_is_only_held(install, store):
    pkg = install.package_dir
    original = tree_digest(pkg)
    done = Reconciler(dedupe(), Config(), store).revert(install)
    assert done.ok and done.changed == [] and tree_digest(pkg) == original
    assert done.detail == "not patched by senpi-guard; nothing to revert" and store.hold(pkg) is not None


def test_an_unsupported_install_is_left_as_it_is_and_not_held(install, store):
    unsupported = Install(install.package_dir, install.version, "npm", unsupported="a version senpi-guard skips")
    rec = Reconciler(dedupe(), Config(), store)
    done = rec.revert(unsupported)
    assert not done.ok and done.detail == "a version senpi-guard skips" and store.hold(install.package_dir) is None
    (only,) = dist_revert.plan(rec, unsupported)
    assert only.where == install.package_dir and only.executable and not only.writes


def test_the_plan_names_each_patched_file_written_then_held_a_hand_edited_one_kept_aside(install, store):
    rec = Reconciler(dedupe(), Config(), store)
    assert dist_revert.plan(rec, install) == []  # (nothing of ours on it)
    rec = applied(install, store)
    edit_by_hand(install.package_dir / BRIDGE)
    changes = {c.where.relative_to(install.package_dir).as_posix(): c for c in dist_revert.plan(rec, install)}
    assert set(changes) == {BRIDGE, UPSTREAM}
    assert all(c.want == Want.WRITE and c.hold == Hold.SET and c.executable for c in changes.values())
    assert changes[BRIDGE].found == State.DRIFTED and changes[BRIDGE].keep_aside
    assert changes[UPSTREAM].found == State.PATCHED and not changes[UPSTREAM].keep_aside


def test_a_stop_asked_for_before_the_writes_writes_nothing_and_sets_no_hold(install, store):
    rec = applied(install, store)
    patched = tree_digest(install.package_dir)
    rec.cancel.set()
    done = rec.revert(install)
    assert not done.ok and done.changed == [] and done.detail and tree_digest(install.package_dir) == patched
    assert store.hold(install.package_dir) is None


def test_the_plan_refuses_a_file_in_a_folder_without_write_bits(install, store):
    rec = applied(install, store)
    folder = (install.package_dir / BRIDGE).parent
    folder.chmod(0o555)
    try:
        changes = dist_revert.plan(rec, install)
    finally:
        folder.chmod(0o755)
    assert changes and all(not c.executable for c in changes)
    assert all(f"{folder} has no write bits (mode 0555): chmod u+w {folder}, then retry" in c.detail for c in changes)


def shared(install: Install, store: Store) -> tuple[Reconciler, Reconciler, bytes]:
    """The sample patched as apply writes it with prompt-blocks beside directive-dedupe on the bridge
    (no replay: the bytes are written as composed); returns both patches' reconcilers and the bridge
    as directive-dedupe alone leaves it."""
    blocks = load("prompt-blocks", TEST_PATCHES / "prompt-blocks")
    house = House([dedupe(), blocks])
    rec, other = (Reconciler(p, Config(), store, house=house) for p in (house.by_name["directive-dedupe"], blocks))
    alone = {tf.rel: tf.wanted for tf in rec.inspect(install).files}
    for rel, data in alone.items():
        (install.package_dir / rel).write_bytes(data)
    (tf,) = other.inspect(install).files
    tf.path.write_bytes(tf.wanted)
    assert apply.read_file_header(tf.path.read_bytes()).names == ("directive-dedupe", "prompt-blocks")
    return rec, other, alone[BRIDGE]


def test_revert_of_one_patch_alone_rebuilds_the_shared_file_without_it(install, store):
    pkg = install.package_dir
    rec, other, dedupe_alone = shared(install, store)
    upstream = (pkg / UPSTREAM).read_bytes()
    done = other.revert(install, alone=True)
    assert done.ok and done.changed == [BRIDGE], done.detail
    assert (pkg / BRIDGE).read_bytes() == dedupe_alone and (pkg / UPSTREAM).read_bytes() == upstream
    assert "prompt-bridge.js: rebuilt from the original without prompt-blocks (directive-dedupe stay on it)" in (
        done.detail
    )
    again = other.revert(install, alone=True)  # (a file the patch is not on is left as it is)
    assert again.ok and again.changed == [] and (pkg / BRIDGE).read_bytes() == dedupe_alone
    assert rec.inspect(install, held=False).state == State.PATCHED
