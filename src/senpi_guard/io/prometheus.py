"""Prometheus' text exposition format, as node_exporter's textfile collector reads it, and the
atomic write of `DIR/senpi_guard.prom`.

`status` and `audit` write different metric families into the one file: each replaces its own
families and keeps the other's, under an exclusive lock on DIR, so a fleet may run both from cron.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard.errors import FatalError
from senpi_guard.io.visible import visible
from senpi_guard.io.write import os_error

FILE_NAME = "senpi_guard.prom"
FILE_MODE = 0o644  # node_exporter usually runs as its own user: it must read the file


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
    """An fd of `folder`, held under an exclusive lock (the other command waits for its write)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        check_folder(folder)
        raise os_error(exc, "open", f"the metrics folder {folder}", "fix its permissions, or pass another") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def write_textfile(folder: Path, families: list[Family], theirs: frozenset[str]) -> Path:
    """Write `folder/senpi_guard.prom` atomically (a temp file beside it, whose name node_exporter
    skips, then a rename; mode 0644): these families, and the families named in `theirs` as the
    file held them. An OS failure is one line; nothing is changed then."""
    target = folder / FILE_NAME
    with _locked(folder):
        try:
            old = _blocks(target.read_text(encoding="utf-8"))
        except FileNotFoundError:
            old = {}
        except (OSError, UnicodeDecodeError):  # (unreadable: ours is rewritten whole)
            old = {}
        kept = "".join(text for name, text in old.items() if name in theirs)
        data = (render(families) + kept).encode()
        try:
            fd, tmp_name = tempfile.mkstemp(prefix=f".{FILE_NAME}.", suffix=".tmp", dir=folder)
        except OSError as exc:
            where = f"the metrics folder {folder}"
            raise os_error(exc, "write into", where, "fix its permissions or pass another folder") from exc
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fchmod(handle.fileno(), FILE_MODE)
                os.fsync(handle.fileno())
            os.replace(tmp_name, target)
        except OSError as exc:
            Path(tmp_name).unlink(missing_ok=True)
            raise os_error(exc, "write", target, "free space or fix that folder's permissions, then retry") from exc
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
    return target
