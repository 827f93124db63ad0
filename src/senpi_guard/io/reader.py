"""The one reader of files senpi-guard did not write itself: a user's package.json, settings.json,
models.json, an agent dir's extension, senpi's dist/ files, session files, a release's tarball,
programs on PATH, and senpi-guard's own state (which another user may have put something in place
of). Every such read goes through here (tests/unit/io/test_one_reader.py holds the rest of src/ to
it); senpi-guard's own package data is read with `own_data`.

- The path is walked one component at a time from `/` with directory descriptors: a symbolic link
  is followed only when it is ours (the effective uid's) or root's; any other user's link, at any
  place on the path, the file's own name included, is refused. So a user's link never sends root's
  read elsewhere (to /etc/shadow, to /dev/zero).
- The file is opened with O_NONBLOCK and must then be a regular file (fstat): a FIFO, a device or a
  socket is refused in one line naming it, and never waited on.
- A file larger than its kind's cap is refused by its size before a byte is read (a sparse
  multi-GB file is never read whole); what is read never goes past the cap, even if the file grows.
  Session files are read by line (`lines`), each line under a cap of its own.
- Two caps are the user's to raise in senpi-guard's config: `dist_file_max_bytes` (a file of
  senpi's dist/) and `session_line_max_bytes` (one line of a session). `use(config)` sets them
  (commands/common.load and the watcher, each time they take a config).

A refusal is `Refused` (a FatalError: one line, what, where, what to do). An OS failure (a file
that is not there, permission denied) is the OSError itself, as a plain open raises it."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from senpi_guard.errors import FatalError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from senpi_guard.io.config import Config

MiB = 1 << 20
HOPS = 40  # links followed on one path at most (the kernel's own limit)
CHUNK = 1 << 20
FLAGS = os.O_RDONLY | os.O_CLOEXEC
READ = FLAGS | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)  # (a terminal opened never becomes ours)
O_PATH = getattr(os, "O_PATH", 0)  # (Linux: a link itself held open, its owner and text of one inode)
MOVE_IT = "move it away (or replace it with a regular file), then retry"


class Refused(FatalError):
    """A file senpi-guard will not read: not a regular file, behind another user's link, too big."""


class NotRegular(OSError):
    """`open_regular` found no regular file under the name (`mode`: what it found); never opened."""

    def __init__(self, name: str, mode: int) -> None:
        super().__init__(errno.EINVAL, f"{_kind_of(mode)}, not a regular file", name)
        self.mode = mode


@dataclass(frozen=True)
class Kind:
    """What a file is to senpi-guard, and how much of it it reads."""

    what: str  # how a refusal names it ("package.json", "session file")
    cap: int | None  # the most bytes of one such file (None: no cap on the whole, read by lines)
    setting: str = ""  # the config key that sets the cap ("" when fixed)
    fix: str = MOVE_IT  # what the user can do when it is refused for what it is
    line_cap: int = 0  # (read by lines) the most bytes of one line, its newline included
    line_setting: str = ""  # the config key that sets the line cap


MANIFEST = Kind("package.json", 16 * MiB, fix="reinstall the package, then retry")
SETTINGS = Kind("senpi settings file", 16 * MiB)
JSON = Kind("JSON file", 64 * MiB)  # (a user's models.json, and the like)
EXTENSION = Kind("extension file", 64 * MiB)  # (an agent dir's extension, a package's files)
DIST = Kind("file of senpi's dist/", 64 * MiB, "dist_file_max_bytes", "reinstall senpi, then retry")
SESSION = Kind("session file", None, line_cap=128 * MiB, line_setting="session_line_max_bytes")
PROGRAM = Kind("program", 4096 * MiB)  # (a `senpi` on PATH, node: read for their first bytes)
SERVICE = Kind("service file", 4 * MiB)
CONFIG = Kind("senpi-guard config file", 4 * MiB)
TARBALL = Kind("release tarball", None)  # (unpacked by io/unpack, whose own caps bound it)
STATE = Kind("senpi-guard state file", 512 * MiB, fix="remove it (senpi-guard writes it again), then retry")

_caps: dict[str, int] = {}  # the config's values of the settings above (unset: each kind's default)


def use(config: Config) -> None:
    """Take the caps a user may raise from this config (until the next call)."""
    for kind in (DIST, SESSION):
        for key in (kind.setting, kind.line_setting):
            if key:
                _caps[key] = int(getattr(config, key))


def cap_of(kind: Kind) -> int | None:
    return _caps.get(kind.setting, kind.cap) if kind.setting else kind.cap


def line_cap_of(kind: Kind) -> int:
    return _caps.get(kind.line_setting, kind.line_cap) if kind.line_setting else kind.line_cap


