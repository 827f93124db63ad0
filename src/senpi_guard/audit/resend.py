"""What the dist patch changes on the installed senpi, in one sentence, priced where that matters.

On senpi 2026.8.4-2 and later upstream's keep-last dedupe already sends one copy of a repeated
directive (the last one); the patch keeps the first copy (and every distinct directive) instead.
One full re-send is then larger in bytes, but what was sent never changes, so a prompt cache
keeps its prefix; keep-last rewrites every earlier copy whenever a new one arrives. So there the
figure that matters is per call: cache writes, prompt tokens and dollars, over a sample session of
each headline fixture's shape (its replay's `resend` stats: one full re-send per user message),
at the audit's pricing. On older senpi every copy is re-sent as installed: bytes tell it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from senpi_guard.audit.money import BYTES_PER_TOKEN, Rates, Tokens, cost
from senpi_guard.audit.money_text import usd
from senpi_guard.audit.prices import PriceBook

# The model the audit's sample session records (demo/sample_session.py), priced at the anthropic
# list price the installed senpi's own model registry gives it.
PROVIDER, MODEL = "anthropic", "claude-opus-4-5"
CONFIGS = ("installed", "patched")
KEEP_LAST_WHY = (
    "the patch keeps the first copy of each directive, so what was sent never changes and the prompt "
    "cache keeps its prefix; upstream's keep-last rewrites every earlier copy whenever a new one "
    "arrives, so each full re-send writes the cache anew"
)
OLDER_WHY = "as installed every copy is re-sent on each full re-send; the patch sends the first and a short marker"


def rates_for(package_dir: Path | None) -> tuple[Rates | None, str]:
    return PriceBook(package_dir, None).lookup(PROVIDER, MODEL)


def per_call(resend: dict[str, Any], rates: Rates | None) -> dict[str, dict[str, float | None]]:
    """Per call and configuration: cache-write tokens, prompt tokens, and dollars (None unpriced).
    Every prompt byte is either read from the cache (the prefix the previous call sent) or written."""
    calls = resend["calls"]
    out = {}
    for config in CONFIGS:
        sent, written = resend[config]["bytes"], resend[config]["cacheWrite"]
        tokens = Tokens(cache_read=(sent - written) / BYTES_PER_TOKEN, cache_write=written / BYTES_PER_TOKEN)
        out[config] = {
            "cache_write_tokens": tokens.cache_write / calls,
            "prompt_tokens": tokens.prompt / calls,
            "usd": cost(rates, tokens) / calls if rates else None,
        }
    return out


def upstream_cheaper(figures: dict[str, dict[str, float | None]]) -> bool | None:
    """True when upstream's keep-last costs less per call (by dollars when priced, else when it is
    no worse in both cache writes and prompt tokens); None when unpriced and the two disagree."""
    mine, theirs = figures["patched"], figures["installed"]
    if mine["usd"] is not None and theirs["usd"] is not None:
        return theirs["usd"] < mine["usd"]
    keys = ("cache_write_tokens", "prompt_tokens")
    if all(theirs[k] <= mine[k] for k in keys) and any(theirs[k] < mine[k] for k in keys):  # type: ignore[operator]
        return True
    if all(mine[k] <= theirs[k] for k in keys):  # type: ignore[operator]
        return False
    return None


def _shape(name: str, resend: dict[str, Any], figures: dict[str, Any]) -> str:
    a, b = figures["installed"], figures["patched"]
    text = (
        f"{name} ({resend['calls']} calls): {a['cache_write_tokens']:,.0f} -> {b['cache_write_tokens']:,.0f} "
        f"cache-write tokens, {a['prompt_tokens']:,.0f} -> {b['prompt_tokens']:,.0f} prompt tokens"
    )
    if a["usd"] is not None:
        text += f", {usd(a['usd'])} -> {usd(b['usd'])}"
    verdict = upstream_cheaper(figures)
    if verdict:
        text += ' (upstream\'s keep-last is cheaper for this shape: set upstream_dedupe = "defer" for it)'
    elif verdict is None:
        writes_fewer = b["cache_write_tokens"] < a["cache_write_tokens"]
        text += (
            f" (the patch is cheaper wherever a cache read costs {'under' if writes_fewer else 'over'} "
            f"{_break_even(a, b):.2f}x a cache write)"
        )
    return text


def _short_shape(name: str, resend: dict[str, Any], figures: dict[str, Any]) -> str:
    """One shape in a few words: dollars where priced (else cache-write tokens), and the verdict."""
    a, b = figures["installed"], figures["patched"]
    if a["usd"] is not None:
        text = f"{name} ({resend['calls']} calls) {usd(a['usd'])} -> {usd(b['usd'])}"
    else:
        writes = f"{a['cache_write_tokens']:,.0f} -> {b['cache_write_tokens']:,.0f}"
        text = f"{name} ({resend['calls']} calls) {writes} cache-write tokens"
    if upstream_cheaper(figures):
        text += ' (keep-last is cheaper: upstream_dedupe = "defer" for sessions this short)'
    return text


def _break_even(a: dict[str, Any], b: dict[str, Any]) -> float:
    """The read/write price ratio below which the patch's fewer writes outweigh its extra reads."""
    writes = a["cache_write_tokens"] - b["cache_write_tokens"]
    reads = (b["prompt_tokens"] - b["cache_write_tokens"]) - (a["prompt_tokens"] - a["cache_write_tokens"])
    return writes / reads if reads else float("inf")


