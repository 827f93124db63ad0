"""A short lock on a folder itself (flock on the folder: no lock file is made, none is left), for
files in it that are read, changed and written whole by runs that may meet. A leaf: io/made's record
takes it as well as the memos (io/locks.memo_lock)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

POLL_S = 0.005
GIVE_UP_S = 60.0  # after a wait in vain, how long this process does not wait for that folder again
_held = threading.local()  # the locks this thread holds (these folders, io/locks' write lock), and how deep
_given_up: dict[str, float] = {}  # the folders whose lock this process waited for in vain, and when


@contextlib.contextmanager
def folder_lock(folder: Path, wait_s: float) -> Iterator[bool]:
    """Hold `folder`'s lock for the block: re-entrant in its thread, waited for at most `wait_s` (a
    folder waited for in vain is not waited for again for GIVE_UP_S: a run that remembers ten
    things waits once; the watcher, which runs for days, takes the lock again later), skipped where the
    folder refuses it (NFS emulates flock as a write lock: EBADF on a folder opened to read). Yields
    whether it is held."""
    depth, key = held_here(), f"folder:{folder}"
    if depth.get(key):
        depth[key] += 1
        try:
            yield True
        finally:
            depth[key] -= 1
        return
    recently = key in _given_up and time.monotonic() - _given_up[key] < GIVE_UP_S
    fd = -1 if recently else _open(folder)
    if fd >= 0 and not flock_within(fd, wait_s):
        os.close(fd)
        fd = -1
        _given_up[key] = time.monotonic()
    if fd < 0:
        yield False
        return
    depth[key] = 1
    try:
        yield True
    finally:
        depth.pop(key, None)
        os.close(fd)  # (closing the only descriptor lets the flock go)


def held_here() -> dict[str, int]:
    """The locks this thread holds, by key, and how deep (a holder takes its lock again at once)."""
    return _held.__dict__.setdefault("depth", {})


def _open(folder: Path) -> int:
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return -1


def flock_within(fd: int, seconds: float, refused: bool = False) -> bool:
    """An exclusive flock on `fd`, tried without blocking until `seconds` have passed (False:
    another holds it); `refused` is the answer where the file system refuses flock (NFS on a folder)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)
        except OSError:
            return refused


def held_elsewhere(path: Path) -> bool:
    """Whether an open file of another holder has `path` locked (flock, exclusive): probed with a
    shared lock, taken and given back at once; a file that is not there is held by no one."""
    try:  # (O_NONBLOCK: a FIFO put there must not hang the caller; only a plain file is a lock)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # (a file system without flock: no one can hold it either)
        return False
    finally:
        os.close(fd)  # (closing the descriptor gives a lock it took back)
    return False
