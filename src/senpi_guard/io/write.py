"""The only module that writes into a package's dist/, and the atomic writer of senpi-guard's own
files.

A target is read through directory file descriptors opened one component at a time with
O_NOFOLLOW from the package dir, and written back the same way: the temp file, the re-check and
the rename all happen relative to a directory whose device and inode are the ones seen at read
time. A directory swapped for a symlink or another directory in between is refused, so a write
can never land outside the folder that was read. Mode and owner are kept, or nothing is written.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from senpi_guard.errors import FatalError, Passing
from senpi_guard.io import folders, made, reader

TEMP_SUFFIX = ".senpi-guard"


class Snapshot(NamedTuple):
    path: Path
    data: bytes
    sha256: str
    mode: int
    uid: int
    gid: int
    nlink: int
    package_dir: Path  # as resolved when read: every write walks down from here again
    parts: tuple[str, ...]  # the folders from package_dir down to the file, then its name
    dir_id: tuple[int, int]  # (st_dev, st_ino) of the file's folder at read time
    dir_uid: int


PASSING = frozenset({errno.ENOSPC, errno.EDQUOT})  # a full disk or quota: space may be freed


def passes(exc: BaseException | None) -> bool:
    """Whether a failure (or the OS error it was raised from) is one that passes: a full disk or
    quota, or node out of time on a busy machine (errors.Passing), worth trying again later, unlike
    a refusal that stays until something is changed."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, Passing) or (isinstance(exc, OSError) and exc.errno in PASSING):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def os_error(exc: OSError, what: str, where: Path | str, next_step: str) -> FatalError:
    """One line for an OS failure: what, where, why, and what to do."""
    why = {
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "the disk quota is used up",
        errno.EROFS: "the file system is read-only",
        errno.ELOOP: "a symbolic link is in the way",
        errno.EACCES: "permission denied",
        errno.EPERM: "not permitted",
    }.get(exc.errno, exc.strerror)
    return FatalError(f"cannot {what} {where}: {why}; {next_step}")


