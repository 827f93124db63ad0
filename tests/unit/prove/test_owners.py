"""prove/owners: what node could import for a replay (senpi's package and what its dependencies
resolve to), and whose it is."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from senpi_guard.errors import NeedsFix
from senpi_guard.prove import owners

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another uid needs root")


def pnpm_layout(root: Path) -> tuple[Path, Path]:
    """senpi in a pnpm store, its dependency beside it in the store, linked as pnpm links it."""
    store = root / "global" / "5" / ".pnpm"
    senpi = store / "@code-yeongyu+senpi@1" / "node_modules" / "@code-yeongyu" / "senpi"
    dep = store / "dep@1" / "node_modules" / "dep"
    for folder in (senpi / "dist", dep):
        folder.mkdir(parents=True)
    (senpi / "package.json").write_text(json.dumps({"name": "@code-yeongyu/senpi", "dependencies": {"dep": "1"}}))
    (senpi / "dist" / "cli.js").write_text("import 'dep';\n")
    (dep / "index.js").write_text("export default 1;\n")
    (store / "@code-yeongyu+senpi@1" / "node_modules" / "dep").symlink_to(dep)
    (store / "unrelated@1" / "node_modules" / "unrelated").mkdir(parents=True)
    return senpi, dep


def test_the_packages_are_senpi_and_what_its_dependencies_resolve_to(tmp_path):
    senpi, dep = pnpm_layout(tmp_path)
    assert owners.packages(senpi) == [senpi.resolve(), dep.resolve()]


@as_root
def test_a_dependency_beside_the_package_counts(tmp_path):
    senpi, dep = pnpm_layout(tmp_path)
    os.chown(dep / "index.js", 1234, 1234)
    found = owners.judge(senpi, None)
    assert set(found.owners) == {1234} and dep.resolve() / "index.js" in found.owners[1234]


@as_root
def test_an_unrelated_neighbour_and_a_link_out_are_not_walked(tmp_path):
    senpi, _ = pnpm_layout(tmp_path)
    neighbour = tmp_path / "global" / "5" / ".pnpm" / "unrelated@1" / "node_modules" / "unrelated"
    (neighbour / "index.js").write_text("")
    os.chown(neighbour / "index.js", 1234, 1234)
    (senpi / "evil").symlink_to("/")
    assert owners.judge(senpi, None).owners == {}


def test_anyones_files_and_folders(tmp_path):
    senpi, dep = pnpm_layout(tmp_path)
    assert owners.judge(senpi, None).anyones is None
    (dep / "index.js").chmod(0o666)
    assert owners.judge(senpi, None).anyones == dep.resolve() / "index.js"
    (dep / "index.js").chmod(0o644)
    (senpi / "dist").chmod(0o777)  # (no sticky bit: anyone may replace cli.js)
    assert owners.judge(senpi, None).anyones == senpi.resolve() / "dist"
    (senpi / "dist").chmod(0o1777)
    assert owners.judge(senpi, None).anyones is None


def test_what_nobody_cannot_read():
    with tempfile.TemporaryDirectory() as folder:
        _nobody_reads(Path(folder))


def _nobody_reads(folder: Path) -> None:
    folder.chmod(0o755)
    senpi, dep = pnpm_layout(folder)
    assert owners.judge(senpi, None).unreadable is None
    (dep / "index.js").chmod(0o600)
    assert owners.judge(senpi, None).unreadable == dep.resolve() / "index.js"


@as_root
def test_a_refusal_over_code_anyone_may_change_carries_its_fix_as_data():
    """Root's install nobody can read a file of, with a file others may write: refused, the fix
    (`chmod go-w` of that file) a field of the refusal, the same as its message names."""
    with tempfile.TemporaryDirectory() as folder:
        Path(folder).chmod(0o755)
        senpi, dep = pnpm_layout(Path(folder))
        (dep / "index.js").chmod(0o600)
        (senpi / "dist" / "cli.js").chmod(0o664)
        with pytest.raises(NeedsFix) as refused:
            owners.decide(senpi, None)
        assert refused.value.fix == f"chmod go-w {owners.judge(senpi, None).anyones}"
        assert f"({refused.value.fix})" in str(refused.value)
