"""Fixture files: each folder's `*.json`, read and expanded by the patch's own format
(core/patch/fixture_formats). Nothing here knows what a fixture holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from senpi_guard.core.patch.fixture_formats import CODE, FORMATS
from senpi_guard.errors import FatalError
from senpi_guard.io import reader

FIXTURES_CODE = (Path(__file__), *CODE)  # (what expands the fixtures: a cache of them is keyed by it too)


def load_fixtures(folder: Path, fmt: str) -> list[dict[str, Any]]:
    expand = FORMATS[fmt].expand
    return [expand(json.loads(reader.own_text(p)), p.stem) for p in sorted(folder.glob("*.json"))]


def fixture_names(folder: Path) -> list[str]:
    """The names of the fixtures in `folder` (a "name" in the file, else its stem; unreadable ones left out)."""
    names = []
    for path in sorted(folder.glob("*.json")):
        try:
            raw = json.loads(reader.own_text(path))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        names.append(raw.get("name", path.stem) if isinstance(raw, dict) else path.stem)
    return names


def folder_problem(folder: Path, fmt: str) -> str | None:
    """The first fixture file in `folder` that is not of the format `fmt`, and why (a file of that
    format being ...); None when all are."""
    for path in sorted(folder.glob("*.json")):
        try:
            problem = FORMATS[fmt].problem(json.loads(reader.own_text(path)))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            problem = f"it cannot be read as JSON ({str(exc).splitlines()[0]})"
        if problem:
            return f"{path}: {problem}: a {fmt} fixture is {FORMATS[fmt].SHAPE}"
    return None


def check_formats(patch: str, fmt: str, folders: list[Path]) -> None:
    """Every fixture file of a patch is of the format it names (a patch with fixtures must name one)."""
    known = ", ".join(sorted(FORMATS))
    if fmt and fmt not in FORMATS:
        raise FatalError(f"patch {patch}: fixtures_format = {fmt!r} is not a fixture format (known: {known})")
    for folder in folders:
        if not fmt:
            if any(folder.glob("*.json")):
                raise FatalError(
                    f"patch {patch}: {folder} holds fixtures but patch.toml names no fixtures_format "
                    f"(one of: {known}); add it"
                )
            continue
        problem = folder_problem(folder, fmt)
        if problem:
            raise FatalError(f"patch {patch}: the fixture {problem}; fix or remove it")
