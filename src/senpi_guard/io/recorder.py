"""What one run consulted and whether it changed anything: the inputs of a remembered answer
(io/answers). While a Recorder is on, the `os`, `io` and `builtins` functions through which Python
code reaches the file system (and `pathlib`, `os.path`, `shutil` and `glob` through them) note each
path they stat, open, list or resolve, each process they ask about, and each write or child process.

An identity is what a stat gives of a file: device, inode, type and mode, owners, size, mtime and
ctime (or the errno of a path that is not there). Timestamps are coarse: a file changed twice
within one clock tick keeps its identity, so an opened file changed within RACY_S of the run is
also known by a hash of its content. A run is not rememberable at all when it wrote, started a
process, signalled one, or read what is not a file (/proc, /sys, /dev): `refused` says why."""

from __future__ import annotations

import builtins
import io
import os
import stat
import time
from typing import TYPE_CHECKING

try:  # (the front door's path: hashlib would load OpenSSL for a hash the interpreter has built in)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

RACY_S = 2.0  # an input changed this recently may change again without a new identity
NOT_FILES = ("/proc/", "/sys/", "/dev/")
QUIET_DEVICES = ("/dev/null", "/dev/tty")
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
WRITES = (
    "replace",
    "rename",
    "unlink",
    "remove",
    "rmdir",
    "mkdir",
    "chmod",
    "chown",
    "lchown",
    "utime",
    "symlink",
    "link",
    "truncate",
    "mkfifo",
    "mknod",
    "setxattr",
    "removexattr",
)
SPAWNS = ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve", "execvp", "execvpe")

Identity = list[int]

# the real functions, taken before any Recorder wraps them (the recorder's own reads go through these)
_stat, _listdir, _kill, _open, _os_open = os.stat, os.listdir, os.kill, builtins.open, os.open
REAL = {
    name: getattr(os, name) for name in ("stat", "lstat", "listdir", "scandir", "open", "kill", "access", "readlink")
}


def identity_of(st: os.stat_result) -> Identity:
    return [
        st.st_dev,
        st.st_ino,
        st.st_mode,
        st.st_uid,
        st.st_gid,
        st.st_nlink,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
    ]


def kind_of(st: os.stat_result) -> Identity:
    """What a folder is, not what is in it (no times, size or link count: its entries change them)."""
    return [st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_gid]


def identity(path: str, follow: bool = True, seen: Identity | None = None) -> Identity:
    """A path's identity now ([-errno] when it cannot be stat'ed), as much of it as `seen` holds."""
    try:
        st = _stat(path, follow_symlinks=follow)
    except OSError as exc:
        return [-(exc.errno or 1)]
    return kind_of(st) if seen is not None and len(seen) == 5 else identity_of(st)


