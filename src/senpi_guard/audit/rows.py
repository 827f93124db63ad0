"""One audit row per provider call: how the call went out (its lane), what each configuration sends
there, which configuration sent it, and what it cost."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from senpi_guard.audit import configuration, money, session
from senpi_guard.audit.prices import PriceBook
from senpi_guard.audit.summary import Summary

FULL_KINDS = {"bootstrap", "flatten", "disabled"}
DELTA_KINDS = {"delta", "fork"}
CLAUDE_PROVIDERS = {"claude-sdk-oauth", "claude-agent-sdk"}  # the ones that serialise with buildPromptBlocks
CONFIGS = ("installed", "dist", "extension", "both")


def lane_of(call: session.Call, resident_lane: bool) -> str:
    """How this call went out: "full", "delta" or "unknown" for senpi's Claude provider (from its
    own record when it has one), "context" for every other provider (the whole context, as the
    `context` handlers returned it, in that provider's format: no buildPromptBlocks, no lanes)."""
    if call.provider is not None and call.provider not in CLAUDE_PROVIDERS:
        return "context"
    if call.continuity in FULL_KINDS:
        return "full"
    if call.continuity in DELTA_KINDS:
        return "delta"
    if call.provider == "claude-agent-sdk":
        return "full"  # the provider before 2026.7.31-2 re-sends the whole history every call
    return "unknown" if resident_lane else "full"


MEASURED_AS = {
    "full": "the whole history through buildPromptBlocks (and upstream's dedupe where installed)",
    "unknown": "as a full re-send, for want of a record",
    "delta": "the new messages through buildDeltaPromptBlocks",
    "context": "the text of every context message, as the context handlers returned them",
    "summary": "an estimate: the text of the summarised messages, as the context handlers returned them "
    "(senpi's instruction after them not counted)",
    "branch": "the branch left behind, serialised into one message by senpi's own generateBranchSummary "
    "(no context handler runs: the same in every configuration)",
    "branch estimate": "an estimate: the texts of the branch left behind as senpi serialises them, and its "
    "instruction (no context handler runs: the same in every configuration)",
}
CALL_KINDS = {
    "turn": "a turn",
    "compaction": "a compaction's summary request",
    "branch_summary": "a branch summary's request",
}


def recorded_as(recorded: int | None, sizes: dict[str, int]) -> str | None:
    """Which configuration produced the call, from senpi's own payloadBytes: the one whose bytes it
    equals; "unknown" when several give those bytes, "mismatch" when none does; None unrecorded."""
    if recorded is None:
        return None
    matches = [config for config in CONFIGS if sizes[config] == recorded]
    return matches[0] if len(matches) == 1 else "unknown" if matches else "mismatch"


EVIDENCE = {
    "assumed": " (assumed: nothing senpi recorded says whether it called the provider)",
    "unseen": " (the extension recorded no such request: its summary came from an extension, or it was "
    "sent without the context handlers; no saving is counted in it)",
}
SPLIT_NOTE = "; a split turn: two requests, of which the turn prefix's is not measured"


def compaction_evidence(turn, meta: dict[str, Any], judge: configuration.Judge) -> str | None:
    """What says a compaction's summary request was made: the extension's entry for it ("entry"),
    senpi's usage on the compaction ("usage"), neither in a session the extension recorded
    ("unseen"), or nothing at all ("assumed"); None for other calls."""
    if turn.kind != "compaction":
        return None
    if meta["entry"] is not None:
        return "entry"
    if meta["usage"] is not None:
        return "usage"
    return "unseen" if judge.recorded_by_extension else "assumed"


def measured_as_key(kind: str, lane: str, result: dict[str, Any]) -> str:
    if kind != "branch_summary":
        return lane
    return "branch" if result.get("exact") else "branch estimate"


def _unseen(sizes: dict[str, Any], cache: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A request the extension never saw: no saving is counted for it."""
    sizes = {**sizes, "extension": sizes["installed"], "both": sizes["dist"]}
    return sizes, {**cache, "extension": cache.get("installed"), "both": cache.get("dist")} if cache else cache


def finish(
    meta: dict[str, Any],
    result: dict[str, Any],
    summary: Summary,
    prices: PriceBook,
    judge: configuration.Judge,
    on_turn: Callable[[dict[str, Any]], None] | None,
) -> None:
    turn, call = meta["turn"], meta["call"]
    if "error" in result:
        summary.skip(turn.index, result["error"])
        return
    sizes, cache = result["bytes"], result["cacheWrite"]
    lane = meta["lane"]
    evidence = compaction_evidence(turn, meta, judge)
    if evidence == "unseen":
        sizes, cache = _unseen(sizes, cache)
    matches = [c for c in CONFIGS if call.payload_bytes is not None and sizes[c] == call.payload_bytes]
    row = {
        "index": turn.index,
        "entry_id": turn.entry_id,
        "call": turn.kind,
        "call_is": CALL_KINDS[turn.kind] + EVIDENCE.get(evidence, ""),
        "requests": turn.requests,
        "evidence": evidence,
        "provider": call.provider,
        "continuity": call.continuity,
        "sent": lane,
        "measured_as": MEASURED_AS[measured_as_key(turn.kind, lane, result)]
        + (SPLIT_NOTE if turn.requests > 1 else ""),
        "bytes": sizes,
        "cache_write": cache if lane != "delta" else None,
        "unpatched_bytes": sizes["installed"],
        "patched_bytes": sizes["dist"],
        "recorded_payload_bytes": call.payload_bytes,
        "recorded_as": recorded_as(call.payload_bytes, sizes),
        "recorded_matches": matches,
        "extension_entry": meta["entry"],
        "context_bytes": result.get("context"),
        "collapsed": result["collapsed"],
        "copies_vary": result.get("varied", {}),  # tag -> distinct copies, where a tag has more than one
        "est_tokens_unpatched": sizes["installed"] // 4,
        "est_tokens_patched": sizes["dist"] // 4,
        "usage": meta["usage"],
        "model": turn.model,
        "directives": {
            "distinct": result["directives"],
            **({f"kept_{c}": result["kept"][c] for c in CONFIGS} if lane != "delta" else {}),
        },
    }
    verdict = judge.judge(row, meta["entry"], meta["recorded"], matches)
    row["sent_by"] = verdict.as_json()
    rates, no_price = prices.lookup(call.provider, turn.model)
    priced = money.of_call(row, meta["recorded"], rates, verdict.config)
    if verdict.candidates:  # (ambiguous: priced as each configuration that fits, for the range)
        priced["alternatives"] = [money.of_call(row, meta["recorded"], rates, c) for c in verdict.candidates]
    row["money"] = money.as_json(priced)
    summary.add(row, priced, rates, None if rates else no_price)
    if on_turn is not None:
        on_turn(row)
