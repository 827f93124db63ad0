"""Find, inside an install's dist/, the file that defines and exports each target function."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from senpi_guard.core import jssyntax
from senpi_guard.errors import FatalError
from senpi_guard.io import reader

JS_SUFFIXES = (".js", ".mjs", ".cjs")


class Located(NamedTuple):
    path: Path
    definition: jssyntax.FunctionDef


def js_files(dist: Path) -> list[str]:
    """Every .js/.mjs/.cjs regular file under dist/ (paths as strings, sorted), in one os.scandir
    walk; links are not followed. Strings, not Paths: on a 3,700-file dist/ Path objects cost more
    than the walk."""
    found: list[str] = []
    pending = [str(dist)]
    try:
        while pending:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif entry.name.endswith(JS_SUFFIXES) and entry.is_file():  # a link is refused on read
                        found.append(entry.path)
    except OSError as exc:
        raise FatalError(f"cannot list {exc.filename or dist}: {exc.strerror}; make dist/ readable and retry") from exc
    found.sort()
    return found


def listing_key(package_dir: Path, dist: Path, files: list[str]) -> str | None:
    """What an install's code is, short of reading it: package.json's bytes and each .js file's
    place under dist/ and size (a link's: its target's; None: one cannot be read). A reinstall of
    the same release, wherever it is, has the same key; an update, or a file added, removed or
    resized, another. An edit that keeps every size is not seen: as with the stamp of an install's
    record (package.json's and dist/'s identity and times), which an edit deep in dist/ keeps."""
    try:
        digest = hashlib.sha256(reader.read(package_dir / "package.json", reader.MANIFEST))
        prefix = len(str(dist)) + 1
        for name in files:
            digest.update(f"{name[prefix:]}\0{os.stat(name).st_size}\n".encode("utf-8", "surrogateescape"))
    except OSError:
        return None
    return digest.hexdigest()


def mentioning(files: Iterable[str], needles: Iterable[bytes]) -> dict[bytes, list[str]]:
    """Which of `files` mention each needle: every file read once, whatever the number of needles."""
    found: dict[bytes, list[str]] = {needle: [] for needle in needles}
    for name in files:
        data = _read(name)
        for needle, where in found.items():
            if needle in data:
                where.append(name)
    return found


def find_exported_functions(
    files: Iterable[str | Path], names: Iterable[str], also: Iterable[str] = ()
) -> dict[str, list[Located]]:
    """Every definition of each exported function among `files`; each file is read once. Names in
    `also` are looked for on the side (another patch's): a file mentioning only them that cannot
    be parsed leaves them out of the answer rather than failing it (their own walk says why)."""
    wanted = {name: name.encode() for name in (*names, *also)}
    aside = set(also) - set(names)
    found: dict[str, list[Located]] = {name: [] for name in wanted}
    for name_or_path in files:
        data = _read(name_or_path)
        mentioned = [
            name for name, needle in wanted.items() if needle in data and not _only_in_line_comments(data, needle)
        ]
        if not mentioned:
            continue
        path = Path(name_or_path)
        try:
            tree = _parse(path, data, mentioned[0])
        except FatalError:
            if not set(mentioned) <= aside:
                raise
            for name in mentioned:
                found.pop(name, None)
                wanted.pop(name, None)
            continue
        for name in mentioned:
            found[name].extend(Located(path, d) for d in jssyntax.find_definitions(tree, name))
    return found


def _read(name: str | Path) -> bytes:
    try:
        return reader.read(name, reader.DIST)
    except OSError as exc:
        raise FatalError(f"cannot read {name}: {exc.strerror}; make dist/ readable") from exc


def _only_in_line_comments(data: bytes, needle: bytes) -> bool:
    """True when every mention is on a line that is a `//` comment: no definition there, and no
    need to parse the file (minified code has no such lines, so it is always parsed)."""
    at = data.find(needle)
    while at != -1:
        line_start = data.rfind(b"\n", 0, at) + 1
        if not data[line_start:at].lstrip(b" \t").startswith(b"//"):
            return False
        at = data.find(needle, at + len(needle))
    return True


def _parse(path: Path, data: bytes, function: str):
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FatalError(
            f"{path} mentions {function} but is not UTF-8 (byte {exc.start}); reinstall senpi to get an intact file"
        ) from exc
    try:
        return jssyntax.parse(data)
    except jssyntax.JsSyntaxError as exc:
        raise FatalError(f"{path} mentions {function} but has a {exc}; reinstall senpi to get an intact file") from exc
