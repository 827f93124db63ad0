"""Unpacking a release for `check`, capped, and as root never as root: the work runs in a forked
child that has dropped to the release's owner (or `nobody`) before it reads a byte, so what it
writes is that user's from the start and nothing is chowned afterwards. The child reads the file or
folder through the descriptor root opened (and took the owner from): no path is looked up again."""

from __future__ import annotations

import gzip  # noqa: F401  (imported before a fork: the child may not be able to read the stdlib)
import os
import shutil
import stat
import tarfile
import traceback
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from senpi_guard.errors import FatalError


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
        self.bytes += max(size, 0)
        self.entries += 1
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


def copy_folder(fd: int, dest: Path, caps: Caps, what: str) -> None:
    """The folder open as `fd`, copied to `dest` with links followed (as the user doing it), capped."""
    budget = Budget(caps, what)
    os.fchdir(fd)

    def copy(src: str, dst: str) -> None:
        budget.take(os.stat(src).st_size)
        shutil.copy2(src, dst)

    def count(_folder: str, names: list[str]) -> list[str]:
        budget.take(0)
        return []

    try:
        shutil.copytree(".", dest, copy_function=copy, ignore=count, ignore_dangling_symlinks=True)
    except shutil.Error as exc:
        raise FatalError(f"cannot copy {what}: {exc.args[0][0][2]}; fix that file's permissions") from exc
    except OSError as exc:
        raise FatalError(f"cannot copy {what}: {exc}; fix that file's permissions") from exc


def as_user(owner: tuple[int, int] | None, work: Callable[[], None], what: str = "unpacking") -> None:
    """`work()` run as `owner` in a forked child (None: here, as we are). Its FatalError comes back
    as this process's; any other failure as one line with its last frame."""
    if owner is None:
        work()
        return
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop every privilege first, then do the work, then _exit
        code = 0
        try:
            os.close(read_end)
            os.setgroups([])
            os.setresgid(owner[1], owner[1], owner[1])
            os.setresuid(owner[0], owner[0], owner[0])
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
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode("utf-8", "replace")
    _pid, status = os.waitpid(pid, 0)
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
