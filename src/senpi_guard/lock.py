"""The one write lock shared by apply, revert, demo and the watcher."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import filelock

from senpi_guard import paths
from senpi_guard.errors import FatalError

LOCK_TIMEOUT = 120.0


@contextmanager
def write_lock() -> Iterator[None]:
    """One writer at a time across apply, revert and the watcher."""
    path = paths.lock_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    timeout = float(os.environ.get("SENPI_GUARD_LOCK_TIMEOUT", LOCK_TIMEOUT))
    lock = filelock.FileLock(str(path))
    try:
        lock.acquire(timeout=timeout)
    except filelock.Timeout as exc:
        raise FatalError(f"another senpi-guard holds the write lock {path} for over "
                         f"{timeout:g}s; wait for it or stop it, then retry") from exc
    try:
        yield
    finally:
        lock.release()