def keep_last_sentence(stats: dict[str, Any], headline: tuple[str, ...], package_dir: Path | None) -> dict[str, Any]:
    """What the patch changes beside upstream's keep-last: per call figures first, then the why and
    the one figure that could look like a loss (one full re-send's bytes)."""
    rates, where = rates_for(package_dir)
    shapes, short, figures = [], [], {}
    for name in headline:
        resend = (stats.get(name) or {}).get("resend")
        if resend:
            figures[name] = per_call(resend, rates)
            shapes.append(_shape(name, resend, figures[name]))
            short.append(_short_shape(name, resend, figures[name]))
    if not shapes:
        return {}
    priced = f"{MODEL} at the list price in senpi's model registry" if rates else f"unpriced: {where}"
    first = stats.get(headline[0]) or {}
    larger = ""
    if first.get("upstreamOnly", {}).get("bytes") and first.get("pipelineBytes"):
        larger = (
            f"; one full re-send of {headline[0]} is larger ({first['upstreamOnly']['bytes']:,} -> "
            f"{first['pipelineBytes']:,} bytes) because every distinct directive is kept where keep-last "
            "keeps only the last"
        )
    text = (
        "per call, upstream's keep-last -> patched (an estimate on a sample session of each shape, "
        f"every call a full re-send, {BYTES_PER_TOKEN} bytes/token, {priced}): " + "; ".join(shapes)
    )
    brief = (
        "per call, upstream's keep-last -> patched (an estimate on sample sessions; why, and a full "
        "re-send's bytes: -v): " + "; ".join(short)
    )
    return {
        "text": f"{text}. Why: {KEEP_LAST_WHY}{larger}",
        "short": brief,
        "per_call": figures,
        "model": MODEL,
        "prices": where,
    }


def older_sentence(stats: dict[str, Any], headline: tuple[str, ...]) -> dict[str, Any]:
    figures = [f"{name}: {stats[name]['headline']}" for name in headline if (stats.get(name) or {}).get("headline")]
    if not figures:
        return {}
    return {"text": f"one full re-send, as installed -> patched: {'; '.join(figures)} ({OLDER_WHY})"}


def sentence(
    stats: dict[str, Any], headline: tuple[str, ...], keep_last: bool, package_dir: Path | None
) -> dict[str, Any]:
    """The `changes` line of verify, apply, status and demo (empty when the replay gave no figures)."""
    if keep_last:
        return keep_last_sentence(stats, headline, package_dir)
    return older_sentence(stats, headline)


def unverified(keep_last: bool) -> str:
    """status before any replay: what the patch changes, without figures."""
    if keep_last:
        return (
            f"keeps the first copy of each directive beside upstream's keep-last ({KEEP_LAST_WHY}); "
            "`senpi-guard verify` or `apply --dry-run` prices it per call"
        )
    return f"sends one copy of each repeated directive ({OLDER_WHY})"
