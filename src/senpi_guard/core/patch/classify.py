"""Every state name, and the pure function that names the state of one target file."""

from __future__ import annotations

from typing import NamedTuple

from senpi_guard.core.patch.apply import FileHeader, read_file_header
from senpi_guard.core.patch.reverse import Recovered
from senpi_guard.core.states import AS_ASKED, SETTLED, State

__all__ = ["AS_ASKED", "SETTLED", "Classified", "State", "classify"]


class Classified(NamedTuple):
    state: State
    base: bytes | None  # the unpatched bytes, when they can be recovered
    header: FileHeader | None  # every patch on the file
    detail: str
    reshapes: str = ""  # (stale) how the config changes what sent messages look like, in words


def classify(
    data: bytes,
    found: Recovered,
    wanted: bytes | None,
    patch_version: int,
    config_digest: str,
    patch_name: str | None = None,
) -> Classified:
    """The state of one target file for patch `patch_name`. `found` is what reverse.recover made of
    `data`; `wanted` is the file composed from `found.base` by every patch that touches it with the
    current settings (None when there is no base). (`patch_name` None: the file's first patch.)"""
    if found.kind == "hand":
        return Classified(State.HAND_PATCHED, found.base, None, found.note)
    if found.kind == "plain":
        return Classified(State.CLEAN if wanted == data else State.UNPATCHED, data, None, "")
    header = found.header
    if found.base is None:
        return Classified(State.DRIFTED, None, header, f"carries a senpi-guard header but {found.note}")
    mine = header.entry(patch_name) if patch_name else header.entries[0]
    patch_name = patch_name or mine.name
    if wanted == data:
        return Classified(State.PATCHED if mine else State.CLEAN, found.base, header, "")
    if mine is None:
        return Classified(
            State.UNPATCHED, found.base, header, f"patched by {', '.join(header.names)}; apply adds {patch_name}"
        )
    if mine.version != patch_version:
        which = "an older" if mine.version < patch_version else "another"
        return Classified(
            State.STALE,
            found.base,
            header,
            f"patched by {which} version of {mine.name} (v{mine.version}; this senpi-guard writes "
            f"v{patch_version}); apply re-patches it from the original",
        )
    if mine.config_sha256 != config_digest:
        return Classified(
            State.STALE,
            found.base,
            header,
            f"patched by {mine.name} v{mine.version} with other settings; apply re-patches it from the original",
        )
    if header.legacy:
        return Classified(
            State.STALE, found.base, header, "patched in an earlier senpi-guard's format; apply re-composes it"
        )
    composed = read_file_header(wanted) if wanted is not None else None
    if composed is None or composed.names != header.names or composed.entries != header.entries:
        return Classified(State.STALE, found.base, header, f"{_differs(header, composed)}: apply rebuilds it")
    return Classified(State.DRIFTED, found.base, header, "the senpi-guard edit was changed by hand")


def _differs(header: FileHeader, wanted: FileHeader | None) -> str:
    """The entries of the file's header that differ from those wanted on it, in words."""
    now = {e.name: e for e in wanted.entries} if wanted else {}
    said = []
    for entry in header.entries:
        other = now.get(entry.name)
        if other is None:
            said.append(f"{entry.name} is on it but not wanted")
        elif other.version != entry.version:
            said.append(f"{entry.name} is v{entry.version}, v{other.version} is wanted")
        elif other != entry:
            said.append(f"{entry.name} has other settings than wanted")
    said += [f"{name} is wanted but not on it" for name in now if header.entry(name) is None]
    if not said:
        said.append(f"its patches are in another order than {', '.join(now)}")
    return "; ".join(said)
