"""`context`: a fixture is the context itself, as written: `{"context": {...}}` (anything the target
function takes), with an optional "name", "about", "checks" (names the patch's checks read) and
"growing". Nothing in it is expanded."""

from __future__ import annotations

from typing import Any

SHAPE = '{"context": {...}, "name"?: ..., "about"?: ..., "checks"?: [...], "growing"?: bool}'
KEYS = frozenset({"context", "name", "about", "checks", "growing"})


def problem(raw: Any) -> str | None:
    """What keeps `raw` from being a fixture of this format (see SHAPE), or None."""
    if not isinstance(raw, dict) or "context" not in raw:
        return 'it has no "context"'
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        return f"unknown keys {', '.join(unknown)}"
    if not isinstance(raw.get("checks", []), list):
        return '"checks" is not a list'
    return None


def expand(raw: dict[str, Any], default_name: str) -> dict[str, Any]:
    return {
        "name": raw.get("name", default_name),
        "about": raw.get("about", ""),
        "checks": list(raw.get("checks", [])),
        "growing": bool(raw.get("growing", False)),
        "context": raw["context"],
    }
