"""The caches two runs write side by side (a `status` in one terminal, the watcher's re-patch in
another): what one added is still there after the other saved."""

from __future__ import annotations

import threading

from senpi_guard import probes
from senpi_guard.io import memo


def test_two_runs_probing_with_different_environments_keep_both_answers(tmp_path, monkeypatch):
    cache = tmp_path / "probes.json"
    first, second = probes.ProbeCache.load(cache, 600), probes.ProbeCache.load(cache, 600)
    monkeypatch.setenv("HOME", "/home/a")
    first.put(["npm", "root", "-g"], None)
    key_a = probes.ProbeCache.key(["npm", "root", "-g"])
    monkeypatch.setenv("HOME", "/home/b")  # (the other run's environment: another key)
    second.put(["npm", "root", "-g"], None)
    first.save()
    second.save()
    kept = probes.ProbeCache.load(cache, 600)
    assert kept.get(["npm", "root", "-g"]) == (True, None)
    monkeypatch.setenv("HOME", "/home/a")
    assert probes.ProbeCache.key(["npm", "root", "-g"]) == key_a and kept.get(["npm", "root", "-g"]) == (True, None)


def test_memo_writers_side_by_side_lose_no_answer(tmp_path, monkeypatch):
    from senpi_guard.io import locks

    monkeypatch.setattr(locks, "MEMO_WAIT_S", 120.0)  # (the lock is under test, not its bound: a slow disk)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "cache" / "senpi-guard").mkdir(parents=True, mode=0o700)
    start = threading.Barrier(3)

    def writer(kind: str) -> None:
        start.wait()
        for n in range(12):
            memo.remember(kind, str(n), n)

    threads = [threading.Thread(target=writer, args=(kind,)) for kind in ("a", "b", "c")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [(k, n) for k in "abc" for n in range(12) if memo.recall(k, str(n)) != n] == []


def test_a_holder_that_never_lets_go_costs_one_short_wait_not_a_hang(tmp_path, monkeypatch):
    """A run stopped with ^Z while it holds the memos' lock: the next one waits MEMO_WAIT_S once,
    then remembers without it (what it risks is a lost entry, as before the lock), and does not
    wait for that folder again for a minute."""
    import fcntl
    import os
    import time

    from senpi_guard.io import flock, locks

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "senpi-guard"
    folder.mkdir(parents=True, mode=0o700)
    monkeypatch.setattr(locks, "MEMO_WAIT_S", 1.0)
    holder = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        started = time.monotonic()
        memo.remember("kind", "first", 1)
        first = time.monotonic() - started
        started = time.monotonic()
        memo.remember("kind", "second", 2)
        second = time.monotonic() - started
        for given_up in flock._given_up:  # (a minute later: the watcher runs for days)
            flock._given_up[given_up] -= flock.GIVE_UP_S
        started = time.monotonic()
        memo.remember("kind", "third", 3)
        third = time.monotonic() - started
    finally:
        os.close(holder)
    assert 1.0 <= first < 30 and second < 1.0 and 1.0 <= third < 30, (first, second, third)
    assert [memo.recall("kind", k) for k in ("first", "second", "third")] == [1, 2, 3]


def test_a_folder_that_refuses_the_lock_still_remembers(tmp_path, monkeypatch):
    """On NFS flock is a write lock, refused (EBADF) on a folder opened to read."""
    import errno

    from senpi_guard.io import flock

    tried = []

    def refused(fd, op):
        tried.append(op)
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(flock.fcntl, "flock", refused)
    cache = tmp_path / "probes.json"
    asked = probes.ProbeCache.load(cache, 600)
    asked.put(["npm", "root", "-g"], None)
    asked.save()
    assert tried  # (the lock was asked for, and refused)
    assert probes.ProbeCache.load(cache, 600).get(["npm", "root", "-g"]) == (True, None)


def test_folders_recorded_as_made_side_by_side_are_all_recorded(tmp_path, monkeypatch):
    """Two runs recording the folders each made (a status's cache folder, an apply's state folder
    beside it): uninstall removes what the record names, so an entry lost here is a folder left."""
    from senpi_guard.io import made

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "state" / "senpi-guard").mkdir(parents=True, mode=0o700)
    monkeypatch.setattr(made, "RECORD_WAIT_S", 120.0)  # (the lock is under test, not its bound)
    folders = {name: [tmp_path / "made" / f"{name}{n}" for n in range(12)] for name in "abc"}
    start = threading.Barrier(3)

    def recorder(name: str) -> None:
        start.wait()
        for folder in folders[name]:
            made.record([folder])

    threads = [threading.Thread(target=recorder, args=(name,)) for name in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [f for group in folders.values() for f in group if f not in made.recorded()] == []
