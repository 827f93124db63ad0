"""Which configuration (installed, dist, extension, both) sent each call of a recorded session, so
that its recorded usage is priced as that configuration's and the others are derived from it.

In order of authority: the entry senpi-guard's extension appended for the call (exact: sessions
recorded with record_calls = "on"); senpi's own payloadBytes where exactly one configuration gives
those bytes; else an inference from the recorded prompt tokens against each configuration's bytes
(said so), "ambiguous" where two fit equally well; with nothing recorded, as installed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, BinaryIO

from senpi_guard.audit import session
from senpi_guard.audit.money import BYTES_PER_TOKEN, Recorded

SENT_ENTRY = "senpi-guard.sent"
CONFIGS = ("installed", "dist", "extension", "both")
# Two configurations fit equally well when their implied overheads (recorded prompt tokens less the
# counted text's) are this close to the session's own: the larger of these tokens or this share.
TIE_TOKENS = 64
TIE_SHARE = 0.02


def sent_entry_of(found: session.SessionIndex, handle: BinaryIO, turn: session.Turn) -> dict[str, Any] | None:
    """What senpi-guard's extension recorded about this call: its entry is appended from the
    `context` handler, before senpi stores the messages of the call (measured on 2026.8.22-2: the
    entry comes before the prompt's user message, a tool call's entry after its tool result), so it
    is the nearest of that type walking back from the call's entry to the previous call (an
    assistant message or a compaction); a summary request's is the one marked `compacting`, a
    turn's one that is not. None when there is none."""
    summary = turn.kind != "turn"
    current = found.entries[turn.entry_id].parent
    seen: set[str] = set()
    while current is not None and current not in seen and (entry := found.entries.get(current)) is not None:
        seen.add(current)
        if entry.kind == "compaction" or entry.role == "assistant":
            return None
        if entry.custom_type == SENT_ENTRY:
            data = session.read_entry(handle, entry, found.path).get("data")
            if isinstance(data, dict) and data.get("v") == 1 and bool(data.get("compacting")) == summary:
                return data
        current = entry.parent
    return None


@dataclass(frozen=True)
class Verdict:
    config: str  # the configuration the record is priced as
    by: str  # "entry", "payloadBytes", "inferred", "ambiguous", "none"
    candidates: tuple[str, ...]  # (ambiguous) every configuration that fits as well

    def as_json(self) -> dict[str, Any]:
        return {"config": self.config, "by": self.by, "candidates": list(self.candidates)}


def _distinct(sizes: dict[str, int]) -> list[str]:
    """One configuration per distinct byte count (the first in CONFIGS order)."""
    seen: dict[int, str] = {}
    for config in CONFIGS:
        seen.setdefault(sizes[config], config)
    return list(seen.values())


class Judge:
    """Decides each call's configuration as the rows arrive (in file order). The overhead baseline
    (what a record holds beyond the counted text: system prompt, tools, framing) comes from the
    latest earlier call of the same lane that every configuration sends alike."""

    def __init__(self, settings_print: str | None) -> None:
        self.settings_print = settings_print
        self.baseline: dict[str, float] = {}
        self.other_settings = 0  # calls the extension sent with settings other than the audit's

    def judge(
        self, row: dict[str, Any], entry: dict[str, Any] | None, usage: Recorded | None, matches: list[str]
    ) -> Verdict:
        sizes, lane = row["bytes"], row["sent"]
        if entry is not None:
            if self.settings_print and entry.get("settings") != self.settings_print:
                self.other_settings += 1
            dist = entry.get("dist")
            if dist is None and lane in ("full", "unknown"):
                either = [c for c in ("extension", "both") if c in matches]
                return Verdict(either[0] if len(either) == 1 else "extension", "entry", ())
            return Verdict("both" if dist is True else "extension", "entry", ())
        if len(matches) == 1:
            return Verdict(matches[0], "payloadBytes", ())
        distinct = _distinct(sizes)
        if usage is None:
            return Verdict("installed", "none", ())
        prompt = usage.tokens.prompt
        overhead = {c: prompt - sizes[c] / BYTES_PER_TOKEN for c in distinct}
        if len(distinct) == 1:
            if lane != "delta":
                self.baseline[lane] = overhead[distinct[0]]
            return Verdict("installed", "none", ())
        tie = max(TIE_TOKENS, TIE_SHARE * prompt)
        base = self.baseline.get(lane) if lane != "delta" else None
        if base is None:  # no baseline: every configuration the record can hold fits
            fits = [c for c in distinct if overhead[c] >= -tie]
        else:
            best = min(abs(overhead[c] - base) for c in distinct)
            fits = [c for c in distinct if abs(overhead[c] - base) <= best + tie]
        if len(fits) == 1:
            return Verdict(fits[0], "inferred", ())
        fits = fits or distinct
        return Verdict(fits[0], "ambiguous", tuple(fits))
