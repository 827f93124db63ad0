"""The edit kind "remove-duplicate-property": in an object literal of the target function that gives
one property twice (a hand-applied fix added a second one: the later one silently wins), keep the
one whose value is senpi's own and blank out the others. Pure bytes -> bytes, found by syntax tree.

Every original line keeps its number: a removed property becomes as many empty lines as it had. What
was removed is recorded in the edit's region (`restore` lines), so that removing the edit gives the
original bytes back exactly."""

from __future__ import annotations

import base64
import re
from typing import NamedTuple

from tree_sitter import Node

from senpi_guard.core import jssyntax
from senpi_guard.errors import FatalError

RESTORE = "// senpi-guard:restore"
RESTORE_RE = re.compile(rb"^// senpi-guard:restore (\d+) (\d+) ([A-Za-z0-9+/=]+)\r?$", re.MULTILINE)


class Removal(NamedTuple):
    start: int  # where the removed text was in the original
    text: bytes  # what was removed (a property, its comma, its line when it had one to itself)
    line: int  # its first line, for messages

    @property
    def blank(self) -> bytes:
        return b"\n" * self.text.count(b"\n")


def _key(pair: Node) -> str | None:
    key = pair.child_by_field_name("key")
    if key is None:
        return None
    text = (key.text or b"").decode("utf-8", "replace")
    return text.strip("\"'") if key.type in ("property_identifier", "string", "identifier") else None


def _objects(root: Node):
    """Every object literal, in source order (its own stack: deep nesting must not exhaust Python's)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "object":
            yield node
        stack.extend(reversed(node.named_children))


def _span(source: bytes, pair: Node) -> tuple[int, int]:
    """The pair, its following comma, and its whole line(s) when nothing else is on them."""
    start, end = pair.start_byte, pair.end_byte
    after = pair.next_sibling
    if after is not None and after.type == ",":
        end = after.end_byte
    line_start = source.rfind(b"\n", 0, start) + 1
    if not source[line_start:start].strip():
        start = line_start
        line_end = source.find(b"\n", end)
        if line_end != -1 and not source[end:line_end].strip():
            end = line_end + 1
    return start, end


def duplicates(source: bytes, function: str, prop: str, keep: str, where: str) -> list[Removal]:
    """The second (third…) `prop` of each object literal in `function` that gives it twice: every
    one but the one whose value is `keep`. A property given twice where none is senpi's own value
    is refused (senpi-guard cannot tell which to keep)."""
    tree = jssyntax.parse(source)
    defs = jssyntax.find_definitions(tree, function)
    if len(defs) != 1:
        raise FatalError(f"{where}: expected one definition of {function}, found {len(defs)}; reinstall senpi")
    node = tree.root_node.descendant_for_byte_range(defs[0].span.start, defs[0].span.end)
    removals = []
    for obj in _objects(node):
        pairs = [c for c in obj.named_children if c.type == "pair" and _key(c) == prop]
        if len(pairs) < 2:
            continue
        own = [p for p in pairs if (p.child_by_field_name("value").text or b"").decode() == keep]
        if len(own) != 1:
            line = pairs[0].start_point[0] + 1
            raise FatalError(
                f"{where}:{line}: `{prop}` is given {len(pairs)} times and none of them is senpi's "
                f"own `{prop}: {keep}`; senpi-guard will not guess which to keep: reinstall senpi"
            )
        for pair in pairs:
            if pair is not own[0]:
                start, end = _span(source, pair)
                removals.append(Removal(start, source[start:end], pair.start_point[0] + 1))
    return sorted(removals)


def remove(source: bytes, removals: list[Removal]) -> bytes:
    out = bytearray(source)
    for removal in sorted(removals, reverse=True):
        out[removal.start : removal.start + len(removal.text)] = removal.blank
    return bytes(out)


def restore_lines(removals: list[Removal]) -> list[str]:
    """The region lines that let the edit be removed exactly (offsets into the edited file)."""
    lines, shift = [], 0
    for removal in sorted(removals):
        at = removal.start - shift
        lines.append(f"{RESTORE} {at} {len(removal.blank)} {base64.b64encode(removal.text).decode()}")
        shift += len(removal.text) - len(removal.blank)
    return lines


def restore(source: bytes, region: bytes) -> bytes:
    """Put back what the region's restore lines say was removed (`source` without the region)."""
    out = bytearray(source)
    for match in sorted(RESTORE_RE.finditer(region), key=lambda m: -int(m[1])):
        at, length, text = int(match[1]), int(match[2]), base64.b64decode(match[3])
        out[at : at + length] = text
    return bytes(out)
