"""The registry of edit kinds, one module each: the engine looks a target's `edit` up here and never
branches on a kind's name. A new kind is a module with an object satisfying `base.EditKind`, added
to KINDS; a patch names the kinds it uses (`edits = [...]` in its patch.toml)."""

from __future__ import annotations

from senpi_guard.core.patch.kinds import remove_duplicate_property, wrap
from senpi_guard.core.patch.kinds.base import Edited, EditError, EditKind, Render, Undo

# Undone in the reverse of this order (a file's edits by one patch come off last kind first).
KINDS: dict[str, EditKind] = {kind.name: kind for kind in (wrap.KIND, remove_duplicate_property.KIND)}

__all__ = ["KINDS", "EditError", "EditKind", "Edited", "Render", "Undo", "undo_order"]


def undo_order(names: tuple[str, ...]) -> list[EditKind]:
    """The named kinds in the order their edits are taken off a file."""
    return [kind for name, kind in reversed(KINDS.items()) if name in names]
