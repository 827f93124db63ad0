"""A patch's targets: the functions it edits, each by one edit kind (core/patch/kinds/) that the patch
names in `edits = [...]`; a target's keys are checked against the engine's own and its kind's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from senpi_guard.core.patch import kinds

TARGET_KEYS = frozenset({"role", "function", "required", "edit", "fixtures", "with_extension"})


@dataclass(frozen=True)
class Target:
    role: str
    function: str
    required: bool
    edit: str  # its edit kind (a key of kinds.KINDS, one the patch names in `edits`)
    spec: Any = None  # the kind's own fields of this target, as the kind parsed them
    fixtures: str = ""  # the target's own fixtures (a folder under the patch), replayed through it
    with_extension: bool = False  # its replay runs the patch's rendered extension too


def parse_edits(data: dict[str, Any]) -> tuple[str, ...]:
    """The edit kinds a patch names (`edits = [...]`), each one the registry has."""
    edits = data.get("edits")
    known = ", ".join(kinds.KINDS)
    if not isinstance(edits, list) or not edits or not all(isinstance(e, str) for e in edits):
        raise ValueError(f"it names no edit kinds: add edits = [...] with the kinds its targets use (known: {known})")
    unknown = [e for e in edits if e not in kinds.KINDS]
    if unknown:
        raise ValueError(f"it names the unknown edit kind {unknown[0]!r} (known: {known})")
    return tuple(edits)


def parse_target(t: dict[str, Any], edits: tuple[str, ...]) -> Target:
    role = t["role"]
    edit = t.get("edit", edits[0] if len(edits) == 1 else "")
    if edit not in edits:
        named = ", ".join(edits)
        raise ValueError(f"target {role!r} has the edit {edit!r}, not one the patch names (edits: {named})")
    kind = kinds.KINDS[edit]
    unknown = sorted(set(t) - TARGET_KEYS - kind.keys)
    if unknown:
        raise ValueError(
            f"target {role!r} has the unknown key {unknown[0]!r} (an {edit} target has {', '.join(sorted(kind.keys))})"
        )
    return Target(
        role,
        t["function"],
        bool(t.get("required", False)),
        edit,
        kind.parse(t, role),
        t.get("fixtures", ""),
        bool(t.get("with_extension", False)),
    )
