"""A hostile look at apply and revert of the dist layer through the Reconciler (the same calls before
and after the writes moved into layers/execute): something happens between the first target's write
and the second's (the watcher stops, the second file is edited, or swapped for a link to a file
outside the package), and the outcome must say `partial` with what was written, never write
through the link, never set a revert's hold unless every file is back, and keep a hand-edited
file's bytes in the data folder. The attack is made from inside the real store's backup or
drift-copy write, which both versions call between the two files' writes."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from senpi_guard.core.patch.classify import State
from senpi_guard.core.patch.definition import Patch, load_all
from senpi_guard.demo import sample
from senpi_guard.discover import Install
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.io.write import write_private
from senpi_guard.layers.dist import Reconciler

PROVIDER = "dist/core/extensions/builtin/claude-sdk-oauth"
BRIDGE = f"{PROVIDER}/prompt-bridge.js"
UPSTREAM = f"{PROVIDER}/prompt-directive-dedupe.js"
SECRET = b"root's secret\n"
XDG = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


def dedupe() -> Patch:
    (patch,) = [p for p in load_all() if p.name == "directive-dedupe"]
    return patch


def sample_install(pkg: Path) -> Install:
    sample.write_sample_package(pkg, 3, fillers=3)
    return Install(pkg, sample.SHAPE_VERSIONS[3], "npm")


@pytest.fixture(scope="module")
def replays(tmp_path_factory) -> bytes:
    """One dry run's stored replays: each test's apply trusts them instead of running node again."""
    root = tmp_path_factory.mktemp("proven")
    with pytest.MonkeyPatch.context() as env:
        for key in XDG:
            env.setenv(key, str(root / key.lower()))
        store = Store(root / "data", root / "state")
        dry = Reconciler(dedupe(), Config(), store).reconcile(sample_install(root / "senpi"), dry_run=True)
    assert dry.ok, dry.detail
    return (store.state_dir / "replays.json").read_bytes()


class Meddling(Store):
    """The real store; `meddle` runs once, right after the first backup or drift copy is saved (the
    first target file is then about to be written, the second is not yet)."""

    meddle: Callable[[], None] | None = None

    def _once(self) -> None:
        meddle, self.meddle = self.meddle, None
        if meddle is not None:
            meddle()

    def save_backup(self, *args, **kwargs) -> Path:
        saved = super().save_backup(*args, **kwargs)
        self._once()
        return saved

    def save_drifted(self, *args, **kwargs) -> Path:
        saved = super().save_drifted(*args, **kwargs)
        self._once()
        return saved


@pytest.fixture
def store(tmp_path: Path, replays: bytes) -> Meddling:
    store = Meddling(tmp_path / "data", tmp_path / "state")
    write_private(store.state_dir / "replays.json", replays)
    return store


@pytest.fixture
def install(tmp_path: Path) -> Install:
    return sample_install(tmp_path / "senpi")


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "secret"
    victim.parent.mkdir()
    victim.write_bytes(SECRET)
    return victim


def test_apply_writes_both_targets_upstream_first(install, store):
    """(the order the attacks below rely on: the second file is the bridge)"""
    done = Reconciler(dedupe(), Config(), store).reconcile(install)
    assert done.ok and done.after == State.PATCHED and done.changed == [UPSTREAM, BRIDGE], done.detail


def test_apply_stopped_by_the_watcher_mid_run_is_partial_exactly_when_a_file_was_written(install, store):
    bridge = install.package_dir / BRIDGE
    before = bridge.read_bytes()
    rec = Reconciler(dedupe(), Config(), store)
    store.meddle = rec.cancel.set
    done = rec.reconcile(install)
    assert not done.ok and bridge.read_bytes() == before, done.detail
    if done.changed:  # (the stop came between the two writes)
        assert done.after == State.PARTIAL and done.changed == [UPSTREAM] and UPSTREAM in done.detail
    else:  # (it came before the first write: nothing is half done)
        assert done.after == State.UNPATCHED


def test_apply_stopped_while_the_first_file_is_backed_up_writes_nothing(install, store):
    upstream = install.package_dir / UPSTREAM
    before = upstream.read_bytes()
    rec = Reconciler(dedupe(), Config(), store)
    store.meddle = rec.cancel.set
    done = rec.reconcile(install)
    assert done.changed == [] and done.after != State.PARTIAL and upstream.read_bytes() == before, done.detail


def test_revert_stopped_while_the_edited_file_is_kept_writes_nothing(install, store):
    rec, edited = applied_then_bridge_edited(install, store)
    store.meddle = rec.cancel.set
    done = rec.revert(install)
    assert done.changed == [] and (install.package_dir / BRIDGE).read_bytes() == edited, done.detail


def test_apply_whose_second_file_changed_meanwhile_is_partial_and_the_edit_stays(install, store):
    bridge = install.package_dir / BRIDGE
    edited = bridge.read_bytes() + b"// the user's own line\n"
    store.meddle = lambda: bridge.write_bytes(edited)
    done = Reconciler(dedupe(), Config(), store).reconcile(install)
    assert not done.ok and done.after == State.PARTIAL and done.changed == [UPSTREAM], done.detail
    assert bridge.read_bytes() == edited


def test_apply_whose_second_file_became_a_link_is_partial_and_never_writes_through_it(install, store, secret):
    bridge = install.package_dir / BRIDGE

    def swap() -> None:
        bridge.unlink()
        bridge.symlink_to(secret)

    store.meddle = swap
    done = Reconciler(dedupe(), Config(), store).reconcile(install)
    assert not done.ok and done.after == State.PARTIAL and done.changed == [UPSTREAM], done.detail
    assert secret.read_bytes() == SECRET and bridge.is_symlink()


def test_apply_whose_second_file_became_a_fifo_is_partial_without_blocking(install, store):
    bridge = install.package_dir / BRIDGE

    def swap() -> None:
        bridge.unlink()
        os.mkfifo(bridge)

    store.meddle = swap
    box: list = []
    worker = threading.Thread(target=lambda: box.append(Reconciler(dedupe(), Config(), store).reconcile(install)))
    worker.daemon = True
    worker.start()
    worker.join(timeout=30)
    assert box, "apply blocked on a FIFO"
    assert box[0].after == State.PARTIAL and box[0].changed == [UPSTREAM], box[0].detail


def applied_then_bridge_edited(install: Install, store: Store) -> tuple[Reconciler, bytes]:
    """An install apply patched, its bridge (the first file revert writes) then edited by hand."""
    rec = Reconciler(dedupe(), Config(), store)
    assert rec.reconcile(install).after == State.PATCHED
    bridge = install.package_dir / BRIDGE
    edited = bridge.read_bytes() + b"// edited by hand\n"
    bridge.write_bytes(edited)
    return rec, edited


def test_revert_keeps_a_hand_edited_file_and_holds_once_every_file_is_back(install, store):
    original = {rel: (install.package_dir / rel).read_bytes() for rel in (UPSTREAM, BRIDGE)}
    rec, edited = applied_then_bridge_edited(install, store)
    done = rec.revert(install)
    assert done.ok and set(done.changed) == {UPSTREAM, BRIDGE}, done.detail
    assert {rel: (install.package_dir / rel).read_bytes() for rel in original} == original
    assert store.hold(install.package_dir) is not None
    assert any(Path(p).is_file() and Path(p).read_bytes() == edited for p in done.backups)


def test_revert_stopped_by_the_watcher_sets_no_hold_and_keeps_the_edit(install, store):
    rec, edited = applied_then_bridge_edited(install, store)
    upstream = install.package_dir / UPSTREAM
    patched_upstream = upstream.read_bytes()
    store.meddle = rec.cancel.set
    done = rec.revert(install)
    assert not done.ok and store.hold(install.package_dir) is None, done.detail
    assert upstream.read_bytes() == patched_upstream  # (not reverted: the run stopped before it)
    assert UPSTREAM not in done.changed
    copies = list((store.data_dir).rglob("*.drifted"))
    assert any(p.read_bytes() == edited for p in copies)  # (the edit is recoverable from the data folder)


def test_revert_whose_second_file_became_a_link_sets_no_hold_and_never_writes_through(install, store, secret):
    rec, _ = applied_then_bridge_edited(install, store)
    upstream = install.package_dir / UPSTREAM

    def swap() -> None:
        upstream.unlink()
        upstream.symlink_to(secret)

    store.meddle = swap
    done = rec.revert(install)
    assert not done.ok and store.hold(install.package_dir) is None, done.detail
    assert secret.read_bytes() == SECRET and upstream.is_symlink()


def test_revert_refused_on_its_second_file_reverts_nothing_and_sets_no_hold(install, store):
    """As root: the second file revert writes was given to another user (its folder is root's), which
    the write would refuse: revert refuses it before its first write, as apply does, and says why."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    rec = Reconciler(dedupe(), Config(), store)
    assert rec.reconcile(install).after == State.PATCHED
    upstream = install.package_dir / UPSTREAM
    patched = upstream.read_bytes()
    os.chown(upstream, 65534, 65534)
    bridge = (install.package_dir / BRIDGE).read_bytes()
    done = rec.revert(install)
    assert not done.ok and done.changed == [] and "belongs to uid 65534" in done.detail, done.detail
    assert (install.package_dir / BRIDGE).read_bytes() == bridge and upstream.read_bytes() == patched
    assert store.hold(install.package_dir) is None


def test_revert_refused_on_its_second_file_is_partial_or_writes_nothing(install, store):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    rec = Reconciler(dedupe(), Config(), store)
    assert rec.reconcile(install).after == State.PATCHED
    os.chown(install.package_dir / UPSTREAM, 65534, 65534)
    done = rec.revert(install)
    assert done.after == State.PARTIAL if done.changed else done.after == State.PATCHED, done.detail
