"""Render our edit of a target file: each target's edit by its kind (core/patch/kinds/), each
patch's region between its begin and end lines, one header naming every patch. Pure bytes -> bytes.

Original line numbers are preserved: every kind edits in place and the regions go after the last
code line, just before `//# sourceMappingURL=`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import NamedTuple

from senpi_guard.core import jssyntax
from senpi_guard.core.patch import kinds
from senpi_guard.core.patch.definition import Patch, Target
from senpi_guard.core.patch.kinds import EditError
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


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def newline_of(source: bytes) -> bytes:
    crlf = source.count(b"\r\n")
    return b"\r\n" if crlf and crlf * 2 >= source.count(b"\n") else b"\n"


def begin_line(name: str) -> str:
    return f"// senpi-guard: begin {name}"


def end_line(name: str) -> str:
    return f"// senpi-guard: end {name}"


def add_region(edited: bytes, region: str, name: str, nl: bytes) -> bytes:
    """Patch `name`'s region (its begin line, `region`'s lines, its end line) after the last code
    line, just before `//# sourceMappingURL=`."""
    lines = [begin_line(name), *region.rstrip("\n").split("\n"), end_line(name)]
    text = nl.join(line.encode("utf-8") for line in lines) + nl
    out = bytearray(edited)
    maps = list(SOURCE_MAP_RE.finditer(out))
    if maps:
        at = maps[-1].start()
        out[at:at] = text
    elif not out or out.endswith(b"\n"):
        out += text
    else:
        out += nl + text[: -len(nl)]
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


def edit(
    patch: Patch, config: Config, target: Target, source: bytes, where: str, tree: jssyntax.Tree | None = None
) -> bytes | None:
    """One patch's edit of one target over `source` (the original, or it with earlier patches
    applied; `tree`: its syntax tree, when the caller parsed it already), by the target's edit kind,
    with the patch's region (its payload and what the kind keeps there); None when a repair finds
    nothing to repair."""
    try:
        tree = tree or jssyntax.parse(source)
    except jssyntax.JsSyntaxError as exc:
        raise FatalError(f"{where}: the unpatched code has a {exc}; reinstall senpi") from exc
    edited = kinds.KINDS[target.edit].render(
        kinds.Render(source, tree, target.function, target.spec, where, patch.name)
    )
    if edited is None:
        return None
    region = "\n".join(part for part in (patch.render_payload(config), edited.region) if part)
    return add_region(edited.data, region, patch.name, newline_of(source))


class Step(NamedTuple):
    """One patch's edit of one target, as a step of a file's composition."""

    patch: Patch
    target: Target
    config: Config


def compose(
    base: bytes, steps: Sequence[Step], where: str, own: str | None = None, tree: jssyntax.Tree | None = None
) -> tuple[bytes, dict[str, str]]:
    """The file made from its original bytes `base` (`tree`: its syntax tree, when parsed already) by
    every step in order, under one header naming each patch that changed it and the original's
    sha256; and each patch's result: "applied", "skipped" (nothing to repair) or "failed: why". A
    failure of patch `own` (or of any, when None) is raised; another patch's failure leaves that
    patch out (its own run reports it)."""
    buffer, entries, results = base, [], {}
    for step in steps:
        try:
            out = edit(step.patch, step.config, step.target, buffer, where, tree if buffer is base else None)
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
    return kinds.KINDS[target.edit].finding(target.spec, target.function, base, where)
