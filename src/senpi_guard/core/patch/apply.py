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

# Today's header: one line per file, naming every patch on it (in the order they went on) and the
# sha256 of the original file under all of them. Each patch's payload sits between its own begin
# and end lines after it.
FILE_HEADER_RE = re.compile(
    rb"^// senpi-guard: patched by (?P<entries>.+) original-sha256=(?P<sha>[0-9a-f]{64})\r?$", re.MULTILINE
)
ENTRY_RE = re.compile(r"([\w.-]+) v(\d+) \(role=([\w-]+) config-sha256=([0-9a-f]{16})\)(?:, |$)")
# Format 11 and older (senpi-guard up to this release's predecessor): one header per patch, which
# began that patch's payload and named the sha256 of the bytes that patch saw.
HEADER_RE = re.compile(
    rb"^// senpi-guard: (?P<name>[\w.-]+) v(?P<version>\d+) role=(?P<role>[\w-]+)"
    rb" original-sha256=(?P<sha>[0-9a-f]{64}) config-sha256=(?P<config>[0-9a-f]{16})\r?$",
    re.MULTILINE,
)


def header_re(name: str | None = None) -> re.Pattern[bytes]:
    """An old-format (per patch) header line (of patch `name` when given)."""
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
    """One patch's entry in a file: its name, version, target role, the file's original and its settings."""

    name: str
    version: int
    role: str
    original_sha256: str
    config_sha256: str

    def line(self) -> str:
        """(the old, per-patch format)"""
        return (
            f"// senpi-guard: {self.name} v{self.version} role={self.role}"
            f" original-sha256={self.original_sha256} config-sha256={self.config_sha256}"
        )


class FileHeader(NamedTuple):
    """What a patched file carries: every patch on it, in order, and the original's sha256."""

    entries: tuple[Header, ...]
    original_sha256: str
    legacy: bool = False  # the old format: one header per patch

    def line(self) -> str:
        names = ", ".join(
            f"{e.name} v{e.version} (role={e.role} config-sha256={e.config_sha256})" for e in self.entries
        )
        return f"// senpi-guard: patched by {names} original-sha256={self.original_sha256}"

    def entry(self, name: str) -> Header | None:
        return next((e for e in self.entries if e.name == name), None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.entries)


