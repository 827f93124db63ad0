"""The edit kind "remove-duplicate-property": a repair. In an object literal of the target function
that gives `property` twice (a hand-applied fix added a second one: the later one silently wins),
the one whose value is senpi's own (`keep`) stays and the others are blanked out (core/patch/
properties.py finds them by syntax tree). What was removed is kept in the patch's region as restore
lines, so undoing gives the original bytes back exactly."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from senpi_guard.core.patch import properties
from senpi_guard.core.patch.kinds.base import Edited, Render, Undo


@dataclass(frozen=True)
class Duplicate:
    property_name: str  # the property that must appear once
    keep: str  # senpi's own value of it, which is kept
    about: str = ""  # why a second one is harmful, for status


class RemoveDuplicateProperty:
    name = "remove-duplicate-property"
    keys = frozenset({"property", "keep", "about"})

    def parse(self, target: Mapping[str, Any], role: str) -> Duplicate:
        spec = Duplicate(target.get("property", ""), target.get("keep", ""), target.get("about", ""))
        if not (spec.property_name and spec.keep):
            raise ValueError(f"target {role!r} names no property or no value to keep")
        return spec

    def render(self, edit: Render) -> Edited | None:
        spec: Duplicate = edit.spec
        removals = properties.duplicates(edit.source, edit.function, spec.property_name, spec.keep, edit.where)
        if not removals:
            return None
        return Edited(properties.remove(edit.source, removals), "\n".join(properties.restore_lines(removals)))

    def reverse(self, data: bytes, undo: Undo) -> bytes:
        return properties.restore(data, undo.region)

    def finding(self, spec: Duplicate, function: str, base: bytes, where: str) -> str:
        removals = properties.duplicates(base, function, spec.property_name, spec.keep, where)
        if not removals:
            return ""
        lines = ", ".join(str(r.line) for r in removals)
        name = spec.property_name
        return (
            f"line {lines}: a second `{name}` in one object shadows (or is shadowed by) senpi's "
            f"own `{name}: {spec.keep}`: {spec.about}; apply removes the hand-added one"
        )


KIND = RemoveDuplicateProperty()
