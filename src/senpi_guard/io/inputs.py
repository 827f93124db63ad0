"""What an input of a remembered answer is (io/answers, io/recorder): a path's identity, a regular
file's content, a folder's entries, a process alive or not; each taken with the real `os` functions,
never the ones a Recorder wraps.

An identity is what a stat gives of a file: device, inode, type and mode, owners, link count, size,
mtime and ctime (or the errno of a path that is not there). A folder looked at for what it is (on
the way to a path, or for its owner and mode) is known by its kind alone: device, inode, mode and
owners; its times and link count change whenever its entries do."""

from __future__ import annotations

import builtins
import os
import stat
from typing import TYPE_CHECKING

try:  # (the front door's path: hashlib would load OpenSSL for a hash the interpreter has built in)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from senpi_guard.io.recorder import Recorder  # (the one that notes what an entry is asked)

Identity = list[int]

# the real functions, taken before any Recorder wraps them (the recorder's own reads go through these)
_stat, _listdir, _scandir, _kill = os.stat, os.listdir, os.scandir, os.kill
real_open, _os_open = builtins.open, os.open
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
    with real_open(fd, "rb") as handle:
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


def typed_hash(path: str) -> str:
    """A folder's entries with what each is (a link, a folder, a file or other, as the listing
    itself says, not following links), as one hash marked `t:`: what `os.scandir` answers of its
    entries without a stat of each (`!errno` when it cannot be listed)."""
    try:
        with _scandir(path) as listing:
            typed = sorted(f"{_type_of(entry)}{entry.name}" for entry in listing)
    except OSError as exc:
        return f"!{exc.errno}"
    return "t:" + blake2b("\0".join(typed).encode("utf-8", "surrogateescape"), digest_size=20).hexdigest()


def _type_of(entry: os.DirEntry) -> str:
    try:
        if entry.is_symlink():
            return "l"
        return "d" if entry.is_dir(follow_symlinks=False) else "f" if entry.is_file(follow_symlinks=False) else "o"
    except OSError:
        return "?"


def listing_hash(path: str, seen: str) -> str:
    """The listing now, taken as `seen` was (typed or by names alone)."""
    return typed_hash(path) if seen.startswith("t:") else names_hash(path)


def alive(pid: int) -> bool:
    try:
        _kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # (there, another user's)
    return True


def changed(
    stats: dict[str, Identity], lstats: dict[str, Identity], opened: dict[str, str | None], listings: dict[str, str]
) -> str | None:
    """What of these inputs is no longer as noted (None: nothing): an identity, a racy file's
    content (`opened`: its hash, None for a file known by identity alone), a folder's entries."""
    for table, follow in ((stats, True), (lstats, False)):
        if any(identity(path, follow, seen) != seen for path, seen in table.items()):
            return "an input"
    if any(seen is not None and content_hash(path) != seen for path, seen in opened.items()):
        return "a file"
    if any(listing_hash(path, seen) != seen for path, seen in listings.items()):
        return "a folder"
    return None


def stat_or_error(real: Callable, path: Any) -> tuple[os.stat_result | None, OSError | None]:
    try:
        return real(path), None
    except (OSError, TypeError, ValueError) as exc:
        return None, exc if isinstance(exc, OSError) else OSError(0, str(exc))


class Entries:
    """os.scandir's iterator (its listing noted typed: what an entry is, not following links, is
    known from it); an entry's stat is noted when what is asked goes beyond that: its stat, its
    inode, or its type through a link."""

    def __init__(self, real: Any, recorder: Recorder) -> None:
        self._real, self._recorder = real, recorder

    def __iter__(self) -> Iterator[_Entry]:
        return self

    def __next__(self) -> _Entry:
        return _Entry(next(self._real), self._recorder)

    def __enter__(self) -> Entries:
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
        lstat = REAL["lstat"]
        self._recorder.note_stat(self.path, False, *stat_or_error(lstat, self.path))
        if follow:
            self._recorder.note_stat(self.path, True, *stat_or_error(REAL["stat"], self.path))

    def _typed(self, follow: bool) -> None:
        """A type asked: the typed listing knows it, unless it is asked through a link."""
        if follow and self._real.is_symlink():
            self._noted(True)

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        self._typed(follow_symlinks)
        return self._real.is_dir(follow_symlinks=follow_symlinks)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        self._typed(follow_symlinks)
        return self._real.is_file(follow_symlinks=follow_symlinks)

    def is_symlink(self) -> bool:
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
