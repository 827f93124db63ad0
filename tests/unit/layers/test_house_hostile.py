"""Two patches on one file (directive-dedupe and the test patch prompt-blocks, both on the bridge),
through the Reconciler: the other patch is proven on the composed bytes before a write, so applying
one never breaks the other, and handing one to senpi's own code (defer) leaves the other patched and
proven."""

from __future__ import annotations

from pathlib import Path

import pytest

from senpi_guard.core.patch import apply
from senpi_guard.core.patch.classify import State
from senpi_guard.core.patch.definition import Patch, load, load_all
from senpi_guard.demo import sample
from senpi_guard.discover import Install
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import house
from senpi_guard.layers.dist import Reconciler
from senpi_guard.layers.house import House

BRIDGE = "dist/core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js"
TEST_PATCHES = Path(__file__).resolve().parents[2] / "patches"
DEFER = Config().with_patch("directive-dedupe", upstream_dedupe="defer")


def dedupe() -> Patch:
    (patch,) = [p for p in load_all() if p.name == "directive-dedupe"]
    return patch


@pytest.fixture
def install(tmp_path: Path) -> Install:
    pkg = tmp_path / "senpi"
    sample.write_sample_package(pkg, 3, fillers=3)
    return Install(pkg, sample.SHAPE_VERSIONS[3], "npm")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "data", tmp_path / "state")


def reconcilers(store: Store, config: Config | None = None) -> tuple[Reconciler, Reconciler]:
    """(directive-dedupe's, prompt-blocks') reconcilers sharing one house."""
    shared, config = House([dedupe(), load("prompt-blocks", TEST_PATCHES / "prompt-blocks")]), config or Config()
    return (
        Reconciler(shared.by_name["directive-dedupe"], config, store, house=shared),
        Reconciler(shared.by_name["prompt-blocks"], config, store, house=shared),
    )


def names_on_bytes(data: bytes) -> set[str]:
    header = apply.read_file_header(data)
    return {e.name for e in header.entries} if header else set()


def names_on(path: Path) -> set[str]:
    return names_on_bytes(path.read_bytes())


def test_one_patch_applied_over_another_keeps_both_and_defer_leaves_the_other_proven(install, store):
    ours, blocks = reconcilers(store)
    bridge = install.package_dir / BRIDGE
    assert blocks.reconcile(install).after == State.PATCHED
    done = ours.reconcile(install)
    assert done.ok and done.after == State.PATCHED, done.detail
    assert names_on(bridge) == {"directive-dedupe", "prompt-blocks"}
    assert blocks.inspect(install).state == State.PATCHED
    deferring, blocks = reconcilers(store, DEFER)
    handed = deferring.reconcile(install)
    assert handed.ok and handed.after == State.UPSTREAM, handed.detail
    assert names_on(bridge) == {"prompt-blocks"} and blocks.inspect(install).state == State.PATCHED
    assert blocks.verify(install).ok


def test_the_other_patch_is_proven_on_the_bytes_about_to_be_written_not_the_disks(install, store):
    """house.pairs_on: prompt-blocks' module pair for the bridge is the composed bytes handed over
    (with the original recovered from them), while the disk still holds senpi's own file."""
    ours, blocks = reconcilers(store)
    bridge = install.package_dir / BRIDGE
    original = bridge.read_bytes()
    composed = house.compose(ours, install, bridge, original, house.compose(blocks, install, bridge, original, None))
    assert names_on_bytes(composed) == {"directive-dedupe", "prompt-blocks"}
    pairs = house.pairs_on(ours, blocks.patch, install, {bridge: composed})
    (pair,) = pairs.values()
    assert (pair.real_path, pair.candidate, pair.original) == (bridge, composed, original)
    assert bridge.read_bytes() == original  # (proven, never written)
    on_disk = house.pairs_on(ours, blocks.patch, install, {})
    assert [p.candidate for p in on_disk.values()] == [original]
