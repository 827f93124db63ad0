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
from senpi_guard.core.patch import properties
from senpi_guard.core.patch.definition import Patch, Target
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config

HEADER_RE = re.compile(
    rb"^// senpi-guard: (?P<name>[\w.-]+) v(?P<version>\d+) role=(?P<role>[\w-]+)"
    rb" original-sha256=(?P<sha>[0-9a-f]{64}) config-sha256=(?P<config>[0-9a-f]{16})\r?$",
    re.MULTILINE,
)


def header_re(name: str | None = None) -> re.Pattern[bytes]:
    """A dist edit's header line (of patch `name` when given: a file may carry several patches)."""
    if name is None:
        return HEADER_RE
    own = rb"(?P<name>" + re.escape(name.encode()) + rb")"
    return re.compile(HEADER_RE.pattern.replace(rb"(?P<name>[\w.-]+)", own), re.MULTILINE)


SOURCE_MAP_RE = re.compile(rb"^//# sourceMappingURL=", re.MULTILINE)
# A sequence expression needs its own parentheses inside a call; this tag says we added them.
SEQUENCE_TAG = b"/*senpi-guard:seq*/"


# An entry statement sits between two comments naming its patch, right after the body's "{" (same
# line); format 9 and older wrote them without the name.
def entry_marks(name: str) -> tuple[bytes, bytes]:
    return f"/*senpi-guard:entry {name}*/".encode(), f"/*senpi-guard:entry-end {name}*/".encode()


class Header(NamedTuple):
    name: str
    version: int
    role: str
    original_sha256: str
    config_sha256: str

    def line(self) -> str:
        return (
            f"// senpi-guard: {self.name} v{self.version} role={self.role}"
            f" original-sha256={self.original_sha256} config-sha256={self.config_sha256}"
        )


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


def apply_edit(
    base: bytes,
    returns: Sequence[ReturnSite],
    template: str,
    params: Sequence[str | None],
    payload: str,
    header: Header,
    entry: tuple[int, str] | None = None,
) -> bytes:
    """`entry`: (the byte after the body's "{", the guard's code) when the target has one."""
    nl = newline_of(base)
    out = bytearray(base)
    edits = [
        (
            site.expr.start,
            site.expr.end,
            wrap_expression(base[site.expr.start : site.expr.end], site.node_type, template, params),
        )
        for site in returns
    ]
    if entry is not None:
        code = entry[1].replace("{param0}", params[0] or "") if params else entry[1]
        opening, closing = entry_marks(header.name)
        edits.append((entry[0], entry[0], opening + code.encode() + closing))
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


HEADER_LINE = re.compile(
    rb"^// senpi-guard: (?P<name>[\w.-]+) v(?P<version>\d+)(?P<fields>(?: [\w-]+=[\w.:/-]+)+)\r?$", re.MULTILINE
)


def header_of(source: bytes, name: str | None = None) -> dict[str, str] | None:
    """The one header format, `// senpi-guard: <patch> v<version> key=value…` (a dist edit's and the
    extension file's alike), as a dict; the first one in `source` (of patch `name` when given)."""
    for match in HEADER_LINE.finditer(source):
        if name is None or match["name"].decode() == name:
            fields = dict(part.split("=", 1) for part in match["fields"].decode().split())
            return {"name": match["name"].decode(), "version": match["version"].decode(), **fields}
    return None


def read_header(source: bytes, name: str | None = None) -> Header | None:
    match = header_re(name).search(source)
    if match is None:
        return None
    return Header(
        match["name"].decode(),
        int(match["version"]),
        match["role"].decode(),
        match["sha"].decode(),
        match["config"].decode(),
    )


def check_function_shape(where: str, definition: FunctionDef, needs_param: bool, wraps_returns: bool = True) -> None:
    """Refuse function shapes the edit cannot handle."""
    if definition.is_generator:
        raise FatalError(
            f"{definition.name} in {where} is a generator: unknown return shape, "
            "senpi-guard does not know this version; report it with the file"
        )
    if wraps_returns and not definition.returns:
        raise FatalError(
            f"{definition.name} in {where} returns no value: unknown return shape, "
            "senpi-guard does not know this version; report it with the file"
        )
    if needs_param and (not definition.params or not definition.params[0] or definition.reassigns_param0):
        raise FatalError(
            f"{definition.name} in {where} has no plain first parameter that stays "
            "unchanged: unknown shape; report it with the file"
        )


def render(patch: Patch, config: Config, target: Target, base: bytes, where: str) -> bytes:
    """What `apply` writes for the unpatched bytes `base` of one target file (a repair with
    nothing to repair gives `base` back)."""
    try:
        tree = jssyntax.parse(base)
    except jssyntax.JsSyntaxError as exc:
        raise FatalError(f"{where}: the unpatched code has a {exc}; reinstall senpi") from exc
    if target.edit == "remove-duplicate-property":
        removals = properties.duplicates(base, target.function, target.property_name, target.keep, where)
        if not removals:
            return base
        header = Header(patch.name, patch.version, target.role, sha256(base), patch.config_digest(config))
        return apply_edit(
            properties.remove(base, removals), (), "", (), "\n".join(properties.restore_lines(removals)), header
        )
    defs = jssyntax.find_definitions(tree, target.function)
    if len(defs) != 1:
        raise FatalError(f"{where}: expected one definition of {target.function}, found {len(defs)}; reinstall senpi")
    check_function_shape(
        f"{where}:{defs[0].line}", defs[0], "{param0}" in target.wrap + target.entry, bool(target.wrap)
    )
    header = Header(patch.name, patch.version, target.role, sha256(base), patch.config_digest(config))
    entry = None
    if target.entry and defs[0].body_open is not None:  # (an expression body gets no guard)
        entry = (defs[0].body_open, target.entry)
    elif not target.wrap:
        raise FatalError(
            f"{where}:{defs[0].line}: {target.function} has no braced body for its entry "
            "statement: unknown shape; report it with the file"
        )
    returns = defs[0].returns if target.wrap else ()
    return apply_edit(base, returns, target.wrap, defs[0].params, patch.render_payload(config), header, entry)


def finding(target: Target, base: bytes, where: str) -> str:
    """What status says about an unpatched file whose edit repairs something (else "")."""
    if target.edit != "remove-duplicate-property":
        return ""
    removals = properties.duplicates(base, target.function, target.property_name, target.keep, where)
    if not removals:
        return ""
    lines = ", ".join(str(r.line) for r in removals)
    return (
        f"line {lines}: a second `{target.property_name}` in one object shadows (or is shadowed by) senpi's "
        f"own `{target.property_name}: {target.keep}`: {target.about}; apply removes the hand-added one"
    )
