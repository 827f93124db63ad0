"""An audited session at a glance: the figures `audit` leads with, taken from its summary as they
are (calls, cache-write tokens, bytes and list-price dollars, as installed against both layers), and
the basis each stands on."""

from __future__ import annotations

from typing import Any


def _list_price(money: dict[str, Any]) -> dict[str, Any] | None:
    """Dollars at API list price over the calls of every model that has one, paid or not (a
    subscription's are only a basis: it pays none)."""
    priced = [g for g in money["by_model"] if g["list_price_equivalent_usd"] is not None]
    if not priced:
        return None
    usd = {c: round(sum(g["list_price_equivalent_usd"][c] for g in priced), 9) for c in ("installed", "both")}
    return {
        **usd,
        "saved": round(usd["installed"] - usd["both"], 9),
        "models": [{"model": g["model"], "provider": g["provider"]} for g in priced],
        "calls": sum(g["calls"] for g in priced),
        "only_a_basis": [
            {"provider": g["provider"], "subscription": g["subscription"]} for g in priced if not g["pays_list_price"]
        ],
    }


def of(s: dict[str, Any]) -> dict[str, Any]:
    """From an audit summary (summary.Summary.result()), before `at_a_glance` is added to it."""
    every, money = s["every_call"], s["money"]
    tokens = money["tokens"]
    return {
        "over": "the counted calls (every lane but unknown), senpi as installed against both layers",
        "calls": s["turns"],
        "counted_calls": every["turns"],
        "unknown_lane_calls": s["sent"]["unknown"]["turns"],
        "bytes": {"installed": every["bytes"]["installed"], "both": every["bytes"]["both"]},
        "cache_write_tokens": {"installed": tokens["installed"]["cacheWrite"], "both": tokens["both"]["cacheWrite"]},
        "cache_write_tokens_saved": tokens["installed"]["cacheWrite"] - tokens["both"]["cacheWrite"],
        "list_price_usd": _list_price(money) if money["calls"] else None,
        "unpriced": [
            {"model": g["model"], "provider": g["provider"], "why": g["no_price"]}
            for g in money["by_model"]
            if g["price"] is None
        ],
        "copies_vary": s["copies_vary"],
    }
