"""Undo edits: remove ours (each patch's region, then its edits kind by kind: core/patch/kinds/) or a
hand-applied hot-fix. Pure bytes -> bytes."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import NamedTuple

from senpi_guard.core import jssyntax
from senpi_guard.core.patch import kinds
from senpi_guard.core.patch.apply import (
    FILE_HEADER_RE,
    HEADER_RE,
    FileHeader,
    begin_line,
    end_line,
    header_re,
    read_file_header,
    sha256,
)
from senpi_guard.core.patch.definition import Patch
from senpi_guard.core.patch.kinds import EditError


class Recovered(NamedTuple):
    """What a target file is made of: whose edits it carries and the original bytes under them."""

    kind: str  # "plain", "ours" or "hand"
    base: bytes | None  # None when the unpatched bytes cannot be recovered
    header: FileHeader | None
    note: str  # why `base` is None; for a hand fix that can be removed, what apply will do


def recover(data: bytes, patch: Patch, house: Mapping[str, Patch] | None = None) -> Recovered:
    """`house`: every patch that may be on the file, by name (`patch` alone when None): their edits
    all come off, and the result must be the original the header names."""
    patches = dict(house or {}) | {patch.name: patch}
    header = read_file_header(data)
    if header is not None:
        try:
            return Recovered("ours", remove_all(data, header, patches), header, "")
        except ValueError as exc:  # EditError, or a syntax error once a payload is cut
            return Recovered("ours", None, header, str(exc))
    for fixer in (p for p in patches.values() if p.hand_fix_function and _declares(data, p.hand_fix_function)):
        try:
            base = remove_hand_fix(data, fixer.hand_fix_function)
            return Recovered(
                "hand", base, None, f"carries the hand-applied {fixer.hand_fix_function}; apply replaces it"
            )
        except ValueError as exc:  # EditError, JsSyntaxError
            return Recovered("hand", None, None, str(exc))
    return Recovered("plain", data, None, "")


def remove_all(data: bytes, header: FileHeader, patches: Mapping[str, Patch]) -> bytes:
    """The original bytes under every patch the header names (either format)."""
    unknown = [name for name in header.names if name not in patches]
    if unknown:
        raise EditError(f"it is patched by {', '.join(unknown)}, which this senpi-guard does not have")
    if header.legacy:  # one header per patch, each naming the bytes it saw: the last one on comes off first
        for name in reversed(header.names):
            data = _remove_legacy(data, patches[name], name)
        return data
    return _remove_composed(data, header, patches.__getitem__)


def undo(data: bytes, region: bytes, patch: Patch, legacy: bool = False) -> bytes:
    """Take patch's edits out of `data` (its region already cut out), kind by kind."""
    for kind in kinds.undo_order(patch.edits):
        data = kind.reverse(data, kinds.Undo(patch.name, region, patch.specs(kind.name), legacy))
    return data


def _remove_composed(data: bytes, header: FileHeader, patch_of: Callable[[str], Patch]) -> bytes:
    match = FILE_HEADER_RE.search(data)
    line_end = data.find(b"\n", match.end())
    data = data[: match.start()] + (b"" if line_end == -1 else data[line_end + 1 :])
    for name in reversed(header.names):
        data = _remove_one(data, patch_of(name))
    if sha256(data) != header.original_sha256:
        raise EditError(
            "removing the senpi-guard edits does not give back the original bytes "
            f"(sha256 {header.original_sha256[:12]}…)"
        )
    return data


def _remove_one(data: bytes, patch: Patch) -> bytes:
    """Undo one patch's edit over a buffer that may carry earlier patches (no sha to check)."""
    name = patch.name
    begin = re.compile(rb"^" + re.escape(begin_line(name).encode()) + rb"\r?\n", re.MULTILINE).search(data)
    if begin is None:
        raise EditError(f"the payload of {name} has no begin line")
    end_re = re.compile(rb"^" + re.escape(end_line(name).encode()) + rb"\r?(\n|$)", re.MULTILINE)
    end = end_re.search(data, begin.start())
    if end is None:
        raise EditError(f"the payload of {name} has no end line")
    start = begin.start()
    if not end.group(1):  # the region ended a file without a final newline: one was put before it
        start -= 2 if data[:start].endswith(b"\r\n") else 1 if data[:start].endswith(b"\n") else 0
    return undo(data[:start] + data[end.end() :], data[begin.start() : end.end()], patch)


