"""Fixture files: each folder's `*.json`, read and expanded by the patch's own format
(core/patch/fixture_formats). Nothing here knows what a fixture holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from senpi_guard.core.patch.fixture_formats import CODE, FORMATS

FIXTURES_CODE = (Path(__file__), *CODE)  # (what expands the fixtures: a cache of them is keyed by it too)


def load_fixtures(folder: Path, fmt: str) -> list[dict[str, Any]]:
    expand = FORMATS[fmt].expand
    return [expand(json.loads(p.read_text("utf-8")), p.stem) for p in sorted(folder.glob("*.json"))]


def fixture_names(folder: Path) -> list[str]:
    """The names of the fixtures in `folder`, as expand_fixture gives them (unreadable ones left out)."""
    names = []
    for path in sorted(folder.glob("*.json")):
        try:
            raw = json.loads(path.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        names.append(raw.get("name", path.stem) if isinstance(raw, dict) else path.stem)
    return names


def folder_problem(folder: Path, fmt: str) -> str | None:
    """The first fixture file in `folder` that is not of the format `fmt`, and why (a file of that
    format being ...); None when all are."""
    for path in sorted(folder.glob("*.json")):
        try:
            problem = FORMATS[fmt].problem(json.loads(path.read_text("utf-8")))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            problem = f"it cannot be read as JSON ({str(exc).splitlines()[0]})"
        if problem:
            return f"{path}: {problem}: a {fmt} fixture is {FORMATS[fmt].SHAPE}"
    return None
