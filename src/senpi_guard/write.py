"""The only module that writes into a package's dist/: confined, atomic, mode- and owner-keeping;
and the atomic writer of senpi-guard's own files."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import NamedTuple

from senpi_guard.errors import FatalError


class Snapshot(NamedTuple):
    path: Path
    data: bytes
    sha256: str
    mode: int
    uid: int
    gid: int
    nlink: int


def confined(path: Path, package_dir: Path) -> Path:
    real = Path(os.path.realpath(path))
    root = Path(os.path.realpath(package_dir))
    if not real.is_relative_to(root):
        raise FatalError(f"{path} resolves to {real}, outside the package {root}; senpi-guard "
                         "will not follow it: reinstall senpi so the file is a plain file")
    return real


def read(path: Path, package_dir: Path) -> Snapshot:
    confined(path, package_dir)
    try:
        st = path.lstat()
    except OSError as exc:
        raise FatalError(f"cannot stat {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise FatalError(f"{path} is not a regular file; reinstall senpi")
    if not st.st_mode & 0o444:
        raise FatalError(f"{path} is unreadable (mode {stat.S_IMODE(st.st_mode):04o}); "
                         "make it readable (chmod a+r) and retry")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FatalError(f"cannot read {path}: {exc.strerror}; fix its permissions") from exc
    return Snapshot(path, data, hashlib.sha256(data).hexdigest(), stat.S_IMODE(st.st_mode),
                    st.st_uid, st.st_gid, st.st_nlink)


def check_writable(path: Path) -> None:
    """Respect read-only modes even as root: a dir without write bits is the user's 'hands off'."""
    parent = path.parent
    st = parent.stat()
    if not st.st_mode & 0o222 or not os.access(parent, os.W_OK):
        raise FatalError(f"{parent} is read-only (mode {stat.S_IMODE(st.st_mode):04o}); nothing "
                         "was changed: make it writable or run senpi-guard as the owner of senpi")


def replace(snapshot: Snapshot, data: bytes) -> None:
    """Write `data` over snapshot.path atomically, unless the file changed since it was read.

    A temp file beside the target is renamed over it, so a hard link into a pnpm or bun store is
    broken rather than edited, and readers only ever see the old or the new bytes."""
    path = snapshot.path
    check_writable(path)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".senpi-guard", dir=path.parent)
    except OSError as exc:
        raise FatalError(f"cannot create a temp file in {path.parent}: {exc.strerror}; nothing "
                         "was changed") from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, snapshot.mode)
        if hasattr(os, "chown"):
            with contextlib.suppress(PermissionError):
                os.chown(tmp, snapshot.uid, snapshot.gid)
        try:
            now = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            now = "missing"
        if now != snapshot.sha256:
            raise FatalError(f"{path} changed while senpi-guard was working on it (a senpi update "
                             "in progress?); nothing was written: run the command again")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def remove_stale_temps(targets: list[Path]) -> None:
    """Temp files left by a writer that was killed (callers hold the write lock, so none is live)."""
    for target in targets:
        for leftover in target.parent.glob(f".{target.name}.*.senpi-guard"):
            with contextlib.suppress(OSError):
                leftover.unlink()


def write_private(path: Path, data: bytes) -> None:
    """Atomic write for senpi-guard's own files (state, backups)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
