"""What the layers' unit tests share: the sample package's target files, senpi-guard's own patch and
the test patches (tests/patches/), and a sample install written in place."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import tree_digest

from senpi_guard.core.patch.definition import Patch, load, load_all
from senpi_guard.demo import sample
from senpi_guard.discover import Install
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.io.write import write_private
from senpi_guard.layers.dist import Reconciler
from senpi_guard.layers.findings import Outcome

PROVIDER = "dist/core/extensions/builtin/claude-sdk-oauth"
BRIDGE = f"{PROVIDER}/prompt-bridge.js"
UPSTREAM = f"{PROVIDER}/prompt-directive-dedupe.js"
TEST_PATCHES = Path(__file__).resolve().parent / "patches"
XDG = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


def dedupe() -> Patch:
    (patch,) = [p for p in load_all() if p.name == "directive-dedupe"]
    return patch


def extra_patch(name: str) -> Patch:
    """One of the test patches (they share files with each other and with directive-dedupe)."""
    return load(name, TEST_PATCHES / name)


def sample_install(pkg: Path, bridge_source: str | None = None) -> Install:
    """A sample senpi 2026.8.5 (shape 3: senpi's own dedupe is there too) written at `pkg`."""
    sample.write_sample_package(pkg, 3, fillers=3, bridge_source=bridge_source)
    return Install(pkg, sample.SHAPE_VERSIONS[3], "npm")


def bare_install(folder: Path) -> Install:
    """An install with an empty dist/ at `folder`/senpi (the executor's tests write its files)."""
    package = folder / "senpi"
    (package / "dist").mkdir(parents=True)
    return Install(package, "2026.8.22-2", "npm")


def dry_run_once(root: Path) -> tuple[Outcome, dict[str, str], dict[str, str], bytes]:
    """A dry run of apply on a sample package under `root` (its own HOME folders): the outcome, the
    package's files before and after it, and the replays it stored. A test file runs it once and
    starts each test's store with those replays (`store_with`): its apply trusts the passing replay
    rather than running the same bytes through node again, as senpi-guard does between runs."""
    with pytest.MonkeyPatch.context() as env:
        for key in XDG:
            env.setenv(key, str(root / key.lower()))
        store = Store(root / "data", root / "state")
        install = sample_install(root / "senpi")
        before = tree_digest(install.package_dir)
        dry = Reconciler(dedupe(), Config(), store).reconcile(install, dry_run=True)
    return dry, before, tree_digest(install.package_dir), (store.state_dir / "replays.json").read_bytes()


def store_with(folder: Path, replays: bytes) -> Store:
    """senpi-guard's store in `folder`, holding the replays a dry run stored (`dry_run_once`)."""
    store = Store(folder / "data", folder / "state")
    write_private(store.state_dir / "replays.json", replays)
    return store
