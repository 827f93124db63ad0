"""Finding and opening senpi session files (a FIFO or a device is refused, never waited on)."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any, BinaryIO

from senpi_guard.errors import FatalError
from senpi_guard.io import reader


def session_files(agent_dirs: list[Path]) -> list[Path]:
    """Every session file under the agent dirs' sessions/ folders, oldest first."""
    found = []
    for folder in dict.fromkeys(agent_dirs):
        root = folder / "sessions"
        for path in root.glob("*/*.jsonl") if root.is_dir() else ():
            try:
                st = path.stat()
            except OSError:  # gone since the listing (or a dangling link): not a session to audit
                continue
            if stat.S_ISREG(st.st_mode):
                found.append((st.st_mtime, path))
    return [path for _, path in sorted(found, key=lambda pair: pair[0])]


def header_of(path: Path, first: bytes) -> dict[str, Any]:
    try:
        header = json.loads(first)
    except (ValueError, UnicodeDecodeError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("type") != "session":
        raise FatalError(
            f"{path} is not a senpi session file (its first line is not a "
            '{"type":"session"} header); pass a file from an agent dir\'s sessions/ folder'
        )
    return header


def not_a_file(path: Path, mode: int) -> str | None:
    """Why `path` (of this st_mode) is no session file, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return f"{path} is a directory; pass one session .jsonl file from it, or use --latest or --all"
    what = (
        "is a named pipe, not a session file"
        if stat.S_ISFIFO(mode)
        else "is a character device, not a regular file"
        if stat.S_ISCHR(mode)
        else "is a block device, not a regular file"
        if stat.S_ISBLK(mode)
        else "is a socket, not a regular file"
        if stat.S_ISSOCK(mode)
        else "is not a regular file"
    )
    return f"{path} {what}; pass a senpi session .jsonl file, or use --latest"


def open_session(path: Path) -> BinaryIO:
    """The session file, for reading (io/reader: a FIFO or a device is refused, never waited on;
    read it by `reader.lines`, each line under the session line cap)."""
    try:
        return reader.opened(path, reader.SESSION)
    except OSError as exc:
        raise FatalError(f"cannot open session {path}: {exc.strerror}; check its permissions") from exc


def read_header(path: Path) -> dict[str, Any]:
    with open_session(path) as handle:
        return header_of(path, reader.line(handle, path, reader.SESSION))
