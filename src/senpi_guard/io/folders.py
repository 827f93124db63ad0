"""Folders outside a package (an agent dir and its extensions/), opened the way the one it is for
would open them.

As a user, links are followed, as senpi follows them (a symlinked agent dir or extensions/ is the
user's own choice). As root, the path is walked one component at a time from `/` without following
links: a link root owns is followed (the system's own), any other is refused, so a user's link can
never send a root write elsewhere. Folders root creates on the way take the owner of the folder they
are made in (a user's ~/.senpi/agent stays that user's)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from senpi_guard.errors import FatalError
from senpi_guard.io import made

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY


@contextmanager
def opened(folder: Path, create: bool = False) -> Iterator[int | None]:
    """An fd of `folder` (None when it does not exist and `create` is false)."""
    fd = _walk_from_root(folder, create) if os.geteuid() == 0 else _open_as_user(folder, create)
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def _open_as_user(folder: Path, create: bool) -> int | None:
    real = Path(os.path.realpath(folder))
    if create:
        made.mkdirs(real)
    try:
        return os.open(real, DIR_FLAGS)
    except FileNotFoundError:
        if create:
            raise
        return None
    except NotADirectoryError as exc:
        raise _not_a_folder(folder) from exc


def _walk_from_root(folder: Path, create: bool) -> int | None:
    fd = os.open("/", DIR_FLAGS)
    try:
        walked = Path("/")
        for name in Path(os.path.abspath(folder)).parts[1:]:
            walked /= name
            step = _step(fd, name, walked, create)
            os.close(fd)
            fd = step
            if fd is None:
                if create:  # (made, then gone again, between our mkdir and open)
                    raise FatalError(f"{walked} changed while senpi-guard was making it; run the command again")
                return None
        return fd
    except BaseException:
        if fd is not None:
            os.close(fd)
        raise


def _step(parent: int, name: str, path: Path, create: bool) -> int | None:
    """Open one component below `parent` (made, owned as `parent`, when missing and `create`)."""
    try:
        return os.open(name, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            return None
        try:
            os.mkdir(name, 0o755, dir_fd=parent)
        except FileExistsError:
            return _step(parent, name, path, create=False)  # (made meanwhile: opened as it is)
        opened = os.open(name, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
        made.record([path])
        owner = os.fstat(parent)
        os.fchown(opened, owner.st_uid, owner.st_gid)
        return opened
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
    st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    if not stat.S_ISLNK(st.st_mode):
        raise _not_a_folder(path)
    if st.st_uid != 0:
        raise FatalError(
            f"{path} is a symbolic link owned by uid {st.st_uid}; as root senpi-guard follows "
            "no other user's link on its way to a folder it writes in: run senpi-guard as that user "
            "(their own run follows their links), or make it a plain folder"
        )
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent)  # root's own link (e.g. /home elsewhere)
    except FileNotFoundError:
        if create:
            raise FatalError(
                f"{path} is a link to a folder that does not exist; create the folder it points to, or remove the link"
            ) from None
        return None


def _not_a_folder(path: Path) -> FatalError:
    return FatalError(f"{path} is in the way and is not a folder; move it aside, then retry")
