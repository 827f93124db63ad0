"""prove/owners: what node could import for a replay, and whose it is (root's rule: one owner)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from senpi_guard.errors import FatalError
from senpi_guard.prove import owners


def pnpm_layout(root: Path) -> tuple[Path, Path]:
    """senpi in a pnpm store, its dependency beside it in the store, linked as pnpm links it."""
    store = root / "global" / "5" / ".pnpm"
    senpi = store / "@code-yeongyu+senpi@1" / "node_modules" / "@code-yeongyu" / "senpi"
    dep = store / "dep@1" / "node_modules" / "dep"
    for folder in (senpi / "dist", dep):
        folder.mkdir(parents=True)
    (senpi / "dist" / "cli.js").write_text("import 'dep';\n")
    (dep / "index.js").write_text("export default 1;\n")
    (store / "@code-yeongyu+senpi@1" / "node_modules" / "dep").symlink_to(dep)
    return senpi, dep


def test_the_roots_are_where_node_resolves_from(tmp_path):
    senpi, _ = pnpm_layout(tmp_path)
    roots = owners.resolution_roots(senpi)
    assert senpi.resolve() in roots and (tmp_path / "global" / "5" / ".pnpm").resolve() in roots
    assert (senpi.parents[1]).resolve() in roots  # the node_modules senpi sits in (its deps' links)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another uid needs root")
def test_a_dependency_beside_the_package_counts(tmp_path):
    senpi, dep = pnpm_layout(tmp_path)
    os.chown(dep / "index.js", 1234, 1234)
    found = owners.owners(senpi, None)
    assert set(found) == {1234} and dep.resolve() / "index.js" in found[1234][1]


def test_a_link_out_of_the_resolution_roots_is_refused_not_walked(tmp_path):
    senpi, _ = pnpm_layout(tmp_path)
    (senpi / "node_modules").mkdir()
    (senpi / "node_modules" / "evil").symlink_to("/")
    with pytest.raises(FatalError, match="links out of the package"):
        owners.owners(senpi, None)
