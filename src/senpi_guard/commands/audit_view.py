"""How `senpi-guard audit` prints a session: one row per call, then the summary in sentences."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

from senpi_guard import ui

WIDTH = 100  # the table fits this many columns unless -v
KIND = {"bootstrap": "bootstrap", "flatten": "flatten", "disabled": "disabled", "delta": "delta",
        "fork": "fork"}


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "0%"


def _k(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n / 1024:,.1f}K" if n >= 1024 else str(n)


def _say(text: str) -> None:
    """A summary sentence, wrapped to the table's width unless -v."""
    print(text if ui.verbose() else textwrap.fill(text, WIDTH, subsequent_indent="  "))


def print_header(path: Path, server) -> None:
    print(f"session   {path}")
    how = ("senpi's own buildSessionContext + convertToLlm" if server.reconstruction == "senpi"
           else "senpi-guard's reconstruction of senpi's context")
    _say(f"serialised by {server.label}; contexts rebuilt with {how}")
    print(f"{'turn':>5} {'entry':<9}{'sent':<15}{'unpatched':>9}{'patched':>9}{'+ext':>8}{'saved':>6}"
          f"{'new,unp':>9}{'new,pat':>9}{'recorded':>9}  collapsed")


def print_row(row: dict[str, Any]) -> None:
    saved = 1 - row["patched_bytes"] / row["unpatched_bytes"] if row["unpatched_bytes"] else 0
    recorded = row["recorded_payload_bytes"]
    check = "-" if recorded is None else ("= senpi" if recorded == row["unpatched_bytes"] else _k(recorded) + "!")
    kind = KIND.get(row["continuity"], "?") if row["continuity"] else None
    lane = row["sent"] if kind in (None, row["sent"]) else f"{row['sent']}:{kind}"
    collapsed = ", ".join(f"{tag}×{n}" for tag, n in row["collapsed"].items())
    line = (f"{row['index']:>5} {row['entry_id'][:8]:<9}{lane[:14]:<15}{_k(row['unpatched_bytes']):>9}"
            f"{_k(row['patched_bytes']):>9}{_k(row['extension_bytes']):>8}{saved:>6.0%}"
            f"{_k(row['cache_write_unpatched']):>9}"
            f"{_k(row['cache_write_patched']):>9}{check:>9}  {collapsed}")
    if len(line) > WIDTH and not ui.verbose():
        line = line[:WIDTH - 1] + "…"
    print(line.rstrip())


def _lanes(s: dict[str, Any]) -> None:
    sent = s["sent"]
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(s["continuity"].items()))
    _say(f"calls: {sent['full']['turns']} full re-sends, {sent['delta']['turns']} delta, "
         f"{sent['unknown']['turns']} unknown ({kinds})")
    head = s["headline"]
    change = (f"saved {head['saved_bytes']:,} ({head['saved_percent']}%)" if head["saved_bytes"] >= 0 else
              f"{-head['saved_bytes']:,} more ({-head['saved_percent']}%): the patch keeps the "
              "directives senpi as installed drops")
    _say(f"full re-sends: {head['unpatched_bytes']:,} bytes as senpi is installed, "
         f"{head['patched_bytes']:,} patched; {change}")
    if sent["delta"]["turns"]:
        delta = sent["delta"]
        _say(f"delta calls: {delta['unpatched_bytes']:,} bytes sent; the dist patch does not act there; "
             f"with the extension layer {delta['extension_bytes']:,} "
             f"({_percent(delta['saved_with_extension_bytes'], delta['unpatched_bytes'])} less)")
    full = sent["full"]
    if full["turns"]:
        _say(f"full re-sends with both layers (dist patch + extension): {full['extension_bytes']:,} bytes")
    if sent["unknown"]["turns"]:
        unknown = sent["unknown"]
        _say(f"unknown lane (no record; senpi 2026.7.31-2 - 2026.8.1): {unknown['unpatched_bytes']:,} "
             f"bytes if each was a full re-send, {unknown['patched_bytes']:,} patched; not in the "
             "totals above")


def print_summary(report: dict[str, Any]) -> None:
    s = report["summary"]
    _lanes(s)
    cache, losing = s["cache_write"], s["turns_losing_a_directive"]
    if cache["full_turns"]:
        _say(f"prompt cache: over {cache['full_turns']} full re-sends a provider's cache had to write "
             f"{cache['unpatched_bytes']:,} bytes anew as installed and {cache['patched_bytes']:,} "
             f"patched, and a distinct directive was dropped in {losing['unpatched']} calls as "
             f"installed and {losing['patched']} patched")
    rec = s["recorded_payload"]
    if rec["turns"]:
        _say(f"senpi's own payloadBytes: matched the audit exactly on {rec['matched']} of "
             f"{rec['turns']} recorded calls")
        for miss in rec["mismatches"]:
            _say(f"  MISMATCH at turn #{miss['index']}: senpi recorded {miss['recorded']:,} bytes, "
                 f"the audit counts {miss['audit']:,}")
    if s["skipped_turns"]["turns"]:
        first = s["skipped_turns"]["first"][0]
        _say(f"skipped {s['skipped_turns']['turns']} calls senpi's code could not serialise "
             f"(first: turn #{first['index']}: {first['error']})")
    if s["largest_turn"]:
        big = s["largest_turn"]
        _say(f"largest call: #{big['index']} ({big['sent']}), {big['unpatched_bytes']:,} bytes "
             f"({big['patched_bytes']:,} patched)")
    if s["context_window_tokens"]:
        over = s["first_turn_over_window_unpatched"]
        line = f"context window {s['context_window_tokens']:,} tokens: "
        line += ("never exceeded by a full re-send as installed" if over is None else
                 f"first exceeded at turn #{over} as installed; patched that call "
                 + ("still exceeds" if s["that_turn_over_window_patched"] else "fits"))
        _say(line)
    _say("'unpatched' is senpi as installed (with its own dedupe where it has one); tokens are "
         "estimates (bytes / 4); 'new' is what a prompt cache writes anew")
    if report["warnings"]:
        skipped = ", ".join(f"{n} {what}" for what, n in sorted(report["warnings"].items()))
        print(f"warnings: skipped {skipped}", file=sys.stderr)
