"""The write lock's mechanics (io/store owns the lock file): filelock's acquire with an OS failure
as one line, a wait that says so and ends when its `stop` is set, and a lock its holding thread
takes again at once. Also the remembered results' short lock (`memo_lock`), on their folder."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from senpi_guard.errors import FatalError
from senpi_guard.io import config, flock
from senpi_guard.io.write import os_error

LOCK_TIMEOUT = 120.0
LOCK_TIMEOUT_RANGE = (0.0, 86400.0)  # (SENPI_GUARD_LOCK_TIMEOUT, seconds)
# the memos' lock is held for one read and one write: a longer wait is a stopped holder (and it
# stays under the watcher's re-proof thread's 1.5 s to end when stopped)
MEMO_WAIT_S = 1.0
STOP_POLL_S = 0.1  # how soon a wait sees its stop (the watcher's SIGTERM)
log = logging.getLogger("senpi-guard")


def acquire(lock, timeout: float, path: Path) -> None:
    """filelock's acquire, with an OS failure (an unwritable state dir, a full disk) as one line."""
    import filelock

    try:
        lock.acquire(timeout=timeout)
    except filelock.Timeout:  # (a TimeoutError, so an OSError too: the caller's to handle)
        raise
    except OSError as exc:
        raise os_error(
            exc,
            "take the lock",
            path,
            f"make {path.parent} writable (chmod u+w) or point XDG_STATE_HOME elsewhere, then retry",
        ) from exc


@contextmanager
def write_lock(lock_file: Path, lock_path: Callable[[], str], stop: threading.Event | None = None) -> Iterator[None]:
    """Hold the write lock `lock_file` (its file at `lock_path()`, checked by the store): one writer
    at a time across processes and threads; says when it waits, and stops waiting (FatalError) when
    `stop` is set. The thread that holds it already goes on at once (the records' own writes take it
    inside an apply's)."""
    held, key = flock.held_here(), str(lock_file)
    if held.get(key):
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    import filelock  # only the commands that write pay for it

    timeout = lock_timeout()
    lock = filelock.FileLock(lock_path())
    try:
        acquire(lock, 0, lock_file)
    except filelock.Timeout:
        log.warning("waiting for the write lock %s (another senpi-guard is writing)…", lock_file)
        _wait(lock, timeout, lock_file, stop)
    held[key] = 1
    try:
        yield
    finally:
        held.pop(key, None)
        lock.release()


def lock_timeout() -> float:
    """SENPI_GUARD_LOCK_TIMEOUT's seconds (LOCK_TIMEOUT unset), checked as every numeric setting is:
    one line on a value that is no number, nan (a wait that never ends) or out of range."""
    raw = os.environ.get("SENPI_GUARD_LOCK_TIMEOUT")
    if raw is None:
        return LOCK_TIMEOUT
    try:
        value: object = float(raw)
    except ValueError:
        value = raw
    problem = config.out_of_range("SENPI_GUARD_LOCK_TIMEOUT", value, *LOCK_TIMEOUT_RANGE)
    if problem:
        raise FatalError(
            f"{problem} (seconds to wait for another senpi-guard's write lock); fix it, or unset it "
            f"for {LOCK_TIMEOUT:g}; nothing was changed"
        )
    return float(raw)


def _wait(lock, timeout: float, lock_file: Path, stop: threading.Event | None) -> None:
    """Wait up to `timeout` for the lock, in short slices when a `stop` may end the wait."""
    import filelock

    deadline = time.monotonic() + timeout
    while True:
        if stop is not None and stop.is_set():
            raise FatalError(f"stopped while waiting for the write lock {lock_file}; nothing was written")
        left = max(0.0, deadline - time.monotonic())
        try:
            acquire(lock, left if stop is None else min(left, STOP_POLL_S), lock_file)
            return
        except filelock.Timeout as exc:
            if time.monotonic() >= deadline:
                raise FatalError(
                    f"another senpi-guard holds the write lock {lock_file} for "
                    f"over {timeout:g}s; wait for it or stop it, then retry"
                ) from exc


def memo_lock(folder: Path) -> AbstractContextManager[bool]:
    """Hold `folder`'s own lock (flock on the folder, no file made) while a remembered-results file
    in it is read, changed and written, so two processes or threads (a `verify` beside the watcher)
    do not lose each other's entries (io/flock.folder_lock). False, holding nothing, when the
    folder cannot be opened or locked within MEMO_WAIT_S (a holder stopped with ^Z, say; the process
    then does not wait for that folder again for a minute): remembering then only risks a lost entry."""
    return flock.folder_lock(folder, MEMO_WAIT_S)
