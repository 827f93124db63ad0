"""The machine's mount table, held still for the tests that need it.

A remembered answer (io/answers) is replayed only while /proc/self/mountinfo is what it was when
the answer was kept: a remount can change what access() says of a path without changing the path.
A tmpfs mounted in the host's namespace by one test (a full disk: tests/e2e/test_hostile.py) is
therefore a change to every other test that asserts a replay, in another xdist worker or in
another pytest run on this machine. So those tests share one lock, and a test that mounts holds
it alone: `steady_mount_table` (shared) and `mount_table_changes` (exclusive). The lock is a file in
/tmp, whatever TMPDIR says, because the mount table is the machine's, not the run's; no test asks
for both (two opens of the file in one process would wait on each other)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

LOCK = Path("/tmp/senpi-guard-tests.mount-table.lock")


def _opened() -> int | None:
    """The lock file, opened without O_CREAT when it is there (another user's file in a sticky /tmp
    refuses O_CREAT under fs.protected_regular), made readable by all when made here (whatever the
    umask: a later run as another user opens it too); None where it cannot be opened at all."""
    try:
        return os.open(LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        fd = os.open(LOCK, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError:
        return None
    with contextlib.suppress(OSError):  # (made by another run meanwhile: theirs to make readable)
        os.fchmod(fd, 0o644)
    return fd


def _held(mode: int) -> Iterator[None]:
    """The lock in `mode` for the test's length; where it cannot be opened the test runs unlocked,
    as it did before, with a warning (never skipped for it)."""
    fd = _opened()
    if fd is None:
        warnings.warn(f"cannot open {LOCK}: the mount table is not held still for this test", stacklevel=3)
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
