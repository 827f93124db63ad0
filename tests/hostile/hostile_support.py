"""What the hostile tests share: the attacker as a real concurrent process of the second user,
woken by real inotify events (ctypes, no C), and code that notes which uid ran it."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import pwd
import struct
import time
from collections.abc import Callable
from pathlib import Path

IN_OPEN = 0x20
IN_CREATE = 0x100

PLANTED = """\
import { writeFileSync } from "node:fs";
writeFileSync(LOG, `${process.getuid()}\\n`, { flag: "a" });
"""


def planted(log: Path) -> str:
    """Code that appends the uid it runs as to `log`, a path it holds itself: root's environment
    does not reach the code a replay runs (io/runas)."""
    return PLANTED.replace("LOG", json.dumps(str(log)), 1)


_libc = ctypes.CDLL(None, use_errno=True)


class Inotify:
    """One inotify descriptor: watch paths, then block until an event, returning the names."""

    def __init__(self) -> None:
        self.fd = _libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")

    def watch(self, path: Path, mask: int) -> None:
        if _libc.inotify_add_watch(self.fd, os.fsencode(path), mask) < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")

    def events(self) -> list[str]:
        data, names, at = os.read(self.fd, 65536), [], 0
        while at < len(data):
            _wd, _mask, _cookie, size = struct.unpack_from("iIII", data, at)
            names.append(data[at + 16 : at + 16 + size].rstrip(b"\0").decode())
            at += 16 + size
        return names


AT_FDCWD = -100
RENAME_EXCHANGE = 2


def exchange(one: Path, other: Path) -> None:
    """Swap two entries atomically (renameat2 RENAME_EXCHANGE): never a moment without either."""
    if _libc.renameat2(AT_FDCWD, os.fsencode(one), AT_FDCWD, os.fsencode(other), RENAME_EXCHANGE) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno), str(one))


class Attacker:
    """`attack(ready)` run as `user` in a forked child, started before the victim: it sets up its
    watches, calls ready(), then attacks; it is killed when the block ends."""

    def __init__(self, user: pwd.struct_passwd, attack: Callable[[Callable[[], None]], None]) -> None:
        self.user, self.attack, self.pid = user, attack, 0

    def __enter__(self) -> Attacker:
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                os.close(read_end)
                os.setgroups([])
                os.setresgid(self.user.pw_gid, self.user.pw_gid, self.user.pw_gid)
                os.setresuid(self.user.pw_uid, self.user.pw_uid, self.user.pw_uid)
                self.attack(lambda: os.write(write_end, b"r"))
            finally:
                os._exit(0)
        os.close(write_end)
        ready = os.read(read_end, 1)
        os.close(read_end)
        assert ready == b"r", "the attacker did not start"
        return self

    def __exit__(self, *exc) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)


def spin(until: float, step: Callable[[], bool]) -> None:
    """Call step() as fast as it goes until it returns True or the deadline passes."""
    while time.monotonic() < until and not step():
        pass


def uids_in(log: Path) -> set[int]:
    return {int(x) for x in log.read_text().split()}


def shared_log(folder: Path, name: str) -> Path:
    """A file any user's code can append its uid to."""
    log = folder / name
    log.touch()
    log.chmod(0o666)
    return log
