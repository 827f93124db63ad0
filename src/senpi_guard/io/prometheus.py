"""Prometheus' text exposition format, as node_exporter's textfile collector reads it, and the
atomic write of `DIR/senpi_guard.prom`.

`status` and `audit` write different metric families into the one file: each replaces its own
families and keeps the other's, under an exclusive lock on DIR, so a fleet may run both from cron.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard.errors import FatalError
from senpi_guard.io import flock, folders, locks, reader, write
from senpi_guard.io.visible import visible
from senpi_guard.io.write import os_error

FILE_NAME = "senpi_guard.prom"
FILE_MODE = 0o644  # node_exporter usually runs as its own user: it must read the file
MAX_BYTES = 4 * 1024 * 1024  # the file as read back: status' and audit's families are a few kB


@dataclass
class Family:
    """One metric family: its name, HELP text, type and samples (labels, value)."""

    name: str
    help: str
    kind: str = "gauge"
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def add(self, value: float, **labels: str) -> None:
        self.samples.append((labels, value))


def _escape_label(value: str) -> str:
    # (a path or version from a user's files: no raw control character, no lone surrogate; a newline
    # the format escapes itself, and reads back as it was)
    value = "\n".join(visible(part) for part in value.split("\n"))
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def render(families: Iterable[Family]) -> str:
    """The families in the text format (a family without samples still says what it is)."""
    out = []
    for family in families:
        out.append(f"# HELP {family.name} {_escape_help(family.help)}")
        out.append(f"# TYPE {family.name} {family.kind}")
        for labels, value in family.samples:
            text = ",".join(f'{key}="{_escape_label(str(v))}"' for key, v in labels.items())
            out.append(f"{family.name}{{{text}}} {_number(value)}" if text else f"{family.name} {_number(value)}")
    return "\n".join(out) + "\n" if out else ""


def _blocks(text: str) -> dict[str, str]:
    """A file this module wrote, split into its families' text (by their `# HELP` lines)."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            current = blocks.setdefault(line.split(" ", 3)[2], [])
        if current is not None:
            current.append(line)
    return {name: "\n".join(lines) + "\n" for name, lines in blocks.items()}


def check_folder(folder: Path) -> None:
    """Refuse, in one line, a folder that cannot take the file (before any work is done)."""
    where = f"the metrics folder {folder}"
    if not folder.exists():
        raise FatalError(f"{where} does not exist; create it, or pass node_exporter's --collector.textfile.directory")
    if not folder.is_dir():
        raise FatalError(f"{where} is not a folder; pass the folder node_exporter's textfile collector reads")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise FatalError(f"{where} is not writable by this user; fix its permissions or pass another folder")


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[int]:
    """An fd of `folder` (opened as io/folders opens one: as root, no other user's link followed),
    held under an exclusive lock (the other command waits for its write), waited for at most the
    lock timeout: the folder's owner holding a flock on it never hangs root's cron."""
    where = f"the metrics folder {folder}"
    with contextlib.ExitStack() as stack:
        try:
            fd = stack.enter_context(folders.opened(folder))
        except FatalError:  # (a link of another user's on the way, say; unless check_folder says better)
            check_folder(folder)
            raise
        except OSError as exc:
            check_folder(folder)
            raise os_error(exc, "open", where, "fix its permissions, or pass another") from exc
        if fd is None:
            check_folder(folder)
            raise FatalError(f"{where} is gone; create it, or pass another")
        timeout = locks.lock_timeout()
        if not flock.flock_within(fd, timeout, refused=True):  # (NFS refuses flock: left unlocked, as the memos are)
            raise FatalError(
                f"{where} is locked by another process for over {timeout:g}s (another senpi-guard writing "
                "it, or a process of the folder's owner); nothing was written: stop that process or pass "
                "another folder"
            )
        yield fd


def _old_text(folder_fd: int) -> str:
    """The file as it is, read relative to the folder without following a link, never waiting on a
    FIFO and at most MAX_BYTES ("" when it is not a plain file of ours to read: rewritten whole)."""
    try:  # (the reader's look before it opens: a link, FIFO or device there is never opened to read)
        fd = reader.open_regular(FILE_NAME, folder_fd)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return ""


def write_textfile(folder: Path, families: list[Family], theirs: frozenset[str]) -> Path:
    """Write `folder/senpi_guard.prom` atomically (a temp file beside it, whose name node_exporter
    skips, then a rename relative to the folder opened; mode 0644): these families, and the families
    named in `theirs` as the file held them. A link, a FIFO or an oversized file in its place is
    replaced, never followed or read. An OS failure is one line; nothing is changed then."""
    target = folder / FILE_NAME
    with _locked(folder) as folder_fd:
        old = _blocks(_old_text(folder_fd))
        kept = "".join(text for name, text in old.items() if name in theirs)
        data = (render(families) + kept).encode()
        try:
            write.replace_in(folder_fd, FILE_NAME, data, FILE_MODE)
        except OSError as exc:
            raise os_error(exc, "write", target, "free space or fix that folder's permissions, then retry") from exc
    return target
