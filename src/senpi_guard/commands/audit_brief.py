"""What `senpi-guard audit` prints of a session by default: one headline first (calls, cache-write
tokens, bytes, dollars and their basis), then a few short lines, each fitting the terminal (a path
goes on a line of its own). The per-call table and the whole summary are -v's (audit_view.py)."""

from __future__ import annotations

import textwrap
from typing import Any

from senpi_guard import ui
from senpi_guard.audit.money_text import usd

SHOWN_MISMATCHES = 3  # (-v and --json list them all)


def say(text: str, indent: str = "") -> None:
    """A sentence wrapped to the terminal (never inside a word, a path or a hyphenated word)."""
    print(
        textwrap.fill(
            text,
            ui.width(),
            initial_indent=indent,
            subsequent_indent=indent + "  ",
            break_long_words=False,
            break_on_hyphens=False,
        )
    )


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' if n != 1 else ''}"


def _less(before: int, after: int) -> str:
    if not before or before == after:
        return "unchanged" if before == after else "more"
    change = 100 * (before - after) / before
    return f"{change:.1f}% less" if change >= 0 else f"{-change:.1f}% more"


def _joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def headline(g: dict[str, Any]) -> str:
    """The first line: calls, then cache-write tokens, bytes and dollars at list price, saved or
    more (each said as it went: keep-first can send more bytes than upstream's keep-last)."""
    calls = _plural(g["calls"], "call")
    if not g["counted_calls"]:
        return f"{calls}, none of a lane senpi recorded: no saving counted"
    price = g["list_price_usd"]
    changes = [
        (g["cache_write_tokens_saved"], lambda n: f"{n:,} cache-write tokens"),
        (g["bytes"]["installed"] - g["bytes"]["both"], ui.size),
        (0 if price is None else price["saved"], usd),
    ]
    parts = []
    for sign, word in ((1, "saved"), (-1, "more")):
        items = [show(sign * n) for n, show in changes if sign * n > 0]
        if items:
            priced = price is not None and sign * price["saved"] > 0
            parts.append(f"{_joined(items)} {word}" + (" at list price" if priced else ""))
    text = f"{calls}: {'; '.join(parts) or 'nothing saved, nothing more'}"
    return text + (", no $ figure" if price is None else "")


def _model(group: dict[str, Any]) -> str:
    return f"{group['model'] or 'a model not recorded'} via {group['provider'] or 'a provider not recorded'}"


def _basis(g: dict[str, Any]) -> str:
    """What the headline's figures stand on: the two configurations, and whose list price."""
    parts = ["as installed → with both layers (dist patch and extension)"]
    price = g["list_price_usd"]
    if price is not None:
        paid = f"$ at the API list price of {', '.join(map(_model, price['models']))}, an estimate"
        free = price["only_a_basis"]
        if free:
            why = [
                f"{f['provider']} is a subscription" if f["subscription"] else f"{f['provider']} recorded no cost"
                for f in free
            ]
            paid += f", only a basis: {', '.join(why)} and pays no list price"
        parts.append(paid)
    parts += [f"no $ for {_model(u)}: {u['why']}" for u in g["unpriced"]]
    return "; ".join(parts)


def _copies(g: dict[str, Any]) -> str | None:
    varied = g["copies_vary"]
    rise = g["counted_calls"] and g["bytes"]["both"] > g["bytes"]["installed"]
    if varied:
        tags = ", ".join(f"{n} distinct <{tag}>" for tag, n in sorted(varied.items()))
        return f"copies vary: {tags}; keep-first keeps each distinct copy" + (
            ", so more bytes go out than with senpi's own keep-last" if rise else ""
        )
    if rise:
        return "more bytes go out than as installed: keep-first keeps directives senpi's own dedupe drops"
    return None


def print_headline(report: dict[str, Any]) -> None:
    """The headline, its basis, and whether the session's copies vary (-q prints these too)."""
    g = report["summary"]["at_a_glance"]
    say(headline(g))
    if g["counted_calls"]:
        say(_basis(g), "  ")
    copies = _copies(g)
    if copies:
        say(copies, "  ")
    if report.get("sample"):
        say(f"counted with {report['serializer']}", "  ")


LANES = (
    ("full", "full re-sends"),
    ("delta", "delta calls"),
    ("context", "other providers' calls"),
    ("summary", "summary requests"),
)


def _lanes(s: dict[str, Any]) -> None:
    for lane, name in LANES:
        sent = s["sent"][lane]
        if sent["turns"]:
            before, after = sent["bytes"]["installed"], sent["bytes"]["both"]
            say(f"{name}: {sent['turns']:,}, {ui.size(before)} → {ui.size(after)} ({_less(before, after)})")
    unknown = s["sent"]["unknown"]
    if unknown["turns"]:
        say(
            f"{_plural(unknown['turns'], 'call')} of a lane senpi did not record, not counted: "
            f"{ui.size(unknown['bytes']['installed'])} → {ui.size(unknown['bytes']['both'])} if each "
            "was a full re-send"
        )
    losing = s["turns_losing_a_directive"]
    if losing["installed"] or losing["both"]:
        say(
            f"a distinct directive was dropped in {_plural(losing['installed'], 'call')} as installed, "
            f"{losing['both']:,} with both layers"
        )


def _doubts(report: dict[str, Any]) -> None:
    """What makes the figures less than exact: said by default, never left to -v."""
    s = report["summary"]
    if report.get("fallback"):
        say(f"senpi's own session code is not (all) used: {report['fallback']}")
    rec = s["recorded_payload"]
    if rec["mismatches"]:
        say(f"senpi's own payloadBytes: {rec['matched']:,} of {rec['turns']:,} recorded calls match a configuration")
        for miss in rec["mismatches"][:SHOWN_MISMATCHES]:
            sizes = ", ".join(f"{config} {n:,}" for config, n in miss["audit"].items())
            say(
                f"MISMATCH at call #{miss['index']}: senpi recorded {miss['recorded']:,} bytes; the audit "
                f"counts {sizes}"
            )
    skipped = s["skipped_turns"]
    if skipped["turns"]:
        first = skipped["first"][0]
        say(
            f"skipped {_plural(skipped['turns'], 'call')} senpi's code could not serialise (first: call "
            f"#{first['index']}: {first['error']})"
        )


def print_brief(report: dict[str, Any]) -> None:
    """Below the headline: each lane, what makes the figures less than exact, the session."""
    _lanes(report["summary"])
    _doubts(report)
    if not report.get("sample"):
        counted = report["serializer"].split(" (", 1)[0]
        say(f"session, serialised by {counted}:")
    else:
        say("session:")
    print(ui.visible(report["session"]))
    say("more: -v (each call, and why), --json (every figure)")
