"""A hostile look at the one executor (layers/execute) and what dist_apply makes of a stopped run: a
link or a FIFO swapped in for a target or for the extension file after it was read, the watcher's stop
arriving between two writes, root writing another user's files, a revert's hold only once every file
is back, and a run stopped after a first write always reported as `partial`."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from pathlib import Path

import pytest
from layerkit import bare_install

from senpi_guard.core.states import State
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io import write
from senpi_guard.io.store import Store
from senpi_guard.layers.change import Change, Want
from senpi_guard.layers.dist_apply import stopped
from senpi_guard.layers.execute import Done, Ready, execute
from senpi_guard.layers.findings import Outcome
from senpi_guard.prove.verify import Cancelled

ORIGINAL = b"export function buildPromptBlocks() { return []; }\n"
PATCHED = b"// patched\n" + ORIGINAL
SECRET = b"root's secret\n"
NOBODY = 65534


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def install(tmp_path: Path) -> Install:
    return bare_install(tmp_path)


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "secret"
    victim.parent.mkdir()
    victim.write_bytes(SECRET)
    victim.chmod(0o600)
    return victim


def target(install: Install, name: str, data: bytes = ORIGINAL) -> tuple[Ready, Path]:
    """A headerless target file on disk, read as apply reads it, and the change writing PATCHED."""
    path = install.package_dir / "dist" / name
    path.write_bytes(data)
    snapshot = write.read(path, install.package_dir)
    change = Change("dist", "p", path, State.UNPATCHED, snapshot.sha256, want=Want.WRITE)
    return Ready(change, PATCHED, snapshot, install, f"dist/{name}", sha(ORIGINAL)), path


def swap_for_link(path: Path, to: Path) -> None:
    path.unlink()
    path.symlink_to(to)


def swap_for_fifo(path: Path, _to: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def run_bounded(ready: list[Ready], store: Store, cancel: threading.Event, **kw) -> Done:
    """execute() in a thread: a FIFO opened for reading would block forever (the test then fails)."""
    box: list[Done] = []
    worker = threading.Thread(target=lambda: box.append(execute(ready, store, cancel, **kw)), daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert box, "the executor blocked on what was swapped in"
    return box[0]


@pytest.mark.parametrize("swap", [swap_for_link, swap_for_fifo], ids=["symlink", "fifo"])
def test_a_second_target_swapped_after_it_was_read_is_refused_and_the_first_said_written(store, install, secret, swap):
    first, first_path = target(install, "a.js")
    second, second_path = target(install, "b.js")
    swap(second_path, secret)
    done = run_bounded([first, second], store, threading.Event())
    assert isinstance(done.error, FatalError) and done.changed == ["dist/a.js"]
    assert first_path.read_bytes() == PATCHED
    assert secret.read_bytes() == SECRET  # (never written through the link)
    assert second_path.is_symlink() or stat.S_ISFIFO(second_path.lstat().st_mode)  # (left as it is)
    assert set(done.final) == {str(first_path)}


def test_a_stopped_run_after_a_first_write_is_partial_and_names_what_was_written(store, install, secret):
    first, first_path = target(install, "a.js")
    second, second_path = target(install, "b.js")
    swap_for_link(second_path, secret)
    done = execute([first, second], store, threading.Event())
    start = Outcome(install, State.UNPATCHED, State.UNPATCHED, False, files=[first_path, second_path])
    outcome = stopped(start, done, "apply")
    assert outcome.after == State.PARTIAL and not outcome.ok
    assert outcome.changed == ["dist/a.js"] and "dist/a.js" in outcome.detail and "apply again" in outcome.detail
    assert outcome.final_shas == {str(first_path): sha(PATCHED)}
    (backup,) = set(outcome.backups)
    assert Path(backup).read_bytes() == ORIGINAL  # (revert can still give the first file back)


def test_a_run_stopped_before_any_write_is_raised_as_the_installs_error(store, install, secret):
    first, first_path = target(install, "a.js")
    swap_for_link(first_path, secret)
    done = execute([first], store, threading.Event())
    with pytest.raises(FatalError):
        stopped(Outcome(install, State.UNPATCHED, State.UNPATCHED, False), done, "apply")


class StopDuringBackup(Store):
    """The real store; the watcher's stop (`cancel`) arrives while the `at`-th file is backed up."""

    def __init__(self, data: Path, state: Path, cancel: threading.Event, at: int = 1) -> None:
        super().__init__(data, state)
        self.cancel, self.left = cancel, at

    def save_backup(self, *args, **kwargs):
        saved = super().save_backup(*args, **kwargs)
        self.left -= 1
        if self.left == 0:
            self.cancel.set()
        return saved


