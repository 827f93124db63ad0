"""The machine's mount table, held still for the tests that need it.

A remembered answer (io/answers) is replayed only while /proc/self/mountinfo is what it was when
the answer was kept: a remount can change what access() says of a path without changing the path.
A tmpfs mounted in the host's namespace by one test (a full disk: tests/e2e/test_hostile.py) is
therefore a change to every other test that asserts a replay, in another xdist worker or in
another pytest run on this machine. So those tests share one lock, and a test that mounts holds
it alone: `steady_mount_table` (shared) and `mount_table_changes` (exclusive). The lock is a file in
the system's temp folder, because the mount table is the machine's, not the run's."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

LOCK = Path(tempfile.gettempdir()) / "senpi-guard-tests.mount-table.lock"


def _opened() -> int | None:
    """The lock file, opened without O_CREAT when it is there (another user's file in a sticky /tmp
    refuses O_CREAT under fs.protected_regular); None where it cannot be opened at all."""
    for flags in (0, os.O_CREAT):
        try:
            return os.open(LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | flags, 0o644)
        except FileNotFoundError:
            continue
        except OSError:
            return None
    return None


def _held(mode: int) -> Iterator[None]:
    """The lock in `mode` for the test's length (unlocked, as before, where it cannot be opened:
    never a test skipped for it)."""
    fd = _opened()
    if fd is None:
        yield
        return
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)


@pytest.fixture
def steady_mount_table() -> Iterator[None]:
    """No test mounts or unmounts a file system in this namespace while this one runs."""
    yield from _held(fcntl.LOCK_SH)


@pytest.fixture
def mount_table_changes() -> Iterator[None]:
    """This test mounts in the host's namespace: no test that needs a steady table runs meanwhile."""
    yield from _held(fcntl.LOCK_EX)
