"""Every state name, and the pure function that names the state of one target file."""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from senpi_guard.core.patch.apply import Header
from senpi_guard.core.patch.reverse import Recovered


class State(StrEnum):
    UNPATCHED = "unpatched"
    PATCHED = "patched"
    STALE = "stale"
    HAND_PATCHED = "hand-patched"
    DRIFTED = "drifted"
    PARTIAL = "partial"
    UPSTREAM = "upstream"
    CLEAN = "clean"  # the patch looked and found nothing to change (a repair with nothing to repair)
    UNSUPPORTED = "unsupported"
    ERROR = "error"
    HELD = "held"


# States that count as success for `status`: the install is as the user wants it.
SETTLED = frozenset({State.PATCHED, State.UPSTREAM, State.CLEAN})


class Classified(NamedTuple):
    state: State
    base: bytes | None  # the unpatched bytes, when they can be recovered
    header: Header | None
    detail: str
    reshapes: str = ""  # (stale) how the config changes what sent messages look like, in words


def classify(data: bytes, found: Recovered, wanted: bytes | None, patch_version: int, config_digest: str) -> Classified:
    """`found` is what reverse.recover made of `data`; `wanted` is what apply renders from
    `found.base` with the current patch and settings (None when there is no base)."""
    if found.kind == "hand":
        return Classified(State.HAND_PATCHED, found.base, None, found.note)
    if found.kind == "plain":
        return Classified(State.CLEAN if wanted == data else State.UNPATCHED, data, None, "")
    header = found.header
    if found.base is None:
        return Classified(State.DRIFTED, None, header, f"carries a senpi-guard header but {found.note}")
    if wanted == data:
        return Classified(State.PATCHED, found.base, header, "")
    if header.version != patch_version or header.config_sha256 != config_digest:
        return Classified(
            State.STALE,
            found.base,
            header,
            f"patched by {header.name} v{header.version} with other settings; apply re-patches it from the original",
        )
    return Classified(State.DRIFTED, found.base, header, "the senpi-guard edit was changed by hand")