def content_hash(path: str) -> str | None:
    """A regular file's content, as one hash (None: gone, or not a regular file, which is never
    opened for reading here: a FIFO would block)."""
    try:
        fd = _os_open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    with _open(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return blake2b(handle.read(), digest_size=20).hexdigest()


def names_hash(path: str) -> str:
    """A folder's entries (their names, sorted), as one hash; `!errno` when it cannot be listed."""
    try:
        names = sorted(_listdir(path))
    except OSError as exc:
        return f"!{exc.errno}"
    return blake2b("\0".join(names).encode("utf-8", "surrogateescape"), digest_size=20).hexdigest()


def alive(pid: int) -> bool:
    try:
        _kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # (there, another user's)
    return True


class Recorder:
    """Inputs and refusals of the code run between start() and stop() (one at a time per process)."""

    def __init__(self, ignore: Callable[[str], bool] = lambda path: False) -> None:
        self.ignore = ignore  # paths that are neither inputs nor writes (a lock file)
        self.stats: dict[str, Identity] = {}  # followed
        self.lstats: dict[str, Identity] = {}
        self.opened: dict[str, str | None] = {}  # path -> content hash taken at open when racy then
        self.listings: dict[str, str] = {}
        self.pids: dict[str, bool] = {}
        self.fds: dict[int, str] = {}  # what each descriptor this run opened is (for `dir_fd=`)
        self.paused = 0  # (aside(): bookkeeping that is neither input nor output, as a lock's)
        self.kind_only = 0  # (kinds_only(): the folders looked at are looked at for their kind alone)
        self.expires: float | None = None
        self.refused: str | None = None
        self.started = time.time()
        self._saved: list[tuple[Any, str, Any]] = []
        self._real = REAL
        self._real_open = _open
        self._cwd = os.getcwd()

    # --- what the wrapped functions note

    def refuse(self, why: str) -> None:
        if self.refused is None and not self.paused:
            self.refused = why

    def expire(self, when: float) -> None:
        """An answer read here is good until `when` (wall clock): so is what this run says."""
        self.expires = when if self.expires is None else min(self.expires, when)

    def _abs(self, path: Any, dir_fd: int | None = None) -> str | None:
        if self.paused or isinstance(path, int):
            return None  # (a descriptor: its path was noted when it was opened)
        try:
            text = os.fsdecode(os.fspath(path))
        except TypeError:
            return None
        if dir_fd is not None and not text.startswith("/"):
            if dir_fd not in self.fds:
                self.refuse("a path relative to a folder descriptor of unknown origin")
                return None
            full = os.path.join(self.fds[dir_fd], text)
        else:
            full = text if text.startswith("/") else os.path.join(self._cwd, text)
        if full.startswith(NOT_FILES) and full not in QUIET_DEVICES:
            self.refuse(f"read {full}, which is not a file")
        return None if self.ignore(full) else full

    def note_stat(
        self, path: Any, follow: bool, result: os.stat_result | None, error: OSError | None, dir_fd: int | None = None
    ) -> None:
        full = self._abs(path, dir_fd)
        if full is None:
            return
        table = self.stats if follow else self.lstats
        before = table.get(full)
        if result is None:
            table.setdefault(full, [-((error and error.errno) or 1)])
        elif self.kind_only and stat.S_ISDIR(result.st_mode):
            table.setdefault(full, kind_of(result))
        elif before is None or len(before) == 5:  # (the first full identity is the one kept)
            if before is not None and before != kind_of(result):
                self.refuse("an input changed during the run")
            table[full] = identity_of(result)

    def note_open(
        self, path: Any, handle_fd: int | None, error: OSError | None, dir_fd: int | None = None, follow: bool = True
    ) -> None:
        full = self._abs(path, dir_fd)
        if full is None:
            return
        table = self.stats if follow else self.lstats
        if handle_fd is None:
            table.setdefault(full, [-((error and error.errno) or 1)])
            return
        self.fds[handle_fd] = full
        st = os.fstat(handle_fd)
        if stat.S_ISDIR(st.st_mode):
            self.note_stat(full, follow, st, None)  # (a folder: for its kind alone under kinds_only)
            return
        if not stat.S_ISREG(st.st_mode):
            self.refuse(f"read {full}, which is not a regular file")
            return
        table.setdefault(full, identity_of(st))
        if full not in self.opened:
            racy = max(st.st_mtime_ns, st.st_ctime_ns) / 1e9 >= time.time() - RACY_S
            self.opened[full] = content_hash(full) if racy else None

    def note_listing(self, path: Any) -> None:
        full = self._abs(os.curdir if path is None else path)
        if full is not None and full not in self.listings:
            self.listings[full] = names_hash(full)

    def note_write(self, what: str, path: Any = None, dir_fd: int | None = None) -> None:
        if self.paused:
            return
        full = self._abs(path, dir_fd) if path is not None and not isinstance(path, int) else None
        if path is None or isinstance(path, int) or full is not None:
            self.refuse(f"{what} {full or ''}".strip())

    # --- the wrappers

    def start(self) -> Recorder:
        import subprocess

        real = self._real
        wrapped_open = self._wrapped_open()
        for module, name, value in (
            (os, "stat", self._wrapped_stat(real["stat"], True)),
            (os, "lstat", self._wrapped_stat(real["lstat"], False)),
            (os, "listdir", self._wrapped_listdir(real["listdir"])),
            (os, "scandir", self._wrapped_scandir(real["scandir"])),
            (os, "open", self._wrapped_os_open(real["open"])),
            (os, "kill", self._wrapped_kill(real["kill"])),
            (os.path, "realpath", self._kinds_only(os.path.realpath)),
            (os, "access", self._wrapped_by_stat(real["access"])),
            (os, "readlink", self._wrapped_by_lstat(real["readlink"])),
            (builtins, "open", wrapped_open),
            (io, "open", wrapped_open),
            (subprocess.Popen, "_execute_child", self._refusing("started a process", None)),
            *((os, name, self._refusing(f"{name}:", getattr(os, name))) for name in WRITES if hasattr(os, name)),
            *((os, name, self._refusing("started a process", None)) for name in SPAWNS if hasattr(os, name)),
        ):
            self._saved.append((module, name, getattr(module, name)))
            setattr(module, name, value)
        return self

    def stop(self) -> None:
        for module, name, value in reversed(self._saved):
            setattr(module, name, value)
        self._saved.clear()

    def _wrapped_stat(self, real: Callable, follow: bool) -> Callable:
        def wrapper(path, *, dir_fd=None, follow_symlinks=True):
            followed = follow and follow_symlinks
            try:
                result = (
                    real(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks) if follow else real(path, dir_fd=dir_fd)
                )
            except OSError as exc:
                self.note_stat(path, followed, None, exc, dir_fd)
                raise
            self.note_stat(path, followed, result, None, dir_fd)
            return result

        return wrapper

    def _wrapped_by_stat(self, real: Callable) -> Callable:
        def wrapper(path, *args, **kwargs):
            self.note_stat(path, kwargs.get("follow_symlinks", True), *_stat_or_error(self._real["stat"], path))
            return real(path, *args, **kwargs)

        return wrapper

    def _wrapped_by_lstat(self, real: Callable) -> Callable:
        def wrapper(path, *args, **kwargs):
            self.note_stat(path, False, *_stat_or_error(self._real["lstat"], path))
            return real(path, *args, **kwargs)

        return wrapper

    def _kinds_only(self, real: Callable) -> Callable:
        """A link resolved looks at each folder on the way for whether it is a link, nothing more."""

        def wrapper(*args, **kwargs):
            self.kind_only += 1
            try:
                return real(*args, **kwargs)
            finally:
                self.kind_only -= 1

        return wrapper

    def _wrapped_listdir(self, real: Callable) -> Callable:
        def wrapper(path=None):
            if isinstance(path, int):
                self.refuse("a listing of a folder descriptor")
            self.note_listing(path)
            return real(os.curdir if path is None else path)

        return wrapper

    def _wrapped_scandir(self, real: Callable) -> Callable:
        def wrapper(path=None):
            if isinstance(path, int):
                self.refuse("a listing of a folder descriptor")
            self.note_listing(path)
            return _Entries(real(os.curdir if path is None else path), self)

        return wrapper

    def _wrapped_os_open(self, real: Callable) -> Callable:
        def wrapper(path, flags, mode=0o777, *, dir_fd=None):
            if flags & WRITE_FLAGS:
                self.note_write("open for writing:", path, dir_fd)
                return real(path, flags, mode, dir_fd=dir_fd)
            follow = not flags & os.O_NOFOLLOW
            try:
                fd = real(path, flags, mode, dir_fd=dir_fd)
            except OSError as exc:
                self.note_open(path, None, exc, dir_fd, follow)
                raise
            self.note_open(path, fd, None, dir_fd, follow)
            return fd

        return wrapper

    def _wrapped_open(self) -> Callable:
        real = self._real_open

        def wrapper(file, mode="r", *args, **kwargs):
            if isinstance(file, int) or any(flag in mode for flag in "wax+"):
                if any(flag in mode for flag in "wax+"):
                    self.note_write("open for writing:", file)
                return real(file, mode, *args, **kwargs)
            try:
                handle = real(file, mode, *args, **kwargs)
            except OSError as exc:
                self.note_open(file, None, exc)
                raise
            self.note_open(file, handle.fileno(), None)
            return handle

        return wrapper

    def _wrapped_kill(self, real: Callable) -> Callable:
        def wrapper(pid, sig):
            if sig != 0 or self.paused:
                self.refuse("signalled a process")
                return real(pid, sig)
            try:
                real(pid, sig)
            except ProcessLookupError:
                self.pids.setdefault(str(pid), False)
                raise
            except OSError:
                self.pids.setdefault(str(pid), True)
                raise
            self.pids.setdefault(str(pid), True)

        return wrapper

    def _refusing(self, what: str, real: Callable | None) -> Callable:
        recorder = self

        def wrapper(*args, **kwargs):
            if real is None:  # (a process: refused before it starts)
                recorder.refuse(what)
                return _original(recorder, wrapper)(*args, **kwargs)
            result = real(*args, **kwargs)  # (raised: nothing changed)
            recorder.note_write(what, args[0] if args else None, kwargs.get("dir_fd"))
            return result

        return wrapper

    # --- the end of the run

    def settled(self) -> bool:
        """Whether every input is still what the run saw (else it changed during the run: nothing
        to remember), with the content of racy files taken again."""
        if self.refused:
            return False
        for table, follow in ((self.stats, True), (self.lstats, False)):
            if any(identity(path, follow, seen) != seen for path, seen in table.items()):
                self.refuse("an input changed during the run")
                return False
        if any(names_hash(path) != seen for path, seen in self.listings.items()):
            self.refuse("a folder changed during the run")
            return False
        for path, seen in self.opened.items():
            now = content_hash(path) if seen is not None else None
            if now != seen:
                self.refuse("a file changed during the run")
                return False
        return True


def _stat_or_error(real: Callable, path: Any) -> tuple[os.stat_result | None, OSError | None]:
    try:
        return real(path), None
    except (OSError, TypeError, ValueError) as exc:
        return None, exc if isinstance(exc, OSError) else OSError(0, str(exc))


def _original(recorder: Recorder, wrapper: Callable) -> Callable:
    """The function a refusing wrapper replaced (a process is still started: the run goes on)."""
    for module, name, value in recorder._saved:
        if getattr(module, name, None) is wrapper:
            return value
    raise RuntimeError("no original for a wrapped function")  # pragma: no cover


class _Entries:
    """os.scandir's iterator, its entries' stats noted (an entry's type may follow a link)."""

    def __init__(self, real: Any, recorder: Recorder) -> None:
        self._real, self._recorder = real, recorder

    def __iter__(self) -> Iterator[_Entry]:
        return self

    def __next__(self) -> _Entry:
        return _Entry(next(self._real), self._recorder)

    def __enter__(self) -> _Entries:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._real.close()


class _Entry:
    def __init__(self, real: os.DirEntry, recorder: Recorder) -> None:
        self._real, self._recorder = real, recorder
        self.name, self.path = real.name, real.path

    def _noted(self, follow: bool) -> None:
        lstat = self._recorder._real["lstat"]
        self._recorder.note_stat(self.path, False, *_stat_or_error(lstat, self.path))
        if follow:
            self._recorder.note_stat(self.path, True, *_stat_or_error(self._recorder._real["stat"], self.path))

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        self._noted(follow_symlinks)
        return self._real.is_dir(follow_symlinks=follow_symlinks)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        self._noted(follow_symlinks)
        return self._real.is_file(follow_symlinks=follow_symlinks)

    def is_symlink(self) -> bool:
        self._noted(False)
        return self._real.is_symlink()

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        self._noted(follow_symlinks)
        return self._real.stat(follow_symlinks=follow_symlinks)

    def inode(self) -> int:
        self._noted(False)
        return self._real.inode()

    def is_junction(self) -> bool:  # (3.12)
        return False

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"<recorded {self._real!r}>"
