"""A folder of files written whole beside its place, then renamed into it (`export`), every step
relative to descriptors: the parent is opened as io/folders opens a folder (as root, no other
user's link is followed on the way), the new folder is made and opened there without following a
link, its files are written and its mode set through its own descriptor (never a setuid, setgid or
sticky bit), and the renames are done relative to the parent. A user who can write the parent and
swaps the new folder for a link meanwhile gets nothing written or chmodded where the link points:
the write is refused."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from pathlib import Path

from senpi_guard.errors import FatalError
from senpi_guard.io import folders

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
PERMISSIONS = 0o777  # (the bits a folder's mode is taken with: never setuid, setgid or sticky)


def put(dest: Path, files: dict[str, bytes]) -> None:
    """Make `dest` hold exactly `files` (an absent or empty folder, or an earlier one replaced whole:
    readers see the old folder or the new one). The new folder takes the old one's permission bits
    (a new one: 0777 less the umask). OSError and FatalError go to the caller."""
    changed = f"{dest.parent} changed while senpi-guard was writing {dest.name} in it; nothing was written there"
    with folders.opened(dest.parent, create=True) as parent:
        assert parent is not None  # (made when missing)
        temp, fd = _made(parent, f".{dest.name}.", changed)
        try:
            for name, data in files.items():
                _write(fd, name, data)
            os.fchmod(fd, _mode(parent, dest.name))
            _rename_into(parent, temp, dest.name)
            _landed(parent, dest.name, fd, changed)
        except BaseException:
            _empty(fd)
            with contextlib.suppress(OSError):  # (gone, or swapped for something else: left as it is)
                os.rmdir(temp, dir_fd=parent)
            raise
        finally:
            os.close(fd)


def _made(parent: int, prefix: str, changed: str) -> tuple[str, int]:
    """A new private folder of our own in `parent`, by name and open descriptor."""
    name = f"{prefix}{secrets.token_hex(6)}"
    os.mkdir(name, 0o700, dir_fd=parent)
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    except OSError as exc:  # (a link or a file put in its place)
        raise FatalError(changed) from exc
    if os.fstat(fd).st_uid != os.geteuid():  # (someone else's folder put in its place)
        os.close(fd)
        raise FatalError(changed)
    return name, fd


def _write(folder: int, name: str, data: bytes) -> None:
    fd = os.open(name, FILE_FLAGS, 0o666, dir_fd=folder)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _mode(parent: int, name: str) -> int:
    """The permission bits of the folder `name` replaces (0777 less the umask when it is none)."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        return stat.S_IMODE(st.st_mode) & PERMISSIONS
    mask = os.umask(0)
    os.umask(mask)
    return PERMISSIONS & ~mask


def _rename_into(parent: int, temp: str, name: str) -> None:
    """One rename over an absent or empty folder; an earlier one is moved aside first."""
    try:
        os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    changed = f"a folder beside {name} changed while senpi-guard was replacing it; nothing was written there"
    aside, aside_fd = _made(parent, f".{name}.old.", changed)
    try:
        os.rename(name, "package", src_dir_fd=parent, dst_dir_fd=aside_fd)
        try:
            os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except OSError:
            os.rename("package", name, src_dir_fd=aside_fd, dst_dir_fd=parent)
            raise
    finally:
        _remove(aside_fd, "package")
        os.close(aside_fd)
        with contextlib.suppress(OSError):
            os.rmdir(aside, dir_fd=parent)


def _landed(parent: int, name: str, fd: int, changed: str) -> None:
    """Whether what now stands at `name` is the folder written (not a link swapped in for it)."""
    there, ours = os.stat(name, dir_fd=parent, follow_symlinks=False), os.fstat(fd)
    if (there.st_dev, there.st_ino) != (ours.st_dev, ours.st_ino):
        raise FatalError(changed)


def _remove(folder: int, name: str) -> None:
    """Remove `name` in `folder` whatever it is (a folder's tree relative to descriptors, no link
    followed)."""
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
            shutil.rmtree(name, dir_fd=folder)
        else:
            os.unlink(name, dir_fd=folder)


def _empty(folder: int) -> None:
    """Take out what was written in a folder of ours (it may stand elsewhere by now)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            _remove(folder, name)
