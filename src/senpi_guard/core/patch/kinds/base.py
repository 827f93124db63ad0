"""What every edit kind is: the Protocol the engine dispatches on, and the plain data it hands a kind.

A kind owns one way of editing a target function: the keys a target of that kind has in patch.toml
(checked when the patch loads), its forward edit, its reverse, and what `status` says about an
unpatched file it would repair. The engine knows no kind by name (see kinds/__init__.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from tree_sitter import Tree


class EditError(ValueError):
    """The bytes are not what this edit expects; the message says why."""


class Render(NamedTuple):
    """One target's forward edit: the bytes to edit (they may carry earlier patches' edits)."""

    source: bytes
    tree: Tree  # `source`, parsed
    function: str  # the target function
    spec: Any  # the target's own fields, as the kind's `parse` made them
    where: str  # the file, for messages
    name: str  # the patch (its marks in the code name it)


class Edited(NamedTuple):
    data: bytes  # the source with the kind's edits made in place (every line keeps its number)
    region: str  # lines the kind keeps in the patch's region (what undoing needs), "" for none


class Undo(NamedTuple):
    """One patch's reverse, after its region was cut out of the file."""

    name: str  # the patch
    region: bytes  # the region that was cut (its begin/end or old header lines included)
    specs: tuple[Any, ...]  # the parsed fields of each of the patch's targets of this kind
    legacy: bool = False  # format 9 and older: the file's only patch wrote unnamed marks


class EditKind(Protocol):
    name: str  # what `edit = "…"` says in patch.toml
    keys: frozenset[str]  # the target keys of this kind (besides role, function, required, …)

    def parse(self, target: Mapping[str, Any], role: str) -> Any:
        """The target's own fields, checked (ValueError naming the role and what is wrong)."""
        ...

    def render(self, edit: Render) -> Edited | None:
        """The forward edit; None when there is nothing to do (a repair with nothing to repair)."""
        ...

    def reverse(self, data: bytes, undo: Undo) -> bytes:
        """Take this kind's edits of patch `undo.name` out of `data` (its region already cut)."""
        ...

    def finding(self, spec: Any, function: str, base: bytes, where: str) -> str:
        """What status says about an unpatched file that this edit would repair, else ""."""
        ...