def _declares(data: bytes, function: str) -> bool:
    """A top-level declaration by syntax tree; a mere mention in a comment or string is not one."""
    if function.encode() not in data:
        return False
    try:
        return bool(jssyntax.top_level_declarations(jssyntax.parse(data), function))
    except jssyntax.JsSyntaxError:
        return False


def remove_edit(patched: bytes, patch: Patch, name: str | None = None) -> bytes:
    """The original under a file only `patch` edited (`name`: it is named so in the file, else it
    is the one patch on it): today's format, or the old one (its edits, to the bytes it saw)."""
    header = read_file_header(patched)
    if header is None:
        raise EditError("no senpi-guard header line")
    if not header.legacy:
        others = [n for n in header.names if name is not None and n != name]
        if others:
            raise EditError(f"the file also carries {', '.join(others)}: take them off together")
        return _remove_composed(patched, header, lambda _: patch)
    return _remove_legacy(patched, patch, name)


def _remove_legacy(patched: bytes, patch: Patch, name: str | None = None) -> bytes:
    header = next((h for h in read_file_header(patched).entries if name is None or h.name == name), None)
    if header is None:
        raise EditError(f"no senpi-guard header line of {name}")
    start = header_re(header.name).search(patched).start()
    end_re = re.compile(rb"^" + re.escape(end_line(header.name).encode()) + rb"\r?(\n|$)", re.MULTILINE)
    end = end_re.search(patched, start)
    if end is None:
        raise EditError("the senpi-guard payload has no end line")
    region = patched[start : end.end()]
    only = len(HEADER_RE.findall(patched)) == 1  # (unnamed entry marks, format 9 and older, are its)
    cut = patched[:start] + patched[end.end() :]
    candidates = [cut]
    if not end.group(1) and cut.endswith(b"\n"):
        candidates.append(cut[:-2] if cut.endswith(b"\r\n") else cut[:-1])
    for candidate in candidates:
        try:
            base = undo(candidate, region, patch, legacy=only)
        except jssyntax.JsSyntaxError:
            continue
        if sha256(base) == header.original_sha256:
            return base
    raise EditError(
        f"removing the senpi-guard edit does not give back the original bytes (sha256 {header.original_sha256[:12]}…)"
    )


def remove_hand_fix(source: bytes, function: str) -> bytes:
    """Remove a hand-applied `function NAME(x) {…}` and unwrap every `NAME(expr)` call."""
    tree = jssyntax.parse(source)
    decls = jssyntax.top_level_declarations(tree, function)
    if len(decls) != 1:
        raise EditError(f"expected one top-level `function {function}`, found {len(decls)}")
    decl = decls[0]
    calls = [c for c in jssyntax.find_calls(tree, function) if not (decl.start_byte <= c.start_byte < decl.end_byte)]
    inside = sum(1 for c in jssyntax.find_calls(tree, function) if decl.start_byte <= c.start_byte < decl.end_byte)
    if not calls:
        raise EditError(f"`{function}` is declared but never called")
    edits: list[tuple[int, int, bytes]] = []
    for call in calls:
        args = [a for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]
        if len(args) != 1 or args[0].type == "spread_element":
            raise EditError(
                f"a call to `{function}` at line {call.start_point[0] + 1} does not take exactly one argument"
            )
        edits.append((call.start_byte, call.end_byte, source[args[0].start_byte : args[0].end_byte]))
    if jssyntax.mentions(tree, function) != 1 + len(calls) + inside:
        raise EditError(f"`{function}` is used other than as a call wrapping a value")
    line_start = source.rfind(b"\n", 0, decl.start_byte) + 1
    if source[line_start : decl.start_byte].strip():
        line_start = decl.start_byte
    line_end = source.find(b"\n", decl.end_byte)
    line_end = len(source) if line_end == -1 else line_end + 1
    if source[decl.end_byte : line_end].strip():
        line_end = decl.end_byte
    edits.append((line_start, line_end, b""))
    out = bytearray(source)
    for start, end, text in sorted(edits, reverse=True):
        out[start:end] = text
    cleaned = bytes(out)
    try:
        left = jssyntax.mentions(jssyntax.parse(cleaned), function)
    except jssyntax.JsSyntaxError as exc:
        raise EditError(f"the file no longer parses after removing `{function}` ({exc})") from exc
    if left:
        raise EditError(f"`{function}` is still referenced after removing it")
    return cleaned
