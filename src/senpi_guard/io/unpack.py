"""Unpacking a release for `check`, capped, and as root never as root: the work runs in a forked
child that has dropped to the release's owner (or `nobody`) before it reads a byte, so what it
writes is that user's from the start and nothing is chowned afterwards. The child reads the file or
folder through the descriptor root opened (and took the owner from): no path is looked up again."""

from __future__ import annotations

import gzip  # noqa: F401  (imported before a fork: the child may not be able to read the stdlib)
import os
import signal
import stat
import tarfile
import traceback
import zlib
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from senpi_guard.errors import FatalError
from senpi_guard.io import runas

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@dataclass(frozen=True)
class Caps:
    max_bytes: int
    max_entries: int

    def describe(self) -> str:
        return f"{self.max_bytes / 1e9:g} GB in {self.max_entries:,} entries"


class Budget:
    """What an unpack has used so far; refuses the entry that would go over a cap."""

    def __init__(self, caps: Caps, what: str) -> None:
        self.caps, self.what, self.bytes, self.entries = caps, what, 0, 0

    def take(self, size: int) -> None:
        self.entries += 1
        self.charge(size)

    def charge(self, size: int) -> None:
        """Bytes more, for the entry already taken."""
        self.bytes += max(size, 0)
        if self.bytes > self.caps.max_bytes or self.entries > self.caps.max_entries:
            over = (
                f"more than {self.caps.max_entries:,} entries"
                if self.entries > self.caps.max_entries
                else f"more than {self.caps.max_bytes / 1e9:g} GB ({self.caps.max_bytes:,} bytes)"
            )
            raise FatalError(
                f"{self.what} unpacks to {over}; senpi-guard stopped before writing more (a release is "
                "about 185 MB in 24,000 entries): raise check_max_bytes / check_max_entries in the "
                "config if it is really that big"
            )


def extract(fd: int, dest: Path, caps: Caps, what: str) -> None:
    """The tarball read from `fd` (a stream: gzip or plain), each member through tarfile's data
    filter (no links out, no devices, no owners), refused as soon as it would pass a cap."""
    if not hasattr(tarfile, "data_filter"):  # (Python < 3.11.4 cannot extract a tarball safely)
        raise FatalError(
            f"unpacking {what} safely needs Python 3.11.4 or newer; unpack it yourself "
            "(tar xzf) and pass the package folder"
        )
    budget = Budget(caps, what)
    dest.mkdir(mode=0o755)
    try:
        with os.fdopen(os.dup(fd), "rb") as stream, tarfile.open(fileobj=stream, mode="r|*") as archive:
            for member in archive:
                budget.take(member.size if member.isreg() else 0)
                archive.extract(member, dest, filter="data")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise FatalError(
            f"{what} is not a package tarball npm could have made ({exc}); pass a .tgz "
            "from `npm pack`, a package folder, or an npm spec"
        ) from exc


CHUNK = 1_000_000  # bytes read and charged at a time while copying a file


def copy_folder(fd: int, dest: Path, caps: Caps, what: str) -> None:
    """The folder open as `fd` copied to `dest` (as the user doing it), capped as it is read: only
    folders, regular files (opened without following links, checked after the open, charged per
    chunk) and links that stay inside it; anything else is refused in one line."""
    budget = Budget(caps, what)
    try:
        _copy_tree(os.dup(fd), dest, Path("."), budget, what)
    except OSError as exc:
        raise FatalError(f"cannot copy {what}: {exc}; fix that file's permissions, or pass a .tgz") from exc


def _copy_tree(dir_fd: int, dest: Path, rel: Path, budget: Budget, what: str) -> None:
    """(Takes `dir_fd` over: it is closed here.)"""
    try:
        dest.mkdir(mode=0o755)
        for entry in list(os.scandir(dir_fd)):
            budget.take(0)
            here, st = rel / entry.name, entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
                _copy_tree(os.open(entry.name, flags, dir_fd=dir_fd), dest / entry.name, here, budget, what)
            elif stat.S_ISLNK(st.st_mode):
                target = os.readlink(entry.name, dir_fd=dir_fd)
                inside = os.path.normpath(rel / target)
                if os.path.isabs(target) or inside == ".." or inside.startswith("../"):
                    raise FatalError(
                        f"{what}/{here} is a link out of the folder (to {target}); senpi-guard copies only "
                        "what is inside it: pass the folder it points into, or a .tgz (npm pack)"
                    )
                os.symlink(target, dest / entry.name)
            else:
                _copy_file(dir_fd, entry.name, dest / entry.name, budget, f"{what}/{here}")
    finally:
        os.close(dir_fd)


def _copy_file(dir_fd: int, name: str, dest: Path, budget: Budget, shown: str) -> None:
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        st = os.fstat(src)
        if not stat.S_ISREG(st.st_mode):
            raise FatalError(
                f"{shown} is not a regular file (a device, FIFO or socket); a package holds none: "
                "remove it, or pass a .tgz (npm pack)"
            )
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, st.st_mode & 0o777)
        with os.fdopen(out, "wb") as sink:
            while chunk := os.read(src, CHUNK):
                budget.charge(len(chunk))
                sink.write(chunk)
            sink.flush()
            os.utime(sink.fileno(), ns=(st.st_atime_ns, st.st_mtime_ns))
    finally:
        os.close(src)


def as_user(owner: runas.Account | None, work: Callable[[], None], what: str = "unpacking") -> None:
    """`work()` run as `owner` in a forked child (None: here, as we are). Its FatalError comes back
    as this process's; any other failure as one line with its last frame."""
    if owner is None:
        work()
        return
    read_end, write_end = os.pipe()
    # ^C and SIGTERM wait while os.fork runs its at-fork hooks (logging's among them): an exception
    # raised in a hook is printed and dropped, and the run would go on as if never stopped
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise
    if pid == 0:  # the child: drop every privilege first, then do the work, then _exit
        code = 0
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            os.close(read_end)
            runas.drop(owner)
            os.umask(0o022)
            work()
        except FatalError as exc:
            os.write(write_end, str(exc).encode("utf-8", "replace"))
            code = 1
        except BaseException as exc:  # (the child must always _exit)
            frame = traceback.extract_tb(exc.__traceback__)[-1:]
            where = f" at {frame[0].filename}:{frame[0].lineno}" if frame else ""
            os.write(write_end, f"{what} failed as uid {owner[0]}: {exc!r}{where}".encode())
            code = 2
        finally:
            os._exit(code)
    os.close(write_end)
    status = None
    try:  # (^C, SIGTERM: the child must not go on writing while its folder is removed)
        # a stop that came during the fork is raised here, where the child is already stopped for it
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        with os.fdopen(read_end, "rb") as pipe:
            message = pipe.read().decode("utf-8", "replace")
        _pid, status = os.waitpid(pid, 0)
    except BaseException:
        if status is None:
            with suppress(ProcessLookupError, ChildProcessError):  # (reaped just before the stop came)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        raise
    if os.waitstatus_to_exitcode(status) != 0:
        raise FatalError(message or f"{what} as uid {owner[0]} ended with status {status}")


def open_local(path: Path) -> tuple[int, os.stat_result] | None:
    """The file or folder at `path`, opened once (links followed as the user named them) and
    fstat'ed: (fd, its stat); None when nothing is there. A FIFO or device is refused unopened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FatalError(f"cannot open {path}: {exc.strerror}; pass a .tgz, a package folder or an npm spec") from exc
    st = os.fstat(fd)
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        os.close(fd)
        raise FatalError(f"{path} is neither a file nor a folder; pass a .tgz, a package folder or an npm spec")
    return fd, st