@contextmanager
def _folder(package_dir: Path, folders: tuple[str, ...]) -> Iterator[int]:
    """An fd of package_dir/folders…, opened one component at a time without following links."""
    fd = os.open(package_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in folders:
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _refuse_link(path: Path, package_dir: Path, exc: OSError) -> FatalError:
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(package_dir):
        return FatalError(
            f"{path} resolves to {real}, outside the package {package_dir}; senpi-guard "
            "will not follow it: reinstall senpi so the file is a plain file"
        )
    return FatalError(
        f"{path} or a folder above it is not a plain file or folder ({exc.strerror}); "
        "senpi-guard will not follow it: reinstall senpi"
    )


def read(path: Path, package_dir: Path) -> Snapshot:
    root = Path(os.path.realpath(package_dir))
    parts = Path(path).relative_to(package_dir).parts
    try:
        with _folder(root, parts[:-1]) as dir_fd:
            dir_st = os.fstat(dir_fd)
            fd = reader.open_regular(parts[-1], dir_fd)  # (a device or a FIFO: never opened)
            with os.fdopen(fd, "rb") as handle:
                st = os.fstat(handle.fileno())
                if not st.st_mode & 0o444:  # root could read it; its owner says hands off
                    raise FatalError(
                        f"{path} is unreadable (mode {stat.S_IMODE(st.st_mode):04o}); "
                        "make it readable (chmod a+r) and retry"
                    )
                reader.check_size(path, reader.DIST, st.st_size)  # (a sparse giant is never read whole)
                data = reader.bounded(handle, path, reader.DIST)
    except reader.NotRegular as exc:
        raise FatalError(f"{path} is not a regular file; reinstall senpi") from exc
    except (NotADirectoryError, FileNotFoundError) as exc:
        raise _refuse_link(path, root, exc) from exc
    except PermissionError as exc:
        raise FatalError(f"{path} is unreadable ({exc.strerror}); make it readable (chmod a+r) and retry") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse_link(path, root, exc) from exc
        raise os_error(exc, "read", path, "check the file and retry") from exc
    return Snapshot(
        Path(path),
        data,
        hashlib.sha256(data).hexdigest(),
        stat.S_IMODE(st.st_mode),
        st.st_uid,
        st.st_gid,
        st.st_nlink,
        root,
        parts,
        (dir_st.st_dev, dir_st.st_ino),
        dir_st.st_uid,
    )


def check_owner(snapshot: Snapshot) -> None:
    """The new file gets the old one's owner, or nothing is written (raised before any write of a
    run: its proof and the other files' writes wait on it)."""
    euid = os.geteuid()
    if snapshot.uid == euid:
        return
    if euid != 0:
        owner = "as root (sudo senpi-guard …)" if snapshot.uid == 0 else f"as uid {snapshot.uid}, the owner of senpi"
        raise FatalError(
            f"{snapshot.path} belongs to uid {snapshot.uid}, not to you (uid {euid}); "
            f"nothing was changed: run senpi-guard {owner}"
        )
    if snapshot.uid != snapshot.dir_uid:
        raise FatalError(
            f"{snapshot.path} belongs to uid {snapshot.uid} but its folder to uid "
            f"{snapshot.dir_uid}; senpi-guard will not give a file to another owner: "
            "reinstall senpi, then retry"
        )


def replace(snapshot: Snapshot, data: bytes) -> None:
    """Write `data` over the snapshot's file atomically, unless it changed since it was read.

    A temp file beside the target is renamed over it, so a hard link into a pnpm or bun store is
    broken rather than edited, and readers only ever see the old or the new bytes."""
    check_owner(snapshot)
    path = snapshot.path
    try:
        with _folder(snapshot.package_dir, snapshot.parts[:-1]) as dir_fd:
            _same_folder(snapshot, dir_fd)
            _replace_in(snapshot, data, dir_fd)
    except (NotADirectoryError, FileNotFoundError) as exc:
        raise FatalError(
            f"a folder above {path} was moved or replaced while senpi-guard worked "
            "(a senpi update in progress?); nothing was written: run the command again"
        ) from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse_link(path, snapshot.package_dir, exc) from exc
        raise os_error(exc, "write", path.parent, "nothing was changed: fix that, then retry") from exc


def hands_off(mode: int) -> bool:
    """A folder without any write bit is the user's "hands off": respected even as root."""
    return not mode & 0o222


def refused_in(folder: Path) -> bool:
    """Whether a write in this folder would be refused (no write bit, or no write access): what
    `uninstall` checks before it changes anything."""
    try:
        return hands_off(folder.stat().st_mode) or not os.access(folder, os.W_OK)
    except OSError:
        return True


def refusal_text(folder: Path) -> str:
    """Why a write in this folder is refused, and what the user can do (for `refused_in`)."""
    with contextlib.suppress(OSError):
        mode = folder.stat().st_mode
        if hands_off(mode):
            return f"{folder} has no write bits (mode {stat.S_IMODE(mode):04o}): chmod u+w {folder}, then retry"
    return f"{folder} is not writable by you: run uninstall as its owner"


def _same_folder(snapshot: Snapshot, dir_fd: int) -> None:
    st = os.fstat(dir_fd)
    if (st.st_dev, st.st_ino) != snapshot.dir_id:
        raise FatalError(
            f"{snapshot.path.parent} is another folder than the one senpi-guard read "
            "(it was replaced meanwhile); nothing was written: run the command again"
        )
    if hands_off(st.st_mode) or not os.access(".", os.W_OK, dir_fd=dir_fd):
        raise FatalError(
            f"{snapshot.path.parent} is read-only (mode {stat.S_IMODE(st.st_mode):04o}); "
            "nothing was changed: make it writable or run senpi-guard as the owner of senpi"
        )


def _replace_in(snapshot: Snapshot, data: bytes, dir_fd: int) -> None:
    def prepare(fd: int) -> None:
        try:
            os.fchown(fd, snapshot.uid, snapshot.gid)
        except PermissionError as exc:
            raise FatalError(
                f"{snapshot.path} belongs to {snapshot.uid}:{snapshot.gid}, which "
                "senpi-guard cannot keep; nothing was changed: run it as the owner"
            ) from exc
        os.fchmod(fd, snapshot.mode)

    _swap_in(
        dir_fd,
        snapshot.parts[-1],
        data,
        0o600,
        prepare,
        snapshot.sha256,
        len(snapshot.data),
        f"{snapshot.path} changed while senpi-guard was working on it (a senpi update in progress?); "
        "nothing was written: run the command again",
    )
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)


def _swap_in(
    dir_fd: int, name: str, data: bytes, mode: int, prepare, expected_sha: str | None, size: int, changed: str
) -> None:
    """The one atomic write: a temp file beside `name` (made ready by `prepare(fd)`), its bytes synced,
    then renamed over `name` relative to the folder opened, unless `name` is no longer `expected_sha`
    of `size` bytes ("missing": nothing there; None: whatever is there). The temp file never outlives
    a failure."""
    tmp = f".{name}.{secrets.token_hex(6)}{TEMP_SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=dir_fd)
    try:
        prepare(fd)
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if expected_sha is not None and _current_sha(name, dir_fd, size) != expected_sha:
            raise FatalError(changed)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    finally:
        os.close(fd)


def replace_in(dir_fd: int, name: str, data: bytes, mode: int) -> None:
    """Write `name` in the opened folder atomically over whatever is there (a link or a FIFO put in its
    place is replaced, never followed or opened), its mode set through its own descriptor."""
    _swap_in(dir_fd, name, data, 0o600, lambda fd: os.fchmod(fd, mode), None, 0, "")


