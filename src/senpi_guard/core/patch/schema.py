"""A patch's own names, checked against each other when it loads: every role a patch.toml mentions
(in `audit`, `write_order`, `defer`, `hand_fix_risks`, the extension's risks, the known shapes) is one
of its targets, every setting it mentions is one of its settings, and every headline fixture is one
of its fixtures. A typo is one line naming the key, not a role that silently never matches."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from senpi_guard.core.patch.fixtures import fixture_names


def check(data: dict[str, Any], root: Path) -> None:
    """ValueError naming the first key of `data` (a parsed patch.toml) that names what the patch lacks."""
    roles = [t.get("role") for t in data.get("targets", [])]
    if len(set(roles)) != len(roles):
        raise ValueError(f"two targets have the role {next(r for r in roles if roles.count(r) > 1)!r}")
    settings = data.get("settings", {})
    extension = data.get("extension") or {}
    defer = data.get("defer") or {}
    mentioned = [("audit." + use, role) for use, role in data.get("audit", {}).items()]
    mentioned += [("write_order", role) for role in data.get("write_order", ())]
    mentioned += [("defer.target", defer.get("target"))] if defer else []
    mentioned += [("hand_fix_risks", role) for role in data.get("hand_fix_risks", {})]
    mentioned += [("extension.risks", risk.get("target")) for risk in extension.get("risks", [])]
    if extension.get("unsafe_alone_with"):
        mentioned.append(("extension.unsafe_alone_with", extension["unsafe_alone_with"]))
    for shape in data.get("versions", {}).get("known", []):
        mentioned += [("versions.known.present", role) for role in shape.get("present", ())]
    _known("role", mentioned, roles)
    mentioned = [("defer.setting", defer.get("setting"))] if defer else []
    for name, spec in settings.items():
        mentioned += (
            [(f"settings.{name}.when", spec["when"].get("setting"))] if isinstance(spec.get("when"), dict) else []
        )
    _known("setting", mentioned, settings)
    if data.get("hand_fix_risks") and not data.get("hand_fix_function"):
        raise ValueError("hand_fix_risks is given without a hand_fix_function")
    if data.get("headline"):
        _known("fixture", [("headline", name) for name in data["headline"]], fixture_names(root / "fixtures"))


def _known(what: str, mentioned: Iterable[tuple[str, Any]], names: Iterable[Any]) -> None:
    names = list(names)
    for key, name in mentioned:
        if name not in names:
            have = ", ".join(map(str, names)) or "none"
            raise ValueError(f"{key} names the {what} {name!r}, which the patch does not have (its {what}s: {have})")
