"""Find, inside an install's dist/, the file that defines and exports each target function."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from senpi_guard import jssyntax
from senpi_guard.errors import FatalError

JS_SUFFIXES = (".js", ".mjs", ".cjs")


class Located(NamedTuple):
    path: Path
    definition: jssyntax.FunctionDef


def js_files(dist: Path) -> list[Path]:
    """Every .js/.mjs/.cjs regular file under dist/, in one os.scandir walk (links not followed)."""
    found: list[Path] = []
    pending = [str(dist)]
    try:
        while pending:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif entry.name.endswith(JS_SUFFIXES) and entry.is_file():  # a link is refused on read
                        found.append(Path(entry.path))
    except OSError as exc:
        raise FatalError(f"cannot list {exc.filename or dist}: {exc.strerror}; make dist/ "
                         "readable and retry") from exc
    return sorted(found)


def find_exported_functions(files: Iterable[Path], names: Iterable[str]) -> dict[str, list[Located]]:
    """Every definition of each exported function among `files`; each file is read once."""
    wanted = {name: name.encode() for name in names}
    found: dict[str, list[Located]] = {name: [] for name in wanted}
    for path in files:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise FatalError(f"cannot read {path}: {exc.strerror}; make dist/ readable") from exc
        mentioned = [name for name, needle in wanted.items() if needle in data]
        if not mentioned:
            continue
        tree = _parse(path, data, mentioned[0])
        for name in mentioned:
            found[name].extend(Located(path, d) for d in jssyntax.find_definitions(tree, name))
    return found


def _parse(path: Path, data: bytes, function: str):
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FatalError(f"{path} mentions {function} but is not UTF-8 (byte {exc.start}); "
                         "reinstall senpi to get an intact file") from exc
    try:
        return jssyntax.parse(data)
    except jssyntax.JsSyntaxError as exc:
        raise FatalError(f"{path} mentions {function} but has a {exc}; reinstall senpi "
                         "to get an intact file") from exc
