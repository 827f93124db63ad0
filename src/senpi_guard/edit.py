"""Pure byte transformations: patch a file, remove our patch, remove a hand-applied hot-fix.

No I/O here. Original line numbers are preserved: return expressions are wrapped on their own
lines and the payload goes after the last code line, just before `//# sourceMappingURL=`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import NamedTuple

from senpi_guard import jslocate
from senpi_guard.jslocate import ReturnSite

HEADER_RE = re.compile(
    rb"^// senpi-guard: (?P<name>[\w.-]+) v(?P<version>\d+) role=(?P<role>[\w-]+)"
    rb" original-sha256=(?P<sha>[0-9a-f]{64}) config-sha256=(?P<config>[0-9a-f]{16})\r?$",
    re.MULTILINE,
)
SOURCE_MAP_RE = re.compile(rb"^//# sourceMappingURL=", re.MULTILINE)
# A sequence expression needs its own parentheses inside a call; this tag says we added them.
SEQUENCE_TAG = b"/*senpi-guard:seq*/"


class Header(NamedTuple):
    name: str
    version: int
    role: str
    original_sha256: str
    config_sha256: str

    def line(self) -> str:
        return (f"// senpi-guard: {self.name} v{self.version} role={self.role}"
                f" original-sha256={self.original_sha256} config-sha256={self.config_sha256}")


class EditError(ValueError):
    """The bytes are not what this edit expects; the message says why."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def newline_of(source: bytes) -> bytes:
    crlf = source.count(b"\r\n")
    return b"\r\n" if crlf and crlf * 2 >= source.count(b"\n") else b"\n"


def end_line(name: str) -> str:
    return f"// senpi-guard: end {name}"


def wrap_expression(expr: bytes, node_type: str, template: str, params: Sequence[str | None]) -> bytes:
    if node_type == "sequence_expression":
        expr = SEQUENCE_TAG + b"(" + expr + b")"
    prefix, _, suffix = template.partition("{expr}")
    if "{param0}" in template:
        if not params or not params[0]:
            raise EditError("the wrapped function has no plain first parameter")
        prefix, suffix = (s.replace("{param0}", params[0]) for s in (prefix, suffix))
    return prefix.encode() + expr + suffix.encode()


def apply_edit(base: bytes, returns: Sequence[ReturnSite], template: str,
               params: Sequence[str | None], payload: str, header: Header) -> bytes:
    nl = newline_of(base)
    out = bytearray(base)
    for site in sorted(returns, key=lambda s: s.expr.start, reverse=True):
        expr = base[site.expr.start:site.expr.end]
        out[site.expr.start:site.expr.end] = wrap_expression(expr, site.node_type, template, params)
    lines = [header.line(), *payload.rstrip("\n").split("\n"), end_line(header.name)]
    region = nl.join(line.encode("utf-8") for line in lines) + nl
    maps = list(SOURCE_MAP_RE.finditer(out))
    if maps:
        at = maps[-1].start()
        out[at:at] = region
    elif not out or out.endswith(b"\n"):
        out += region
    else:
        out += nl + region[: -len(nl)]
    return bytes(out)


def read_header(source: bytes) -> Header | None:
    match = HEADER_RE.search(source)
    if match is None:
        return None
    return Header(match["name"].decode(), int(match["version"]), match["role"].decode(),
                  match["sha"].decode(), match["config"].decode())


def remove_edit(patched: bytes, wrap_callees: Sequence[str]) -> bytes:
    """Undo apply_edit; the result's sha256 must equal the header's original-sha256."""
    header = read_header(patched)
    if header is None:
        raise EditError("no senpi-guard header line")
    start = HEADER_RE.search(patched).start()
    end_re = re.compile(rb"^" + re.escape(end_line(header.name).encode()) + rb"\r?(\n|$)",
                        re.MULTILINE)
    end = end_re.search(patched, start)
    if end is None:
        raise EditError("the senpi-guard payload has no end line")
    cut = patched[:start] + patched[end.end():]
    candidates = [cut]
    if not end.group(1) and cut.endswith(b"\n"):
        candidates.append(cut[:-2] if cut.endswith(b"\r\n") else cut[:-1])
    for candidate in candidates:
        try:
            base = _unwrap_calls(candidate, wrap_callees)
        except jslocate.JsSyntaxError:
            continue
        if sha256(base) == header.original_sha256:
            return base
    raise EditError("removing the senpi-guard edit does not give back the original bytes "
                    f"(sha256 {header.original_sha256[:12]}…)")


def _unwrap_calls(source: bytes, callees: Sequence[str]) -> bytes:
    tree = jslocate.parse(source)
    edits: list[tuple[int, int, bytes]] = []
    for callee in callees:
        for call in jslocate.find_calls(tree, callee):
            children = call.child_by_field_name("arguments").named_children
            args = [a for a in children if a.type != "comment"]
            if not args:
                raise EditError(f"{callee}() without arguments")
            first = args[0]
            tagged = children[0].type == "comment" and children[0].text == SEQUENCE_TAG
            if tagged and first.type == "parenthesized_expression" and first.named_children:
                first = first.named_children[0]
            edits.append((call.start_byte, call.end_byte, source[first.start_byte:first.end_byte]))
    out = bytearray(source)
    for start, end, text in sorted(edits, reverse=True):
        out[start:end] = text
    return bytes(out)


def remove_hand_fix(source: bytes, function: str) -> bytes:
    """Remove a hand-applied `function NAME(x) {…}` and unwrap every `NAME(expr)` call."""
    tree = jslocate.parse(source)
    decls = jslocate.top_level_declarations(tree, function)
    if len(decls) != 1:
        raise EditError(f"expected one top-level `function {function}`, found {len(decls)}")
    decl = decls[0]
    calls = [c for c in jslocate.find_calls(tree, function)
             if not (decl.start_byte <= c.start_byte < decl.end_byte)]
    inside = sum(1 for c in jslocate.find_calls(tree, function)
                 if decl.start_byte <= c.start_byte < decl.end_byte)
    if not calls:
        raise EditError(f"`{function}` is declared but never called")
    edits: list[tuple[int, int, bytes]] = []
    for call in calls:
        args = [a for a in call.child_by_field_name("arguments").named_children
                if a.type != "comment"]
        if len(args) != 1 or args[0].type == "spread_element":
            raise EditError(f"a call to `{function}` at line {call.start_point[0] + 1} does not "
                            "take exactly one argument")
        edits.append((call.start_byte, call.end_byte, source[args[0].start_byte:args[0].end_byte]))
    if jslocate.mentions(tree, function) != 1 + len(calls) + inside:
        raise EditError(f"`{function}` is used other than as a call wrapping a value")
    line_start = source.rfind(b"\n", 0, decl.start_byte) + 1
    if source[line_start:decl.start_byte].strip():
        line_start = decl.start_byte
    line_end = source.find(b"\n", decl.end_byte)
    line_end = len(source) if line_end == -1 else line_end + 1
    if source[decl.end_byte:line_end].strip():
        line_end = decl.end_byte
    edits.append((line_start, line_end, b""))
    out = bytearray(source)
    for start, end, text in sorted(edits, reverse=True):
        out[start:end] = text
    cleaned = bytes(out)
    try:
        left = jslocate.mentions(jslocate.parse(cleaned), function)
    except jslocate.JsSyntaxError as exc:
        raise EditError(f"the file no longer parses after removing `{function}` ({exc})") from exc
    if left:
        raise EditError(f"`{function}` is still referenced after removing it")
    return cleaned
