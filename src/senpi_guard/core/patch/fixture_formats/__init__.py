"""Fixture formats: how a patch's fixture files become the fixtures its replay hands the modules and
its checks. A patch with fixtures names its format (`fixtures_format` in patch.toml); the engine
dispatches on FORMATS and knows no format's shape. One module per format, each with `SHAPE` (one
line: what a file holds), `problem(raw)` (why a file is not of it, or None) and
`expand(raw, default_name)` (the fixture: name, about, checks, growing, context)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from senpi_guard.core.patch.fixture_formats import context, context_template


class FixtureFormat(Protocol):
    SHAPE: str

    def problem(self, raw: Any) -> str | None: ...

    def expand(self, raw: dict[str, Any], default_name: str) -> dict[str, Any]: ...


FORMATS: dict[str, ModuleType] = {"context": context, "context-template": context_template}
CODE = tuple(Path(module.__file__) for module in (context, context_template))  # (what expands them)
