"""How senpi-guard talks to a person: verbosity, colour (only on a terminal, never with NO_COLOR),
paths shortened to what the reader needs, and progress lines for steps that take a while."""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from senpi_guard.core.states import SETTLED, State
from senpi_guard.io.visible import visible  # noqa: F401 (the views escape a user's text with it)

BAD = frozenset({State.ERROR, State.DRIFTED, State.UNSUPPORTED})
_CODES = {"good": "32", "warn": "33", "bad": "31", "dim": "2"}


class _Settings:
    verbosity = 0  # -1 quiet, 0 normal, 1 verbose (-v), 2 and more: whole lines too (-vv)
    color = "auto"  # auto, always, never (--color)


settings = _Settings()


def configure(verbosity: int, color: str = "auto") -> None:
    settings.verbosity = verbosity
    settings.color = color


def verbose() -> bool:
    return settings.verbosity > 0


def very_verbose() -> bool:
    """-vv: as -v, and a diff's very long compiled lines shown whole (-v clips them)."""
    return settings.verbosity > 1


def quiet() -> bool:
    return settings.verbosity < 0


def colour_on(stream=None) -> bool:
    """--color always/never decide; auto: never with NO_COLOR or a dumb terminal, always with
    FORCE_COLOR, else only on a terminal."""
    if settings.color != "auto":
        return settings.color == "always"
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def paint(text: str, kind: str, stream=None) -> str:
    if kind not in _CODES or not colour_on(stream):
        return text
    return f"\033[{_CODES[kind]}m{text}\033[0m"


def state_text(state: str) -> str:
    kind = "good" if state in SETTLED else "bad" if state in BAD else "warn"
    return paint(str(state), kind)


def short(path: Path | str, base: Path | None) -> str:
    """A path relative to `base` when it lies inside it (the full path with -v)."""
    path = Path(path)
    if base is not None and not verbose():
        try:
            return str(path.relative_to(base))
        except ValueError:
            pass
    return str(path)


def progress(message: str) -> None:
    """Say what a slow step is about to do (stderr; silent with -q)."""
    if not quiet():
        print(paint(message, "dim", sys.stderr), file=sys.stderr, flush=True)


_pending = threading.local()  # (per thread: the watcher's rounds say nothing, a command's do)


@contextmanager
def said_if_slow(message: str) -> Iterator[None]:
    """A progress line said only when the slow step it names begins inside (`slow_step_begins`,
    where node is started): a proof remembered, or nothing to do, says nothing it did not do."""
    outer = getattr(_pending, "message", None)
    _pending.message = message
    try:
        yield
    finally:
        _pending.message = outer


def slow_step_begins() -> None:
    """The slow step the innermost `said_if_slow` names begins: its line is said, once."""
    message = getattr(_pending, "message", None)
    if message:
        _pending.message = None
        progress(message)


SI_UNITS = ("B", "kB", "MB", "GB", "TB")


def size(n: float) -> str:
    """A size in bytes in SI units (1 kB = 1,000 B): whole bytes below 1 kB, then three figures
    ("9.5 kB", "199 kB", "1.8 MB"), rounded half up in whole numbers. The extension's status line
    says it the same way (`__senpiGuardSI` in patches/directive-dedupe/extension-view.js)."""
    n = max(0, int(n + 0.5))
    if n < 1000:
        return f"{n} B"
    for unit in range(1, len(SI_UNITS)):
        step = 1000**unit
        tenths = (n * 10 + step // 2) // step
        if tenths < 1000:
            return f"{tenths // 10}.{tenths % 10} {SI_UNITS[unit]}"
        whole = (n + step // 2) // step
        if whole < 1000 or unit == len(SI_UNITS) - 1:
            return f"{whole:,} {SI_UNITS[unit]}"
    raise AssertionError("unreachable")


def width() -> int:
    """The terminal's width: COLUMNS when set, the terminal's own, else 80 (a pipe, a file)."""
    return max(40, shutil.get_terminal_size((80, 24)).columns)


_WORDS = re.compile(r"`[^`]*`\S*|\S+")  # (a command in backquotes is one word: never broken)


def field(label: str, text: str, columns: int | None = None, label_width: int = 9, kind: str = "") -> list[str]:
    """`  label     text`, the prose wrapped at the terminal's width under its first word (`kind`
    paints the label). A word wider than the room left (a path, a command) is never broken: it goes
    on a line of its own."""
    indent = 2 + max(label_width, len(label)) + 1
    head = "  " + (paint(label, kind) if kind else label) + " " * (indent - 2 - len(label))
    return wrapped(text, head, " " * indent, columns, indent)


def wrapped(text: str, first: str, rest: str, columns: int | None = None, shown: int | None = None) -> list[str]:
    """`text` in lines of the terminal's width, the first after `first` (`shown` wide on screen),
    the others after `rest`; a word never broken (one wider than the room left: on a line alone)."""
    room = (columns or width()) - (len(first) if shown is None else shown)
    lines: list[str] = []
    current = ""
    for word in _WORDS.findall(text):
        if (current or not lines) and len(current) + bool(current) + len(word) > room:
            lines.append(current)  # (a first word wider than the room: the label stands alone)
            current = word
            room = (columns or width()) - len(rest)
        else:
            current = f"{current} {word}" if current else word
    lines.append(current)
    return [((rest if i else first) + line).rstrip() for i, line in enumerate(lines) if i or line or first.strip()]


def say(label: str, text: str, label_width: int = 9, kind: str = "") -> None:
    """Print a field (see `field`)."""
    for line in field(label, text, label_width=label_width, kind=kind):
        print(line)


def heading(lead: str, path: str, tail: str = "") -> None:
    """`lead  path  tail` on one line where it fits the terminal, else the path on a line of its own."""
    line = f"{lead}  {path}{f'  {tail}' if tail else ''}"
    if len(line) <= width():
        print(line)
    else:
        print(f"{lead}{f'  {tail}' if tail else ''}")
        print(f"  {path}")
