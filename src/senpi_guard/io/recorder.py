"""What one run consulted and whether it changed anything: the inputs of a remembered answer
(io/answers). While a Recorder is on, the `os`, `io` and `builtins` functions through which Python
code reaches the file system (and `pathlib`, `os.path`, `shutil` and `glob` through them) note each
path they stat, open, list or resolve, each process they ask about, and each write or child process.

Each is known as io/inputs says. Timestamps are coarse: a file changed twice within one clock tick
keeps its identity, so an opened file changed within RACY_S of the run is also known by a hash of
its content. A run is not rememberable at all when it wrote, started a process, signalled one, or
read what is not a file (/proc, /sys, /dev): `refused` says why."""

from __future__ import annotations

import builtins
import errno
import io
import os
import stat
import time
from typing import TYPE_CHECKING

from senpi_guard.io.inputs import (
    REAL,
    Entries,
    Identity,
    changed,
    content_hash,
    identity,
    identity_of,
    kind_of,
    names_hash,
    real_open,
    stat_or_error,
    typed_hash,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

RACY_S = 2.0  # an input changed this recently may change again without a new identity
# an open refused for what the path is (a link where O_NOFOLLOW says none, a file where O_DIRECTORY
# wants a folder): its identity, which `changed` compares, says so too; another errno is kept as one
PATH_SHAPED = (errno.ELOOP, errno.ENOTDIR)
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
    "chdir",  # (not a write, but what every relative path after it means)
    "mkfifo",
    "mknod",
    "setxattr",
    "removexattr",
)
SPAWNED = "started a process"
SPAWNS = ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve", "execvp", "execvpe")


class Recorder:
    """Inputs and refusals of the code run between start() and stop() (one at a time per process)."""

    def __init__(self) -> None:
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
        self._cwd = os.getcwd()

    # --- what the wrapped functions note

    def refuse(self, why: str) -> None:
        if self.refused is None and not self.paused:
            self.refused = why
            self.stop()  # (nothing of this run will be remembered: the rest of it runs unwatched)

    def expire(self, when: float) -> None:
        """An answer read here is good until `when` (wall clock): so is what this run says."""
        self.expires = when if self.expires is None else min(self.expires, when)

    def _abs(self, path: Any, dir_fd: int | None = None) -> str | None:
        if self.paused or self.refused or isinstance(path, int):
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
        return full

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
            if error is not None and error.errno in PATH_SHAPED:  # (what the path is, not a failure)
                table.setdefault(full, identity(full, follow))
            else:
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

    def note_listing(self, path: Any, typed: bool = False) -> None:
        """A folder listed (`typed`: by scandir, whose entries say what each is)."""
        full = self._abs(os.curdir if path is None else path)
        if full is None:
            return
        seen = self.listings.get(full)
        if seen is None:
            self.listings[full] = typed_hash(full) if typed else names_hash(full)
        elif typed and not seen.startswith("t:"):  # (listed by name before: the names still those)
            if names_hash(full) != seen:
                self.refuse("a folder changed during the run")
            self.listings[full] = typed_hash(full)

    def note_write(self, what: str, path: Any = None, dir_fd: int | None = None) -> None:
        full = self._abs(path, dir_fd) if path is not None and not isinstance(path, int) else None
        self.refuse(f"{what} {full or ''}".strip())

    # --- the wrappers

    def start(self) -> Recorder:
        import subprocess

        real = REAL
        wrapped_open = self._wrapped_open()
        for module, name, value in (
            (os, "stat", self._wrapped_stat(real["stat"], True)),
            (os, "lstat", self._wrapped_stat(real["lstat"], False)),
            (os, "listdir", self._wrapped_listing(real["listdir"], entries=False)),
            (os, "scandir", self._wrapped_listing(real["scandir"], entries=True)),
            (os, "open", self._wrapped_os_open(real["open"])),
            (os, "kill", self._wrapped_kill(real["kill"])),
            (os.path, "realpath", self._kinds_only(os.path.realpath)),
            (os, "access", self._wrapped_by_stat(real["access"], follow=True)),
            (os, "readlink", self._wrapped_by_stat(real["readlink"], follow=False)),
            (builtins, "open", wrapped_open),
            (io, "open", wrapped_open),
            (subprocess.Popen, "_execute_child", self._refusing(SPAWNED, subprocess.Popen._execute_child)),
            *((os, name, self._refusing(f"{name}:", getattr(os, name))) for name in WRITES if hasattr(os, name)),
            *((os, name, self._refusing(SPAWNED, getattr(os, name))) for name in SPAWNS if hasattr(os, name)),
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

    def _wrapped_by_stat(self, real: Callable, follow: bool) -> Callable:
        """`access` and `readlink`: what they answer follows from the path's identity (and ids)."""

        def wrapper(path, *args, **kwargs):
            if kwargs.get("dir_fd") is not None:
                self.refuse("an access or readlink relative to a folder descriptor")
            followed = follow and kwargs.get("follow_symlinks", True)
            self.note_stat(path, followed, *stat_or_error(REAL["stat" if followed else "lstat"], path))
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

    def _wrapped_listing(self, real: Callable, entries: bool) -> Callable:
        """`listdir`, or `scandir` (`entries`: its listing typed, an entry's stat noted as it is asked)."""

        def wrapper(path=None):
            if isinstance(path, int):
                self.refuse("a listing of a folder descriptor")
            self.note_listing(path, typed=entries)
            listing = real(os.curdir if path is None else path)
            return Entries(listing, self) if entries else listing

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
        real = real_open

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

    def _refusing(self, what: str, real: Callable) -> Callable:
        """A write (noted once it happened: one that raised changed nothing), or a process (refused
        before it starts; it still starts: the run goes on, unremembered)."""
        recorder, before = self, what == SPAWNED

        def wrapper(*args, **kwargs):
            if before:
                recorder.refuse(what)
                return real(*args, **kwargs)
            result = real(*args, **kwargs)
            recorder.note_write(what, args[0] if args else None, kwargs.get("dir_fd"))
            return result

        return wrapper

    # --- the end of the run

    def settled(self) -> bool:
        """Whether every input is still what the run saw (else it changed during the run: nothing
        to remember), with the content of racy files taken again."""
        if self.refused:
            return False
        what = changed(self.stats, self.lstats, self.opened, self.listings)
        if what is not None:
            self.refuse(f"{what} changed during the run")
        return what is None
