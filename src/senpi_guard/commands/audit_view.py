"""How `senpi-guard audit -v` prints a session: one row per call, then the summary in sentences (the
headline above them and the default view are audit_brief.py's)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from senpi_guard import ui
from senpi_guard.audit import money_text as money_view

KIND = {"bootstrap": "bootstrap", "flatten": "flatten", "disabled": "disabled", "delta": "delta", "fork": "fork"}


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "0%"


def _k(n: int | None) -> str:
    return "-" if n is None else ui.size(n)


def _say(text: str) -> None:
    """A summary sentence (-v's: one line, however long)."""
    print(text)


def print_header(path: Path, server) -> None:
    print(f"session   {ui.visible(path)}")
    how = (
        "senpi's own buildSessionContext + convertToLlm"
        if server.reconstruction == "senpi"
        else "senpi-guard's reconstruction of senpi's context"
    )
    _say(f"serialised by {server.label}; contexts rebuilt with {how}")
    if server.fallback:
        _say(f"senpi's own session code is not (all) used: {server.fallback}")
    _say(
        "columns: prompt bytes each call sent as installed, with the dist layer, the extension, both; "
        "new,inst/new,both: of those, bytes not in the provider's cache; by: which configuration sent the "
        "call (plain: senpi-guard's entry for it, =: senpi's own payloadBytes match it, ~: inferred from "
        "its tokens, ?: ambiguous, !: senpi's payloadBytes match no configuration); "
        "sent: the lane, or compact/branch for the summary request a compaction or branch summary implies"
    )
    print(
        f"{'call':>5} {'entry':<9}{'sent':<14}{'installed':>9}{'dist':>8}{'ext':>8}{'both':>8}"
        f"{'new,inst':>9}{'new,both':>9} {'by':<7} collapsed"
    )


# what senpi's payloadBytes can match ("unknown": several configurations give those bytes)
MATCHED = frozenset({"installed", "dist", "extension", "both", "unknown"})
BY = {"installed": "inst", "dist": "dist", "extension": "ext", "both": "both"}
KINDS = {"turn": "turn", "compaction": "compact", "branch_summary": "branch"}


class Table:
    """-v's per-call rows, held in a file that spills to disk (not in memory) until the headline
    above them is known."""

    def __init__(self, file: IO[str]) -> None:
        self.file = file

    def row(self, row: dict[str, Any]) -> None:
        self.file.write(row_line(row) + "\n")

    def print(self) -> None:
        self.file.seek(0)
        shutil.copyfileobj(self.file, sys.stdout)


@contextmanager
def table() -> Iterator[Table | None]:
    """-v's table of rows; None without -v."""
    if not ui.verbose():
        yield None
        return
    with tempfile.SpooledTemporaryFile(max_size=1 << 20, mode="w+", encoding="utf-8") as file:
        yield Table(file)


def row_line(row: dict[str, Any]) -> str:
    sizes, cache = row["bytes"], row["cache_write"] or {}
    mismatch = row["recorded_payload_bytes"] is not None and row["recorded_as"] not in MATCHED
    kind = KIND.get(row["continuity"], "?") if row["continuity"] else None
    lane = row["sent"] if kind in (None, row["sent"]) else f"{row['sent']}:{kind}"
    if row["sent"] == "context":
        lane = f"ctx:{row['provider']}"
    if row["call"] != "turn":  # (a summary request: its kind says more than its lane)
        lane = KINDS[row["call"]]
    by = row["sent_by"]
    mark = {"entry": "", "payloadBytes": "=", "inferred": "~", "ambiguous": "?", "none": "-"}[by["by"]]
    who = ("-" if by["by"] == "none" else f"{mark}{BY.get(by['config'], by['config'])}") + ("!" if mismatch else "")
    collapsed = ", ".join(f"{tag}×{n}" for tag, n in row["collapsed"].items())
    line = (
        f"{row['index']:>5} {row['entry_id'][:8]:<9}{lane[:13]:<14}{_k(sizes['installed']):>9}"
        f"{_k(sizes['dist']):>8}{_k(sizes['extension']):>8}{_k(sizes['both']):>8}"
        f"{_k(cache.get('installed')):>9}{_k(cache.get('both')):>9} {who:<7} {collapsed}"
    )
    return line.rstrip()


SENT_BY = {
    "entry": "from senpi-guard's entry for the call (exact)",
    "payloadBytes": "from senpi's own payloadBytes",
    "inferred": "inferred from the recorded tokens",
    "ambiguous": "ambiguous (two configurations fit its tokens equally well: the saving is a range)",
    "none": "as installed (nothing recorded says otherwise; every configuration sends the same, or no usage)",
}


def _calls(calls: dict[str, int]) -> str:
    names = {"compaction": "compaction", "branch_summary": "branch summary"}
    return ", ".join(f"{n} {names[kind]}" for kind, n in sorted(calls.items()) if kind in names)


def _change(before: int, after: int) -> str:
    if after <= before:
        return f"{_percent(before - after, before)} less"
    return f"{_percent(after - before, before)} more"


def _calls_line(s: dict[str, Any]) -> None:
    sent = s["sent"]
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(s["continuity"].items()))
    providers = ", ".join(f"{name} {n}" for name, n in sorted(s["providers"].items()))
    summaries = sent["summary"]["turns"]
    _say(
        f"calls: {s['turns']} ({providers}): {sent['full']['turns']} full re-sends, {sent['delta']['turns']} "
        f"delta, {sent['unknown']['turns']} unknown"
        + (f" ({kinds})" if kinds else "")
        + (f", {sent['context']['turns']} by other providers" if sent["context"]["turns"] else "")
        + (
            f", {summaries} summary request{'s' * (summaries != 1)} ({_calls(s['calls'])}; bytes estimated: "
            "the summarised messages' text)"
            if summaries
            else ""
        )
    )


