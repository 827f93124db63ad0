"""Store: backups, versioned records, the pid file and the write lock, on real files."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from senpi_guard.errors import FatalError
from senpi_guard.io.store import RECORDS_VERSION, Store, safe_version


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "data", tmp_path / "state")


def test_backup_round_trip_and_corruption(store, tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    blob = store.save_backup(pkg, "2026.8.1", "dist/a.js", b"original", "b" * 64)
    assert blob.is_file() and blob.parent == store.backup_dir(pkg, "2026.8.1")
    found = store.find_backup(pkg, "2026.8.1", "dist/a.js", "b" * 64)
    assert found.data == b"original"
    assert store.find_backup(pkg, "2026.8.1", "dist/a.js", "c" * 64) is None
    blob.write_bytes(b"planted")
    with pytest.raises(FatalError, match="corrupt"):
        store.find_backup(pkg, "2026.8.1", "dist/a.js", "b" * 64)


@pytest.mark.parametrize("version", [".", "..", "../../etc", "a/b", "x" * 100_000, ""])
def test_version_strings_stay_one_folder(store, tmp_path, version):
    name = safe_version(version)
    assert "/" not in name and name.strip(".") and len(name) <= 80
    folder = store.backup_dir(tmp_path, version)
    # resolved: a folder named ".." would pass a lexical parent check while pointing elsewhere
    assert folder.name == name and folder.resolve().parent.parent == store.backups_dir.resolve()


def test_records_carry_a_version_and_refuse_a_newer_one(store, tmp_path):
    store.update_install(tmp_path, last_verify={"ok": True})
    data = json.loads(store.records_file.read_text())
    assert data["version"] == RECORDS_VERSION
    assert store.install_record(tmp_path)["last_verify"] == {"ok": True}
    data["version"] = RECORDS_VERSION + 1
    store.records_file.write_text(json.dumps(data))
    with pytest.raises(FatalError, match="newer senpi-guard"):
        store.load_records()


def test_a_version_1_file_is_read(store, tmp_path):
    store.records_file.parent.mkdir(parents=True)
    store.records_file.write_text(json.dumps({"installs": {str(tmp_path.resolve()): {"x": 1}}}))
    assert store.install_record(tmp_path) == {"x": 1}


def test_pid_file_names_only_a_live_process_that_holds_the_watcher_lock(store):
    assert store.running_watcher() is None
    with store.watcher_lock():
        store.write_pid([])
        assert store.running_watcher()["pid"] == os.getpid()
    assert store.running_watcher() is None  # (alive, but no watcher: the lock given back, the file left)
    store.clear_pid()
    assert store.running_watcher() is None
    store.pid_file.write_text(json.dumps({"pid": 2**22 + 12345, "since": 0}))
    assert store.running_watcher() is None


def _hold(lock_dir: str, ready, release) -> None:
    from pathlib import Path

    with Store(Path(lock_dir), Path(lock_dir)).lock():
        ready.set()
        release.wait(30)


def test_the_lock_says_when_it_waits(store):
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(store.state_dir), ready, release))
    holder.start()
    said: list[str] = []

    class ReleaseWhenTold(logging.Handler):  # the holder lets go only once we said we wait
        def emit(self, record):
            said.append(record.getMessage())
            release.set()

    handler = ReleaseWhenTold(logging.WARNING)
    logging.getLogger("senpi-guard").addHandler(handler)
    try:
        assert ready.wait(30)
        with store.lock():
            pass
        assert len(said) == 1 and "waiting for the write lock" in said[0]
    finally:
        logging.getLogger("senpi-guard").removeHandler(handler)
        release.set()
        holder.join(10)


def test_a_group_friendly_umask_still_makes_private_folders(tmp_path):
    """Users with a private group often have umask 002: our folders must still be 0700, or the next
    run would refuse them as writable by others."""
    import stat as st

    old = os.umask(0o002)
    try:
        store = Store(tmp_path / "data", tmp_path / "state")
        store.save_backup(tmp_path, "1.0", "dist/a.js", b"x", "b" * 64)
        store.update_install(tmp_path, last_verify={"ok": True})
        with store.lock():
            pass
    finally:
        os.umask(old)
    for folder in (tmp_path / "data", store.backups_dir, store.backup_dir(tmp_path, "1.0"), tmp_path / "state"):
        assert st.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert store.find_backup(tmp_path, "1.0", "dist/a.js", "b" * 64).data == b"x"  # trusted again


def test_the_crash_log_falls_back_to_the_temp_dir_when_its_folder_cannot_be_made(tmp_path, monkeypatch):
    from senpi_guard.io import logs
    from senpi_guard.io import store as store_mod

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(logs, "log_dir", lambda: blocker / "log")  # (a file in the way)
    monkeypatch.setattr(logs.tempfile, "tempdir", str(tmp_path))
    try:
        raise ValueError("boom")
    except ValueError as exc:
        where = store_mod.crash_log(exc)
    assert where.startswith(str(tmp_path / "senpi-guard-crash-"))
    assert "ValueError: boom" in Path(where).read_text()


def test_the_records_are_changed_under_the_write_lock_which_its_holder_takes_again(store, tmp_path):
    """update_install reads, changes and writes the records: under the write lock, taken again
    at once by the thread that holds it (apply records inside its own lock) and waited for by any
    other (the watcher's thread, another process), whose change is then made on the records as
    the holder left them."""
    pkg = tmp_path / "pkg"
    waiting = threading.Event()

    class Waiting(logging.Handler):
        def emit(self, record):
            waiting.set()

    handler = Waiting(logging.WARNING)
    logging.getLogger("senpi-guard").addHandler(handler)
    try:
        with store.lock():
            store.update_install(pkg, patch="p", by_holder=1)  # (would wait on itself if not taken again)
            other = threading.Thread(target=store.update_install, args=(pkg,), kwargs={"patch": "p", "by_other": 2})
            other.start()
            assert waiting.wait(60), "the other thread did not wait for the lock"
            store.update_install(pkg, patch="p", by_holder=3)
            assert "by_other" not in store.install_record(pkg, patch="p")
        other.join(60)
    finally:
        logging.getLogger("senpi-guard").removeHandler(handler)
    assert store.install_record(pkg, patch="p") == {"by_holder": 3, "by_other": 2}
