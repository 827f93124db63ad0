"""Answers remembered between runs, each under a key made of everything it was computed from (a
file's device, inode, size, mtime and ctime; content hashes), so that a changed input is a miss,
never a stale answer. Kept in senpi-guard's cache dir (`memo.json`: all of it can be computed
again, and `status` writes nowhere but there); a memo that cannot be read, is not senpi-guard's
own, or cannot be written only costs the next run the work again."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import platformdirs

from senpi_guard.errors import FatalError

APP = "senpi-guard"
KEEP = 16  # entries per kind (the newest kept)


def memo_file() -> Path:
    return Path(platformdirs.user_cache_dir(APP)) / "memo.json"


def file_key(path: str | Path) -> str | None:
    """What a file is now: its real path with device, inode, size, mtime and ctime (None: gone)."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return None
    return f"{real}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}"


def _load(path: Path) -> dict[str, Any]:
    """The memo when it is ours alone (owned by us, writable by no one else), else nothing: as root a
    memo another user could write must never decide anything."""
    from senpi_guard.io import made

    if made.foreign(path.parent) is not None:  # (as root: a cache in another user's folders is not used)
        return {}
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            if st.st_uid != os.geteuid() or st.st_mode & 0o022 or not stat.S_ISREG(st.st_mode):
                return {}
            parent = os.stat(path.parent)
            if parent.st_uid != os.geteuid() or parent.st_mode & 0o022:
                return {}
            data = json.loads(handle.read())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recall(kind: str, key: str | None) -> Any:
    """What was remembered for `key` (None when nothing was, or the key could not be made)."""
    if key is None:
        return None
    table = _load(memo_file()).get(kind)
    return table.get(key) if isinstance(table, dict) else None


def _writable(path: Path) -> bool:
    from senpi_guard.io import made

    return made.below_own(path.parent)


def remember(kind: str, key: str | None, value: Any) -> None:
    if key is None:
        return
    from senpi_guard.io.write import write_private

    path = memo_file()
    if not _writable(path) or _known(path, kind, key, value):
        return
    from senpi_guard.io.locks import memo_lock

    with memo_lock(path.parent):  # (another run's answer, added meanwhile, is kept)
        data = _load(path)
        table = data.get(kind) if isinstance(data.get(kind), dict) else {}
        if table.get(key) == value:
            return
        table.pop(key, None)
        table[key] = value
        data[kind] = dict(list(table.items())[-KEEP:])
        with contextlib.suppress(FatalError):
            write_private(path, json.dumps(data, sort_keys=False).encode())


def _known(path: Path, kind: str, key: str, value: Any) -> bool:
    """Whether the memo holds this answer already (nothing to write: no lock taken)."""
    table = _load(path).get(kind)
    return isinstance(table, dict) and table.get(key) == value


def forget(kind: str) -> None:
    """Drop every answer of one kind (a verdict that would now be different)."""
    from senpi_guard.io.locks import memo_lock
    from senpi_guard.io.write import write_private

    path = memo_file()
    if not _writable(path) or kind not in _load(path):  # (nothing to forget: no lock taken)
        return
    with memo_lock(path.parent):
        data = _load(path)
        if data.pop(kind, None) is not None:
            with contextlib.suppress(FatalError):
                write_private(path, json.dumps(data).encode())
