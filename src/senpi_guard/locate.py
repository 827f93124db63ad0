"""Find, inside an install's dist/, the file that defines and exports a function."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from senpi_guard import jslocate
from senpi_guard.errors import FatalError

JS_SUFFIXES = (".js", ".mjs", ".cjs")


class Located(NamedTuple):
    path: Path
    definition: jslocate.FunctionDef


def js_files(dist: Path) -> list[Path]:
    try:
        return sorted(p for p in dist.rglob("*") if p.suffix in JS_SUFFIXES and p.is_file())
    except OSError as exc:
        raise FatalError(f"cannot list {dist}: {exc.strerror}; make it readable and retry") from exc


def find_exported_function(dist: Path, function: str, files: list[Path] | None = None) -> list[Located]:
    """Every definition of an exported `function` under dist/. Errors name the file and the cause."""
    needle = function.encode()
    found: list[Located] = []
    for path in files if files is not None else js_files(dist):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise FatalError(f"cannot read {path}: {exc.strerror}; make dist/ readable") from exc
        if needle not in data:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FatalError(f"{path} mentions {function} but is not UTF-8 (byte {exc.start}); "
                             "reinstall senpi to get an intact file") from exc
        try:
            tree = jslocate.parse(data)
        except jslocate.JsSyntaxError as exc:
            raise FatalError(f"{path} mentions {function} but has a {exc}; reinstall senpi "
                             "to get an intact file") from exc
        found.extend(Located(path, d) for d in jslocate.find_definitions(tree, function))
    return found


def describe_returns(path: Path, definition: jslocate.FunctionDef, needs_param: bool) -> None:
    """Refuse function shapes the wrap cannot handle."""
    where = f"{path}:{definition.line}"
    if definition.is_generator:
        raise FatalError(f"{definition.name} in {where} is a generator: unknown return shape, "
                         "senpi-guard does not know this version; report it with the file")
    if not definition.returns:
        raise FatalError(f"{definition.name} in {where} returns no value: unknown return shape, "
                         "senpi-guard does not know this version; report it with the file")
    if needs_param and (not definition.params or not definition.params[0]
                        or definition.reassigns_param0):
        raise FatalError(f"{definition.name} in {where} has no plain first parameter that stays "
                         "unchanged: unknown shape; report it with the file")