# ---- reading ---------------------------------------------------------------------------------


def read(path: str | Path, kind: Kind) -> bytes:
    """The whole file, at most its kind's cap (a kind without one, a session, is read by lines)."""
    with opened(path, kind) as handle:
        return bounded(handle, path, kind)


def held_open(pid: int, fd: int, size: int) -> bytes | None:
    """The head (at most `size` bytes) of a file another process holds open, read through
    /proc/<pid>/fd/<fd>: the open file itself, so no path is walked and none can be swapped; a
    regular file only (a FIFO there is never waited on). None when it cannot be read."""
    try:
        handle = os.open(f"/proc/{pid}/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return os.read(handle, size) if stat.S_ISREG(os.fstat(handle).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(handle)


def head(path: str | Path, kind: Kind, size: int) -> bytes:
    """The first `size` bytes (or fewer: the whole of a shorter file)."""
    with opened(path, kind) as handle:
        return handle.read(size)


def sha256(path: str | Path, kind: Kind) -> str:
    """The file's sha256, read in chunks (never more than its kind's cap)."""
    digest = hashlib.sha256()
    with opened(path, kind) as handle:
        left = cap_of(kind)
        while chunk := handle.read(CHUNK):
            if left is not None:
                left -= len(chunk)
                if left < 0:
                    raise _too_big(path, kind, None)
            digest.update(chunk)
    return digest.hexdigest()


def opened(path: str | Path, kind: Kind) -> BinaryIO:
    """The file, open for reading (buffered; close it, or use it in a `with`), once it is known to
    be a regular file within its kind's cap: for reads by line (`lines`), by chunk or at an offset."""
    return os.fdopen(_open(path, kind), "rb")


def lines(handle: BinaryIO, path: str | Path, kind: Kind, first: int = 1) -> Iterator[bytes]:
    """Each line from where the handle is (its newline kept; the last may lack one), numbered
    from `first` for the refusal of one longer than the kind's line cap."""
    cap = line_cap_of(kind)
    number = first
    while raw := handle.readline(cap + 1):
        if len(raw) > cap:
            raise _line_too_long(path, kind, number, cap)
        yield raw
        number += 1


def line(handle: BinaryIO, path: str | Path, kind: Kind, number: int = 1) -> bytes:
    """One line (b"" at the end of the file), under the kind's line cap."""
    return next(lines(handle, path, kind, number), b"")


def check_size(path: str | Path, kind: Kind, size: int) -> None:
    """Refuse a file of `size` bytes past its kind's cap (for readers of io/ that open files their
    own way: io/write's, by a package's folder descriptors)."""
    cap = cap_of(kind)
    if cap is not None and size > cap:
        raise _too_big(path, kind, size)


def own_data(path: str | Path | Traversable) -> bytes:
    """A file of senpi-guard's own: its package's data (patches, the harness, samples) or a patch
    folder a developer names in $SENPI_GUARD_EXTRA_PATCHES. Never a file a user's senpi wrote."""
    return (Path(path) if isinstance(path, str) else path).read_bytes()


def own_text(path: str | Path | Traversable) -> str:
    return own_data(path).decode("utf-8")


# ---- the walk --------------------------------------------------------------------------------


def _open(path: str | Path, kind: Kind) -> int:
    """An fd of the regular file at `path` (O_NONBLOCK, no one else's link followed on the way)."""
    try:
        fd = _walk(os.fspath(path))
    except OSError as exc:
        if isinstance(exc, NotRegular):
            raise _not_a_file(path, kind, _kind_of(exc.mode)) from None
        if exc.errno == errno.ENXIO:  # (a socket, or a device with nothing behind it)
            raise _not_a_file(path, kind, "a socket or a device") from exc
        raise
    try:  # (open_regular opened it only as a regular file: its size is what is left to judge)
        check_size(path, kind, os.fstat(fd).st_size)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _names(path: str) -> list[str]:
    """A path's names, the last first (popped in order), with `.` and empty ones left out."""
    return [name for name in reversed(path.split("/")) if name and name != "."]


def _walk(path: str) -> int:
    """Each name opened below the last (strings: Path objects cost more than the opens, over the
    thousands of files of a dist/)."""
    pending = _names(path if path.startswith("/") else os.path.join(os.getcwd(), path))
    fd = os.open("/", FLAGS | os.O_DIRECTORY)
    walked: list[str] = []  # (the names opened, for a refusal's words)
    hops = 0
    try:
        while pending:
            name = pending.pop()
            try:
                if pending:
                    child = os.open(name, FLAGS | os.O_NOFOLLOW | os.O_DIRECTORY, dir_fd=fd)
                else:
                    child = open_regular(name, fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise
                target = _link_target(fd, name, Path("/", *walked, name), Path(path), exc)
                hops += 1
                if hops > HOPS:
                    raise OSError(errno.ELOOP, "too many levels of symbolic links", path) from None
                pending.extend(_names(target))
                if target.startswith("/"):
                    os.close(fd)
                    fd, walked = os.open("/", FLAGS | os.O_DIRECTORY), []
                continue
            os.close(fd)
            fd = child
            walked.append(name)
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_regular(name: str, dir_fd: int) -> int:
    """An fd for reading of the regular file `name` in the folder `dir_fd`, not following a link there
    (OSError ELOOP). Anything else (a device, a FIFO, a folder) is NotRegular, and never opened for
    reading: on Linux the name is held with O_PATH and looked at first, and only that same inode is
    opened, through /proc/self/fd (or by name again, refused unless it is the inode looked at)."""
    if not O_PATH:  # (macOS: no way to look before opening; O_NONBLOCK and O_NOCTTY at least)
        fd = os.open(name, READ | os.O_NOFOLLOW, dir_fd=dir_fd)
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise NotRegular(name, mode)
        return fd
    held = os.open(name, O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        st = os.fstat(held)
        if stat.S_ISLNK(st.st_mode):
            raise OSError(errno.ELOOP, "a symbolic link", name)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(name, st.st_mode)
        try:
            return os.open(f"/proc/self/fd/{held}", READ)
        except FileNotFoundError:  # (no /proc mounted)
            fd = os.open(name, READ | os.O_NOFOLLOW, dir_fd=dir_fd)
        again = os.fstat(fd)
        if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)
            raise NotRegular(name, again.st_mode if not stat.S_ISREG(again.st_mode) else 0)
        return fd
    finally:
        os.close(held)


def _link_target(dir_fd: int, name: str, where: Path, path: Path, exc: OSError) -> str:
    """What the link `name` in `dir_fd` points to, when its owner is ours or root's; else refused.
    (ENOTDIR/ELOOP from a name that is no link is that OSError.)"""
    if not O_PATH:  # (the owner, then the text: a swap in between is not seen)
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if not stat.S_ISLNK(st.st_mode):
            raise exc
        _trusted(st, where, path)
        return os.readlink(name, dir_fd=dir_fd)
    link = os.open(name, O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)  # (the link itself)
    try:
        st = os.fstat(link)
        if not stat.S_ISLNK(st.st_mode):
            raise exc
        _trusted(st, where, path)
        return os.readlink("", dir_fd=link)
    finally:
        os.close(link)


def _trusted(st: os.stat_result, where: Path, path: Path) -> None:
    euid = os.geteuid()
    if st.st_uid not in (euid, 0):
        on_the_way = "" if where == path else f" (on the way to {path})"
        raise Refused(
            f"{where}{on_the_way} is a symbolic link owned by uid {st.st_uid}; senpi-guard (uid {euid}) "
            "follows no other user's link: run senpi-guard as that user, or make it the file or folder it points to"
        )


def bounded(handle: BinaryIO, path: str | Path, kind: Kind) -> bytes:
    cap = cap_of(kind)
    if cap is None:
        raise TypeError(f"a {kind.what} is read by lines or chunks (reader.opened), never whole")
    data = handle.read(cap + 1)
    if len(data) > cap:  # (it grew past the cap since its size was seen)
        raise _too_big(path, kind, None)
    return data


# ---- refusals --------------------------------------------------------------------------------


def _kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a plain file"


def _not_a_file(path: str | Path, kind: Kind, what: str) -> Refused:
    return Refused(
        f"{path} is {what}, not a regular file; senpi-guard does not read it as a {kind.what} "
        f"(it could wait on it forever): {kind.fix}"
    )


def _raise_it(kind: Kind, setting: str) -> str:
    if setting:
        return f"if it is genuine, raise {setting} in senpi-guard's config.toml"
    return kind.fix


def _too_big(path: str | Path, kind: Kind, size: int | None) -> Refused:
    cap = cap_of(kind)
    has = f"is {size:,} bytes, more than" if size is not None else "grew past"
    return Refused(
        f"{path} {has} the {cap:,} bytes senpi-guard reads of a {kind.what}; {_raise_it(kind, kind.setting)}"
    )


def _line_too_long(path: str | Path, kind: Kind, number: int, cap: int) -> Refused:
    return Refused(
        f"{path}: line {number} is longer than {cap:,} bytes, the most senpi-guard reads of one line "
        f"of a {kind.what}; {_raise_it(kind, kind.line_setting)}"
    )