def _current_sha(name: str, dir_fd: int, size: int) -> str:
    """The sha256 of `name` as it is now, if it is still a regular file of the `size` bytes read
    earlier; "changed" when it is anything else (a FIFO, a device, a file of another size: never
    waited on, never read past `size`), "missing" when there is nothing of that name."""
    try:
        fd = reader.open_regular(name, dir_fd)
    except FileNotFoundError:
        return "missing"
    except (reader.NotRegular, OSError):  # (a FIFO, or a link put in its place: never followed)
        return "changed"
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(handle.fileno()).st_size != size:
            return "changed"
        data = handle.read(size + 1)  # (one more: a file that grew since the fstat)
        return hashlib.sha256(data).hexdigest() if len(data) == size else "changed"


def remove_stale_temps(targets: list[Path]) -> None:
    """Temp files left by a writer that was killed (callers hold the write lock, so none is live)."""
    for target in targets:
        for leftover in target.parent.glob(f".{target.name}.*{TEMP_SUFFIX}"):
            with contextlib.suppress(OSError):
                if leftover.is_file() and not leftover.is_symlink():
                    leftover.unlink()


def private_dirs(folder: Path) -> None:
    """Make `folder` and its missing parents 0700 whatever the umask (a umask of 002, usual for
    users with a private group, would leave them group-writable, and senpi-guard distrusts that).
    As root, never in a folder another user could change (io/made.foreign: one line)."""
    problem = made.foreign(folder)
    if problem is not None:
        raise FatalError(made.foreign_text(folder, problem))
    made.record(made.make_private(folder))  # (recorded: `uninstall` takes away the empty ones it made)


def write_private(path: Path, data: bytes) -> None:
    """Atomic write for senpi-guard's own files (state, backups); an OS failure is one line."""
    try:
        private_dirs(path.parent)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise os_error(exc, "write", path, "free space or fix that folder's permissions, then retry") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except OSError as exc:
        Path(tmp_name).unlink(missing_ok=True)
        raise os_error(exc, "write", path, "free space or fix that folder's permissions, then retry") from exc
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def place(folder: Path, name: str, data: bytes, expected: bytes | None, over_any: bool = False) -> None:
    """Write `folder/name` atomically (a temp file beside it, renamed relative to the folder opened,
    made when missing: io/folders), unless what is there is no longer `expected` (None: nothing;
    `over_any`: whatever it is, a link or a FIFO replaced, never followed or read). The new file
    takes the folder's owner when root writes into another user's folder. For files outside a
    package (the extension in an agent dir, audit's plot); an OS failure is one line."""
    target = folder / name
    try:
        with folders.opened(folder, create=True) as dir_fd:
            owner = os.fstat(dir_fd)

            def prepare(fd: int) -> None:
                if os.geteuid() == 0 and owner.st_uid != 0:
                    os.fchown(fd, owner.st_uid, owner.st_gid)

            _swap_in(
                dir_fd,
                name,
                data,
                0o644,
                prepare,
                None if over_any else "missing" if expected is None else hashlib.sha256(expected).hexdigest(),
                len(expected or b""),
                f"{target} changed while senpi-guard was working on it; nothing was written: run the command again",
            )
    except OSError as exc:
        raise os_error(exc, "write", target, "free space or fix the folder's permissions, then retry") from exc


def take(folder: Path, name: str, expected: bytes) -> None:
    """Remove `folder/name` (relative to the folder opened), unless it is no longer `expected`."""
    target = folder / name
    try:
        with folders.opened(folder) as dir_fd:
            if dir_fd is None or _current_sha(name, dir_fd, len(expected)) != hashlib.sha256(expected).hexdigest():
                raise FatalError(
                    f"{target} changed while senpi-guard was working on it; it was left as it is: run the command again"
                )
            os.unlink(name, dir_fd=dir_fd)
    except OSError as exc:
        raise os_error(exc, "remove", target, "fix the folder's permissions, then retry") from exc


def read_in(folder: Path, name: str) -> bytes | None:
    """The bytes of `folder/name` opened as `place` would write it (None: absent); never waits on a
    FIFO and never follows a link in the file's own place."""
    try:
        with folders.opened(folder) as dir_fd:
            if dir_fd is None:
                return None
            try:
                fd = reader.open_regular(name, dir_fd)  # (a FIFO or a device: never opened)
            except FileNotFoundError:
                return None
    except reader.NotRegular as exc:
        raise FatalError(
            f"{folder / name} is not a regular file (a FIFO or a device?); senpi-guard "
            "never reads or replaces it: move it away, then retry"
        ) from exc
    except OSError as exc:
        raise os_error(exc, "read", folder / name, "fix the permissions of that folder, then retry") from exc
    with os.fdopen(fd, "rb") as handle:
        reader.check_size(folder / name, reader.EXTENSION, os.fstat(handle.fileno()).st_size)
        return reader.bounded(handle, folder / name, reader.EXTENSION)
