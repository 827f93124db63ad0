"""Which configuration (installed, dist, extension, both) sent each call of a recorded session, so
that its recorded usage is priced as that configuration's and the others are derived from it.

In order of authority: the entry senpi-guard's extension appended for the call (exact: sessions
recorded with record_calls = "on"); senpi's own payloadBytes where a configuration gives those bytes
(where several do, they send the same); else an inference from the recorded prompt tokens against
each configuration's bytes (said so), "ambiguous" where two fit equally well; with nothing recorded,
as installed."""

from __future__ import annotations

from collections import Counter
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
# An extension entry fits its call when its in/out bytes are the context's within this share (or
# these few bytes), a compaction's within COMPACTING_SLACK.
ENTRY_SHARE = 0.02
ENTRY_TOKENS_BYTES = 64
COMPACTING_SLACK = 1_500
CLAUDE_PROVIDERS = {"claude-sdk-oauth", "claude-agent-sdk"}


def sent_entry_of(
    found: session.SessionIndex, handle: BinaryIO, turn: session.Turn, claimed: set[str] | None = None
) -> dict[str, Any] | None:
    """What senpi-guard's extension recorded about this call: its entry is appended after the
    call's messages and before its reply (by the extension since issue 46; earlier ones, from the
    `context` handler, came before the prompt's user message), so it is the nearest of that type
    walking back from the call's entry to the previous call (an assistant message or a compaction);
    a summary request's is the one marked `compacting`, a turn's one that is not. A malformed one is
    skipped (and counted). None when there is none; the entry's id goes into `claimed`."""
    if turn.kind == "branch_summary":  # (senpi runs no context handler for it: the extension never sees it)
        return None
    summary = turn.kind != "turn"
    current = found.entries[turn.entry_id].parent
    seen: set[str] = set()
    while current is not None and current not in seen and (entry := found.entries.get(current)) is not None:
        seen.add(current)
        if entry.kind == "compaction" or entry.role == "assistant":
            return None
        if entry.custom_type == SENT_ENTRY:
            data = session.read_entry(handle, entry, found.path).get("data")
            problem = malformed(data)
            if problem is not None:
                found.warn(f"{SENT_ENTRY} entry ignored: {problem}", entry.line)
            elif (data.get("compacting") is True) == summary:
                if claimed is not None:
                    claimed.add(current)
                return data
        current = entry.parent
    return None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def malformed(data: Any) -> str | None:
    """Why an entry's data is not one version 1 of the extension writes; None when it is."""
    if not isinstance(data, dict):
        return "its data is not an object"
    if type(data.get("v")) is not int or data["v"] != 1:
        return "not version 1 (v)"
    if not all(_count(data.get(key)) for key in ("in", "out", "messages")):
        return "in, out or messages is not a count"
    if data.get("dist") not in (None, True, False) or data.get("compacting", False) not in (True, False):
        return "dist or compacting is not true, false or null"
    return None


def implausible(entry: dict[str, Any], row: dict[str, Any], settings_print: str | None = None) -> str | None:
    """Why an entry cannot be the extension's record of this call: the text bytes it says it saw
    and sent are not the call's context as audit rebuilds it, with and without the extension (2%;
    a compaction's context holds ~840 B more than audit rebuilds, measured on 2026.8.22-2), or it
    claims a dist layer on a provider it never acts on. None when it fits. What it sent is not
    checked when it was sent with other dedupe settings than the audit's (`settings_print`): the
    audit renders the extension with its own."""
    context = row.get("context_bytes")
    if not context:
        return None  # (nothing to check against)
    slack = COMPACTING_SLACK if entry.get("compacting") is True else 0
    other = settings_print is not None and entry.get("settings") != settings_print
    for key in ("in",) if other else ("in", "out"):
        if abs(entry[key] - context[key]) > max(slack, ENTRY_SHARE * context[key], ENTRY_TOKENS_BYTES):
            return f"its {key} bytes are not the call's"
    provider = row.get("provider")
    if entry.get("dist") is not None and provider is not None and provider not in CLAUDE_PROVIDERS:
        return "it names a dist layer for a provider that layer never acts on"
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

    def __init__(self, settings_print: str | None, recorded_by_extension: bool = False) -> None:
        self.settings_print = settings_print
        # (the session holds the extension's entries: a summary request it has none for did not go
        # through its context handler, so the extension changed nothing in it)
        self.recorded_by_extension = recorded_by_extension
        self.baseline: dict[str, float] = {}
        self.other_settings = 0  # calls the extension sent with settings other than the audit's
        self.ignored: Counter = Counter()  # entries that do not fit their call, by why

    def judge(
        self, row: dict[str, Any], entry: dict[str, Any] | None, usage: Recorded | None, matches: list[str]
    ) -> Verdict:
        sizes, lane = row["bytes"], row["sent"]
        problem = None if entry is None else implausible(entry, row, self.settings_print)
        if problem is not None:
            self.ignored[problem] += 1
            entry = None
        if entry is not None:
            if self.settings_print and entry.get("settings") != self.settings_print:
                self.other_settings += 1
            dist = entry.get("dist")
            if dist is None and lane in ("full", "unknown"):
                either = [c for c in ("extension", "both") if c in matches]
                return Verdict(either[0] if len(either) == 1 else "extension", "entry", ())
            return Verdict("both" if dist is True else "extension", "entry", ())
        if matches:  # (several: they send the same bytes, so each prices the call alike)
            return Verdict(matches[0], "payloadBytes", ())
        distinct = _distinct(sizes)
        if usage is None:
            return Verdict("installed", "none", ())
        # (a delta sends only the new messages; the resident history is read from the cache: what
        # those bytes must explain is the prompt's fresh tokens, whose overhead is close to none.
        # Not when less was read from the cache than written afresh: a cold cache, the history
        # written again with them, of a size the record does not say)
        tokens = usage.tokens
        fresh = tokens.input + tokens.cache_write
        cold = lane == "delta" and tokens.cache_read < fresh
        prompt = fresh if lane == "delta" else tokens.prompt
        overhead = {c: prompt - sizes[c] / BYTES_PER_TOKEN for c in distinct}
        if len(distinct) == 1:
            if not cold:
                self.baseline[lane] = overhead[distinct[0]]
            return Verdict("installed", "none", ())
        tie = max(TIE_TOKENS, TIE_SHARE * prompt)
        base = None if cold else self.baseline.get(lane, 0.0 if lane == "delta" else None)
        if base is None:  # no baseline: every configuration the record can hold fits
            fits = [c for c in distinct if overhead[c] >= -tie]
        else:
            best = min(abs(overhead[c] - base) for c in distinct)
            fits = [c for c in distinct if abs(overhead[c] - base) <= best + tie]
        if len(fits) == 1:
            return Verdict(fits[0], "inferred", ())
        fits = fits or distinct
        return Verdict(fits[0], "ambiguous", tuple(fits))


def unanswered(found: session.SessionIndex, handle: BinaryIO, claimed: set[str]) -> None:
    """Warn of the calls the extension recorded that no reply in the session answers (senpi stopped
    mid-call, or still runs): a call made that no row counts."""
    for entry in found.entries.values():
        if entry.custom_type != SENT_ENTRY or entry.id in claimed or entry.copied:
            continue
        data = session.read_entry(handle, entry, found.path).get("data")
        if malformed(data) is None and data.get("compacting") is not True:
            found.warn(
                "calls the extension recorded with no reply in the session (senpi stopped mid-call, or it "
                "still runs): made, and not counted",
                entry.line,
            )