def test_the_watcher_stopped_between_two_writes_writes_no_more_and_sets_no_hold(tmp_path, install):
    cancel = threading.Event()
    store = StopDuringBackup(tmp_path / "data", tmp_path / "state", cancel, at=2)
    first, first_path = target(install, "a.js")
    second, second_path = target(install, "b.js")
    done = execute([first, second], store, cancel, hold=(install.package_dir, "reverted"))
    assert isinstance(done.error, Cancelled) and done.changed == ["dist/a.js"]
    assert first_path.read_bytes() == PATCHED and second_path.read_bytes() == ORIGINAL
    assert store.hold(install.package_dir) is None
    assert stopped(Outcome(install, State.PATCHED, State.PATCHED, False), done, "revert").after == State.PARTIAL


def test_a_revert_that_fails_on_its_second_file_sets_no_hold(store, install, secret):
    first, _ = target(install, "a.js")
    second, second_path = target(install, "b.js")
    swap_for_link(second_path, secret)
    done = execute([first, second], store, threading.Event(), hold=(install.package_dir, "reverted"))
    assert done.error is not None and store.hold(install.package_dir) is None


def test_root_rewriting_another_users_target_keeps_its_owner_and_mode(store, install):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    ready, path = target(install, "a.js")
    for mine in (install.package_dir, path.parent, path):
        os.chown(mine, NOBODY, NOBODY)
    path.chmod(0o640)
    ready = Ready(
        ready.change, ready.data, write.read(path, install.package_dir), install, ready.rel, ready.backup_under
    )
    done = execute([ready], store, threading.Event())
    assert done.error is None and path.read_bytes() == PATCHED
    st = path.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, NOBODY, 0o640)


def agent_ext(tmp_path: Path, owner: int | None = None) -> Path:
    path = tmp_path / "agent" / "extensions" / "senpi-guard.ts"
    path.parent.mkdir(parents=True)
    if owner is not None:
        for folder in (path.parent.parent, path.parent):
            os.chown(folder, owner, owner)
    return path


def ext_ready(path: Path, found: bytes | None, state: State, want: Want, keep_aside: bool = False) -> Ready:
    change = Change("extension", "p", path, state, None, want=want, keep_aside=keep_aside)
    return Ready(change, b"// ours, new\n" if want == Want.WRITE else None, found=found)


def test_root_writing_the_extension_into_another_users_agent_dir_gives_it_to_that_user(store, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    path = agent_ext(tmp_path, NOBODY)
    done = execute([ext_ready(path, None, State.ABSENT, Want.WRITE)], store, threading.Event())
    assert done.error is None and path.read_bytes() == b"// ours, new\n"
    assert (path.stat().st_uid, path.stat().st_gid) == (NOBODY, NOBODY)


def test_a_fifo_swapped_in_for_an_absent_extension_is_refused_without_blocking(store, tmp_path):
    path = agent_ext(tmp_path)
    os.mkfifo(path)
    done = run_bounded([ext_ready(path, None, State.ABSENT, Want.WRITE)], store, threading.Event())
    assert done.error is not None and stat.S_ISFIFO(path.lstat().st_mode)


def test_a_symlink_swapped_in_for_an_absent_extension_is_not_written_over(store, tmp_path, secret):
    path = agent_ext(tmp_path)
    path.symlink_to(secret)
    done = execute([ext_ready(path, None, State.ABSENT, Want.WRITE)], store, threading.Event())
    assert secret.read_bytes() == SECRET  # (never written through)
    assert done.error is not None and path.is_symlink()


@pytest.mark.parametrize("want", [Want.WRITE, Want.REMOVE])
def test_an_edited_extension_swapped_for_a_link_by_its_owner_is_neither_copied_nor_taken(store, tmp_path, secret, want):
    """As root in another user's agent dir: that user's link to root's secret, put where the edited
    extension was read, is never followed into the data folder."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    path = agent_ext(tmp_path, NOBODY)
    edited = b"// ours, edited\n"
    path.symlink_to(secret)
    os.lchown(path, NOBODY, NOBODY)
    done = execute([ext_ready(path, edited, State.MODIFIED, want, keep_aside=True)], store, threading.Event())
    assert done.error is not None and done.kept == []
    assert secret.read_bytes() == SECRET and path.is_symlink()
    kept = store.data_dir / "extension-kept"
    assert not kept.exists() or all(p.read_bytes() != SECRET for p in kept.iterdir())


def test_an_edited_extension_moved_aside_is_a_private_copy_in_the_data_folder(store, tmp_path):
    path = agent_ext(tmp_path)
    edited = b"// ours, edited by hand\n"
    path.write_bytes(edited)
    ready = ext_ready(path, edited, State.MODIFIED, Want.WRITE, keep_aside=True)
    done = execute([ready], store, threading.Event())
    assert done.error is None and path.read_bytes() == b"// ours, new\n"
    (kept,) = done.kept
    assert Path(kept).read_bytes() == edited and store.data_dir in Path(kept).parents
    assert stat.S_IMODE(Path(kept).stat().st_mode) & 0o077 == 0  # (private: it may be another user's edit)