def _lanes(s: dict[str, Any]) -> None:
    _calls_line(s)
    sent = s["sent"]
    by = s["sent_by"]
    _say(
        "which configuration sent each call: "
        + ", ".join(f"{n} {SENT_BY[how]}" for how, n in sorted(by.items()) if how in SENT_BY)
    )
    head = s["headline"]
    if head["turns"]:
        full = sent["full"]["bytes"]
        change = (
            f"saved {head['saved_bytes']:,} ({head['saved_percent']}%)"
            if head["saved_bytes"] >= 0
            else f"{-head['saved_bytes']:,} more ({-head['saved_percent']}%): the patch keeps the "
            "directives senpi as installed drops"
        )
        _say(
            f"full re-sends: {head['unpatched_bytes']:,} bytes as installed, "
            f"{head['patched_bytes']:,} with the dist patch ({change}); {full['extension']:,} with the "
            f"extension alone, {full['both']:,} with both layers"
        )
    if sent["delta"]["turns"]:
        delta = sent["delta"]["bytes"]
        _say(
            f"delta calls: {delta['installed']:,} bytes sent; the dist patch does not act there; "
            f"with the extension layer {delta['extension']:,} ({_change(delta['installed'], delta['extension'])})"
        )
    if sent["context"]["turns"]:
        other = sent["context"]["bytes"]
        _say(
            f"other providers (each call sends the whole context; counted: the text of every message): "
            f"{other['installed']:,} bytes as installed; with the extension layer {other['extension']:,} "
            f"({_change(other['installed'], other['extension'])}); the dist patch does not act there"
        )
    every = s["every_call"]
    if every["turns"]:
        _say(
            f"every call: {every['bytes']['installed']:,} bytes as installed, {every['bytes']['both']:,} "
            f"with both layers ({_change(every['bytes']['installed'], every['bytes']['both'])})"
            + money_view.beside_bytes(s.get("money"))
        )
    if sent["unknown"]["turns"]:
        unknown = sent["unknown"]
        _say(
            f"unknown lane (no record; senpi 2026.7.31-2 - 2026.8.1): {unknown['unpatched_bytes']:,} "
            f"bytes if each was a full re-send, {unknown['patched_bytes']:,} patched; not in the "
            "totals above"
        )


_RECORDED_AS = {
    "installed": "as installed",
    "dist": "with the dist patch",
    "extension": "with the extension alone",
    "both": "with both layers",
    "unknown": "by more than one configuration (unknown)",
    "mismatch": "by none (MISMATCH)",
}


