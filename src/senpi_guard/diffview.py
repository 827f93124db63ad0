"""A unified diff that stays readable when compiled lines are very long (clipped to a window around
what changed; `whole` keeps every line as it is, for -vv)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator

WIDTH = 160
LEAD = 50


def _clip(line: str, column: int) -> str:
    if len(line) <= WIDTH:
        return line
    start = max(0, min(column - LEAD, len(line) - WIDTH))
    end = start + WIDTH
    return ("…" if start else "") + line[start:end] + ("…" if end < len(line) else "")


def _first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


# Control characters would drive the reader's terminal (colours, cursor moves, a cleared screen).
_VISIBLE = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0A, 0x20), 0x7F]}
_VISIBLE.update({c: f"\\u{c:04x}" for c in range(0x80, 0xA0)})


def visible(text: str) -> str:
    return text.translate(_VISIBLE)


def window_diff(label: str, old: bytes, new: bytes, whole: bool = False) -> str:
    old_lines = old.decode("utf-8", "replace").splitlines()
    new_lines = new.decode("utf-8", "replace").splitlines()
    diff = difflib.unified_diff(old_lines, new_lines, f"a/{label}", f"b/{label}", n=1, lineterm="")
    return "".join(f"{visible(line)}\n" for line in (diff if whole else _windowed(diff)))


def _windowed(lines: Iterable[str]) -> Iterator[str]:
    removed: list[str] = []
    added: list[str] = []

    def flush() -> Iterator[str]:
        columns = [_first_difference(a, b) for a, b in zip(removed, added, strict=False)]
        for index, body in enumerate(removed):
            yield "-" + _clip(body, columns[index] if index < len(columns) else 0)
        for index, body in enumerate(added):
            yield "+" + _clip(body, columns[index] if index < len(columns) else 0)
        removed.clear()
        added.clear()

    for line in lines:
        if line.startswith("-") and not line.startswith("---"):
            if added:
                yield from flush()
            removed.append(line[1:])
        elif line.startswith("+") and not line.startswith("+++"):
            added.append(line[1:])
        else:
            yield from flush()
            yield line if line.startswith(("---", "+++", "@@")) else " " + _clip(line[1:], 0)
    yield from flush()
