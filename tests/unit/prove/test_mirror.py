"""prove/mirror.py directly, on a sample senpi package in tmp_path (no node run): the replay folder
is the package made of links to its real entries, except the folders on the way to each module,
which are real and hold the module's candidate (or its original, when there is none) and its
original beside it; the harness, the checks with the scripts beside them and the extras are there
too; the real package is never written; the folder goes when the block ends; a package that is no
longer the folder that was opened is refused before anything runs in it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from senpi_guard.demo import sample
from senpi_guard.errors import FatalError
from senpi_guard.io import runas
from senpi_guard.prove import sandbox
from senpi_guard.prove.mirror import ORIGINAL_SUFFIX, mirror
from senpi_guard.prove.sandbox import Sandbox
from senpi_guard.prove.verify import ModulePair

PROVIDER = Path("dist/core/extensions/builtin/claude-sdk-oauth")
BRIDGE = PROVIDER / "prompt-bridge.js"
TOOLS = PROVIDER / "tools.js"


def digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


@pytest.fixture
def pkg(tmp_path) -> Path:
    package = tmp_path / "senpi"
    sample.write_sample_package(package, 2, fillers=3)
    return package


@pytest.fixture
def checks(tmp_path) -> Path:
    folder = tmp_path / "patch"
    folder.mkdir()
    (folder / "helper.mjs").write_text("export const helper = 1;\n")
    (folder / "checks.mjs").write_text('import { helper } from "./helper.mjs";\nexport const checks = [];\n')
    (folder / "notes.txt").write_text("not a script")
    return folder / "checks.mjs"


def pair(pkg: Path, rel: Path, candidate: bytes | None = b"// the candidate\n") -> ModulePair:
    return ModulePair(pkg / rel, "f", (pkg / rel).read_bytes(), candidate)


def test_the_modules_are_placed_in_real_folders_and_every_other_entry_is_a_link(tmp_path, pkg, checks):
    before = digest(pkg)
    modules = [pair(pkg, BRIDGE)]
    with mirror(pkg, modules, checks, Sandbox(tmp_path / "verify"), {"extension.mjs": b"// extra"}) as place:
        root = place.root / "pkg"
        original, candidate = place.placed[pkg / BRIDGE]
        assert candidate == root / BRIDGE == place.in_package(pkg, pkg / BRIDGE)
        assert original == root / PROVIDER / f"prompt-bridge{ORIGINAL_SUFFIX}"
        assert candidate.read_bytes() == b"// the candidate\n" and not candidate.is_symlink()
        assert original.read_bytes() == modules[0].original
        for folder in (root, root / "dist", *[root / p for p in PROVIDER.parents if str(p) != "."], root / PROVIDER):
            assert folder.is_dir() and not folder.is_symlink(), folder
        others = [Path("package.json"), TOOLS, *[p.relative_to(pkg) for p in (pkg / "dist").iterdir()]]
        for rel in [r for r in others if r not in (Path("dist/core"),)]:
            assert (root / rel).is_symlink() and (root / rel).resolve() == (pkg / rel).resolve(), rel
        assert (root / TOOLS).read_bytes() == (pkg / TOOLS).read_bytes()
        assert (place.root / "harness.mjs").is_file() and place.harness == place.root / "harness.mjs"
        assert place.checks.read_bytes() == checks.read_bytes()
        assert (place.root / "helper.mjs").read_bytes() == (checks.parent / "helper.mjs").read_bytes()
        assert not (place.root / "notes.txt").exists()
        assert place.extras == {"extension.mjs": place.root / "extension.mjs"}
        assert place.extras["extension.mjs"].read_bytes() == b"// extra"
        assert place.popen_kwargs()["env"]["TMPDIR"] == str(place.root / sandbox.NODE_TMP)
    assert not place.root.exists()
    assert digest(pkg) == before


def test_a_module_without_a_candidate_is_placed_as_its_original(tmp_path, pkg, checks):
    modules = [pair(pkg, BRIDGE, candidate=None), pair(pkg, TOOLS, candidate=b"// new tools\n")]
    with mirror(pkg, modules, checks, Sandbox(tmp_path / "verify")) as place:
        root = place.root / "pkg"
        assert (root / BRIDGE).read_bytes() == (pkg / BRIDGE).read_bytes() and not (root / BRIDGE).is_symlink()
        assert (root / TOOLS).read_bytes() == b"// new tools\n" and not (root / TOOLS).is_symlink()
        assert (root / PROVIDER / f"tools{ORIGINAL_SUFFIX}").read_bytes() == (pkg / TOOLS).read_bytes()
        assert set(place.placed) == {pkg / BRIDGE, pkg / TOOLS} and place.extras == {}


def test_a_package_reached_through_a_link_is_mirrored_from_its_real_folder(tmp_path, pkg, checks):
    """(pnpm's node_modules/@code-yeongyu/senpi is a link into its store)"""
    linked = tmp_path / "node_modules" / "senpi"
    linked.parent.mkdir()
    linked.symlink_to(pkg)
    with mirror(linked, [pair(linked, BRIDGE)], checks, Sandbox(tmp_path / "verify")) as place:
        root = place.root / "pkg"
        assert os.readlink(root / "package.json") == str(pkg / "package.json")
        assert place.in_package(linked, linked / TOOLS) == root / TOOLS
        assert (root / BRIDGE).read_bytes() == b"// the candidate\n"
    assert (pkg / BRIDGE).read_bytes() != b"// the candidate\n"


def test_a_package_that_is_not_the_folder_opened_any_more_is_refused(tmp_path, pkg, checks):
    sandbox.pin(pkg, os.stat(tmp_path))  # (as if what stands at pkg now is not what was opened)
    try:
        with (
            pytest.raises(FatalError, match=r"is not the folder that was opened any more; retry"),
            mirror(pkg, [pair(pkg, BRIDGE)], checks, Sandbox(tmp_path / "verify")),
        ):
            pass
    finally:
        sandbox.PINNED.pop(pkg)
    assert [p for p in (tmp_path / "verify").iterdir() if p.name.startswith(sandbox.PREFIX)] == []


@pytest.mark.skipif(os.geteuid() != 0, reason="a mirror made by another user needs root")
def test_as_root_for_another_user_the_mirror_is_made_by_them(tmp_path, pkg, checks):
    account = runas.nobody()
    with mirror(pkg, [pair(pkg, BRIDGE)], checks, Sandbox(tmp_path / "verify", account)) as place:
        assert place.root.parent == sandbox.shared_temp()
        made = [place.root, place.root / "pkg" / BRIDGE, place.root / "pkg" / PROVIDER, place.checks]
        assert {(p.stat().st_uid, p.stat().st_gid) for p in made} == {tuple(account)}
        assert (place.root / "pkg" / BRIDGE).read_bytes() == b"// the candidate\n"
    assert not place.root.exists()