def print_summary(report: dict[str, Any]) -> None:
    s = report["summary"]
    if report.get("sample"):
        _say(
            "SAMPLE: every figure below is what senpi-guard's own sample senpi 2026.8.1 would send (no "
            "keep-last dedupe of its own, no delta lane), not what your senpi sent; where your senpi "
            "recorded its payloadBytes, `recorded` shows how far apart they are"
        )
    _lanes(s)
    for line in money_view.lines(s.get("money")):
        _say(line)
    _cache(s)
    _recorded(s)
    _extremes(s)
    _say(
        "columns: installed = senpi as installed (with its own dedupe where it has one), dist = with "
        "the dist patch, ext = with the extension layer alone, both = with both layers; new = what a "
        "prompt cache writes anew; recorded = senpi's own payloadBytes and the configuration it matches "
        "(=? when several give those bytes; ! when none does); tokens are estimates (bytes / 4)"
    )
    if report["warnings"]:
        print_warnings(report)


def _cache(s: dict[str, Any]) -> None:
    cache, losing = s["cache_write"], s["turns_losing_a_directive"]
    if cache["full_turns"]:
        written = cache["bytes"]
        _say(
            f"prompt cache: over {cache['full_turns']} full re-sends a provider's cache had to write "
            f"{written['installed']:,} bytes anew as installed, {written['dist']:,} with the dist patch, "
            f"{written['extension']:,} with the extension alone and {written['both']:,} with both; a "
            f"distinct directive was dropped in {losing['installed']} calls as installed, "
            f"{losing['dist']} with the dist patch, {losing['extension']} with the extension alone and "
            f"{losing['both']} with both"
        )
    if cache["context_turns"]:
        written = cache["context_bytes"]
        _say(
            f"prompt cache, other providers: {written['installed']:,} bytes written anew as installed, "
            f"{written['extension']:,} with the extension layer"
        )


def _recorded(s: dict[str, Any]) -> None:
    rec = s["recorded_payload"]
    if rec["turns"]:
        found = ", ".join(f"{n} {_RECORDED_AS.get(config, config)}" for config, n in sorted(rec["recorded_as"].items()))
        _say(
            f"senpi's own payloadBytes: {rec['matched']} of {rec['turns']} recorded calls match a "
            f"configuration exactly ({found})"
        )
        for miss in rec["mismatches"]:
            sizes = ", ".join(f"{config} {n:,}" for config, n in miss["audit"].items())
            _say(
                f"  MISMATCH at call #{miss['index']}: senpi recorded {miss['recorded']:,} bytes; the audit "
                f"counts {sizes}"
            )


def _extremes(s: dict[str, Any]) -> None:
    if s["skipped_turns"]["turns"]:
        first = s["skipped_turns"]["first"][0]
        _say(
            f"skipped {s['skipped_turns']['turns']} calls senpi's code could not serialise "
            f"(first: call #{first['index']}: {first['error']})"
        )
    if s["largest_turn"]:
        big = s["largest_turn"]
        _say(
            f"largest call: #{big['index']} ({big['sent']}), {big['unpatched_bytes']:,} bytes "
            f"({big['patched_bytes']:,} with the dist patch)"
        )
    if s["context_window_tokens"]:
        over = s["first_turn_over_window_unpatched"]
        line = f"context window {s['context_window_tokens']:,} tokens: "
        line += (
            "never exceeded by a full re-send as installed"
            if over is None
            else f"first exceeded at call #{over} as installed; patched that call "
            + ("still exceeds" if s["that_turn_over_window_patched"] else "fits")
        )
        _say(line)


def print_warnings(report: dict[str, Any]) -> None:
    """What the audit of one session skipped or could not use, in one line on stderr."""
    lines = report.get("warning_lines", {})

    def where(what: str, n: int) -> str:
        line = lines.get(what)
        return "" if line is None else f" (line {line})" if n == 1 else f" (first at line {line})"

    skipped = ", ".join(f"{n} {what}{where(what, n)}" for what, n in sorted(report["warnings"].items()))
    print(f"warnings in {report['session']}: skipped {skipped}", file=sys.stderr)
