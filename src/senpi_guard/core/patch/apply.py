"""Render our edit of a target file: wrap each return, add the payload between a header and an
end line. Pure bytes -> bytes.

Original line numbers are preserved: return expressions are wrapped in place and the payload goes
after the last code line, just before `//# sourceMappingURL=`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import NamedTuple

from senpi_guard.core import jssyntax
from senpi_guard.core.jssyntax import FunctionDef, ReturnSite
from senpi_guard.core.patch.definition import Patch, Target
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config

HEADER_RE = re.compile(
    rb"^// senpi-guard: (?P<name>[\w.-]+) v(?P<version>\d+) role=(?P<role>[\w-]+)"
    rb" original-sha256=(?P<sha>[0-9a-f]{64}) config-sha256=(?P<config>[0-9a-f]{16})\r?$",
    re.MULTILINE,
)
SOURCE_MAP_RE = re.compile(rb"^//# sourceMappingURL=", re.MULTILINE)
# A sequence expression needs its own parentheses inside a call; this tag says we added them.
SEQUENCE_TAG = b"/*senpi-guard:seq*/"
# An entry guard sits between these two comments, right after the body's "{" (same line).
ENTRY_OPEN, ENTRY_CLOSE = b"/*senpi-guard:entry*/", b"/*senpi-guard:entry-end*/"


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
               params: Sequence[str | None], payload: str, header: Header,
               entry: tuple[int, str] | None = None) -> bytes:
    """`entry`: (the byte after the body's "{", the guard's code) when the target has one."""
    nl = newline_of(base)
    out = bytearray(base)
    edits = [(site.expr.start, site.expr.end, wrap_expression(base[site.expr.start:site.expr.end],
                                                              site.node_type, template, params))
             for site in returns]
    if entry is not None:
        code = entry[1].replace("{param0}", params[0] or "") if params else entry[1]
        edits.append((entry[0], entry[0], ENTRY_OPEN + code.encode() + ENTRY_CLOSE))
    for start, end, text in sorted(edits, key=lambda e: e[0], reverse=True):
        out[start:end] = text
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




def check_function_shape(where: str, definition: FunctionDef, needs_param: bool,
                         wraps_returns: bool = True) -> None:
    """Refuse function shapes the edit cannot handle."""
    if definition.is_generator:
        raise FatalError(f"{definition.name} in {where} is a generator: unknown return shape, "
                         "senpi-guard does not know this version; report it with the file")
    if wraps_returns and not definition.returns:
        raise FatalError(f"{definition.name} in {where} returns no value: unknown return shape, "
                         "senpi-guard does not know this version; report it with the file")
    if needs_param and (not definition.params or not definition.params[0]
                        or definition.reassigns_param0):
        raise FatalError(f"{definition.name} in {where} has no plain first parameter that stays "
                         "unchanged: unknown shape; report it with the file")


def render(patch: Patch, config: Config, target: Target, base: bytes, where: str) -> bytes:
    """What `apply` writes for the unpatched bytes `base` of one target file."""
    try:
        tree = jssyntax.parse(base)
    except jssyntax.JsSyntaxError as exc:
        raise FatalError(f"{where}: the unpatched code has a {exc}; reinstall senpi") from exc
    defs = jssyntax.find_definitions(tree, target.function)
    if len(defs) != 1:
        raise FatalError(f"{where}: expected one definition of {target.function}, found "
                         f"{len(defs)}; reinstall senpi")
    check_function_shape(f"{where}:{defs[0].line}", defs[0], "{param0}" in target.wrap + target.entry,
                         bool(target.wrap))
    header = Header(patch.name, patch.version, target.role, sha256(base), patch.config_digest(config))
    entry = None
    if target.entry and defs[0].body_open is not None:  # (an expression body gets no guard)
        entry = (defs[0].body_open, target.entry)
    elif not target.wrap:
        raise FatalError(f"{where}:{defs[0].line}: {target.function} has no braced body for its entry "
                         "statement: unknown shape; report it with the file")
    returns = defs[0].returns if target.wrap else ()
    return apply_edit(base, returns, target.wrap, defs[0].params, patch.render_payload(config), header, entry)
