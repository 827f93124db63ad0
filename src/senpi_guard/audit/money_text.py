"""The audit summary's tokens and dollars, in sentences (audit/ledger.py sums them)."""

from __future__ import annotations

from typing import Any

from senpi_guard.audit.money import BYTES_PER_TOKEN

LAYERS = (
    ("installed", "as installed"),
    ("dist", "with the dist patch"),
    ("extension", "with the extension alone"),
    ("both", "with both layers"),
)


def usd(x: float) -> str:
    sign = "-" if x < 0 else ""
    return f"{sign}${abs(x):,.2f}" if abs(x) >= 1 else f"{sign}${abs(x):.4f}"


def _models(groups: list[dict[str, Any]]) -> str:
    return ", ".join(f"{g['model']}" + (f" ({g['calls']} calls)" if len(groups) > 1 else "") for g in groups)


def beside_bytes(money: dict[str, Any] | None) -> str:
    """What the bytes headline adds: dollars at list price, or a subscription's tokens."""
    if not money or not money["calls"]:
        return ""
    paid = [g for g in money["by_model"] if g["usd"] is not None]
    if money["usd"] is not None:
        cost = money["usd"]
        return (
            f"; ≈ {usd(cost['installed'])} → {usd(cost['both'])} at API list price for {_models(paid)} "
            f"(≈ {usd(money['saved_usd']['both'])} saved, an estimate)"
        )
    tokens = money["tokens"]
    return (
        f"; {tokens['installed']['total']:,} → {tokens['both']['total']:,} tokens"
        f" ({money['saved_tokens']['both']:,} fewer)"
    )


def _fewer(saved: dict[str, int]) -> str:
    """Tokens fewer per kind; a kind that grows says so (a prefix kept whole turns writes into reads)."""
    parts = [
        f"{saved[key]:,} {name}" if saved[key] > 0 else f"{-saved[key]:,} more {name}"
        for key, name in (("cacheRead", "cache reads"), ("cacheWrite", "cache writes"), ("input", "input"))
        if saved[key]
    ]
    return ", ".join(parts) if parts else "none"


def _tokens(group: dict[str, Any]) -> str:
    tokens = group["tokens"]
    counted = ", ".join(f"{tokens[config]['total']:,} {words}" for config, words in LAYERS)
    saved = group["saved_tokens"]["both"]
    return f"{counted} ({saved['total']:,} fewer with both: {_fewer(saved)})"


def _price(rates: dict[str, Any]) -> str:
    above = ", ".join(f"{tier['inputTokensAbove']:,.0f}" for tier in rates["tiers"])
    tiers = f", other rates above {above} prompt tokens" if above else ""
    return (
        f"${rates['input']:g}/M input, ${rates['cacheRead']:g}/M cache read, ${rates['cacheWrite']:g}/M cache "
        f"write (${rates['cacheWrite1h']:g}/M for 1 h), ${rates['output']:g}/M output{tiers}"
    )


def _group(group: dict[str, Any]) -> list[str]:
    name = f"{group['model']} via {group['provider']}"
    estimated = group["tokens_estimated_calls"]
    plural = "s" if group["calls"] != 1 else ""
    how = f"{group['calls']} call{plural}: {group['tokens_recorded_calls']} with the usage senpi recorded" + (
        f", {estimated} estimated at {BYTES_PER_TOKEN} bytes/token (system prompt, tools and output not counted)"
        if estimated
        else ""
    )
    if group["subscription"] or not group["pays_list_price"]:
        why = (
            "a subscription: it pays no list price"
            if group["subscription"]
            else "a provider senpi recorded no cost for (0 or none): it pays no list price"
        )
        return [
            f"{name} ({how}) is {why}; tokens that count against its limits: {_tokens(group)}",
            *_token_range(group),
        ]
    lines = [f"tokens, {name} ({how}): {_tokens(group)}"]
    if group["usd"] is None:
        lines += _token_range(group)
    if group["usd"] is None:
        lines.append(f"  no $ figure for {group['model']}: {group['no_price']}")
        return lines
    cost, saved = group["usd"], group["saved_usd"]
    counted = ", ".join(f"{usd(cost[config])} {words}" for config, words in LAYERS)
    recorded = (
        f"; senpi recorded {usd(group['recorded_usd'])} for these calls" if group["recorded_usd"] is not None else ""
    )
    lines.append(
        f"  ≈ {counted} at API list price for {group['model']}: ≈ {usd(saved['both'])} saved with both "
        f"layers, {usd(saved['dist'])} with the dist patch, {usd(saved['extension'])} with the extension "
        f"(an estimate; {_price(group['price'])}, from {group['price']['source']}){recorded}"
    )
    spread = group.get("usd_range")
    if spread:
        lines.append(
            f"  ambiguous: {spread['ambiguous_calls']} calls fit two configurations equally well; as installed "
            f"{usd(spread['installed'][0])}–{usd(spread['installed'][1])}, with both layers "
            f"{usd(spread['both'][0])}–{usd(spread['both'][1])}, "
            f"saved {usd(spread['saved'][0])}–{usd(spread['saved'][1])}"
        )
    return lines


def _token_range(group: dict[str, Any]) -> list[str]:
    spread = group.get("tokens_range")
    if not spread:
        return []
    return [
        f"  ambiguous: {spread['ambiguous_calls']} calls fit two configurations equally well; as installed "
        f"{spread['installed'][0]:,}–{spread['installed'][1]:,} tokens, with both layers "
        f"{spread['both'][0]:,}–{spread['both'][1]:,}, {spread['saved'][0]:,}–{spread['saved'][1]:,} fewer"
    ]


def lines(money: dict[str, Any] | None) -> list[str]:
    if not money or not money["calls"]:
        return []
    found = [line for group in money["by_model"] for line in _group(group)]
    return [
        *found,
        "tokens of a layer: the bytes it sends more or less, as bytes / "
        f"{BYTES_PER_TOKEN} tokens where they sit in each call (cached prefix: cache reads; past it: cache "
        "writes); a delta call counts only the new messages it sends",
    ]