class EditError(ValueError):
    """The bytes are not what this edit expects; the message says why."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def newline_of(source: bytes) -> bytes:
    crlf = source.count(b"\r\n")
    return b"\r\n" if crlf and crlf * 2 >= source.count(b"\n") else b"\n"


def begin_line(name: str) -> str:
    return f"// senpi-guard: begin {name}"


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
    name: str,
    entry: tuple[int, str] | None = None,
) -> bytes:
    """One patch's edit of `base` (which may carry earlier patches): returns wrapped, an entry
    statement, and its payload between its begin and end lines. `entry`: (the byte after the body's
    "{", the guard's code) when the target has one. The file's header is added by `compose`."""
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
        opening, closing = entry_marks(name)
        edits.append((entry[0], entry[0], opening + code.encode() + closing))
    for start, end, text in sorted(edits, key=lambda e: e[0], reverse=True):
        out[start:end] = text
    lines = [begin_line(name), *payload.rstrip("\n").split("\n"), end_line(name)]
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


def read_file_header(source: bytes) -> FileHeader | None:
    """The patches a file carries and its original's sha256, in either format."""
    match = FILE_HEADER_RE.search(source)
    if match is not None:
        entries = tuple(
            Header(m[1], int(m[2]), m[3], match["sha"].decode(), m[4])
            for m in ENTRY_RE.finditer(match["entries"].decode())
        )
        return FileHeader(entries, match["sha"].decode()) if entries else None
    old = [_legacy(m) for m in HEADER_RE.finditer(source)]
    return FileHeader(tuple(old), old[0].original_sha256, legacy=True) if old else None


def _legacy(match: re.Match[bytes]) -> Header:
    return Header(
        match["name"].decode(), int(match["version"]), match["role"].decode(), match["sha"].decode(),
        match["config"].decode(),
    )  # fmt: skip


def read_header(source: bytes, name: str | None = None) -> Header | None:
    """Patch `name`'s entry in the file (the first patch's when None), either format; its
    original_sha256 is the file's original (old format: the bytes that patch saw)."""
    header = read_file_header(source)
    if header is None:
        return None
    return header.entries[0] if name is None else header.entry(name)


def region_of(data: bytes, name: str) -> bytes | None:
    """Patch `name`'s payload region in a patched file (from its begin line, or its old-format
    header, to its end line, after the file's header), or None."""
    header = FILE_HEADER_RE.search(data)
    begin = re.compile(rb"^" + re.escape(begin_line(name).encode()) + rb"\r?$", re.MULTILINE)
    start = begin.search(data, header.end()) if header else header_re(name).search(data)
    if start is None:
        return None
    end = re.compile(rb"^" + re.escape(end_line(name).encode()) + rb"\r?$", re.MULTILINE).search(data, start.end())
    return None if end is None else data[start.start() : end.end()]


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


def edit(patch: Patch, config: Config, target: Target, source: bytes, where: str) -> bytes | None:
    """One patch's edit of one target over `source` (the original, or it with earlier patches
    applied); None when a repair finds nothing to repair."""
    try:
        tree = jssyntax.parse(source)
    except jssyntax.JsSyntaxError as exc:
        raise FatalError(f"{where}: the unpatched code has a {exc}; reinstall senpi") from exc
    if target.edit == "remove-duplicate-property":
        removals = properties.duplicates(source, target.function, target.property_name, target.keep, where)
        if not removals:
            return None
        restore = "\n".join(properties.restore_lines(removals))
        return apply_edit(properties.remove(source, removals), (), "", (), restore, patch.name)
    defs = jssyntax.find_definitions(tree, target.function)
    if len(defs) != 1:
        raise FatalError(f"{where}: expected one definition of {target.function}, found {len(defs)}; reinstall senpi")
    check_function_shape(
        f"{where}:{defs[0].line}", defs[0], "{param0}" in target.wrap + target.entry, bool(target.wrap)
    )
    entry = None
    if target.entry and defs[0].body_open is not None:  # (an expression body gets no guard)
        entry = (defs[0].body_open, target.entry)
    elif not target.wrap:
        raise FatalError(
            f"{where}:{defs[0].line}: {target.function} has no braced body for its entry "
            "statement: unknown shape; report it with the file"
        )
    returns = defs[0].returns if target.wrap else ()
    return apply_edit(source, returns, target.wrap, defs[0].params, patch.render_payload(config), patch.name, entry)


class Step(NamedTuple):
    """One patch's edit of one target, as a step of a file's composition."""

    patch: Patch
    target: Target
    config: Config


def compose(base: bytes, steps: Sequence[Step], where: str, own: str | None = None) -> tuple[bytes, dict[str, str]]:
    """The file made from its original bytes `base` by every step in order, under one header naming
    each patch that changed it and the original's sha256; and each patch's result: "applied",
    "skipped" (nothing to repair) or "failed: why". A failure of patch `own` (or of any, when None)
    is raised; another patch's failure leaves that patch out (its own run reports it)."""
    buffer, entries, results = base, [], {}
    for step in steps:
        try:
            out = edit(step.patch, step.config, step.target, buffer, where)
        except (FatalError, EditError) as exc:
            if own is None or step.patch.name == own:
                raise
            results[step.patch.name] = f"failed: {exc}"
            continue
        if out is None:
            results.setdefault(step.patch.name, "skipped")
            continue
        buffer = out
        results[step.patch.name] = "applied"
        config_digest = step.patch.config_digest(step.config)
        entries.append(Header(step.patch.name, step.patch.version, step.target.role, sha256(base), config_digest))
    if not entries:
        return base, results
    first = re.search(rb"^" + re.escape(begin_line(entries[0].name).encode()) + rb"\r?$", buffer, re.MULTILINE)
    line = FileHeader(tuple(entries), sha256(base)).line().encode() + newline_of(base)
    return buffer[: first.start()] + line + buffer[first.start() :], results


def render(patch: Patch, config: Config, target: Target, base: bytes, where: str) -> bytes:
    """What `apply` writes for the unpatched bytes `base` of a file only this patch touches (a repair
    with nothing to repair gives `base` back)."""
    return compose(base, [Step(patch, target, config)], where)[0]


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
