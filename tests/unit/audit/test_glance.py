"""audit/glance.py directly, on summaries a real audit Summary and Ledger build: the figures `audit`
leads with are the summary's own (calls counted and not, bytes and cache-write tokens as installed
against both layers), list-price dollars are summed over every model that has a price, paid or
not, a subscription's marked as only a basis, and a model without a price is named with why;
without a priced call there is no dollar figure at all."""

from __future__ import annotations

from typing import Any

import pytest

from senpi_guard.audit import glance, money
from senpi_guard.audit.money import Rates, Tokens
from senpi_guard.audit.summary import CONFIGS, Summary

SONNET = Rates(3, 15, 0.3, 3.75)
USAGE = money.Recorded(Tokens(input=3, output=50, cache_read=9000, cache_write=2100), 0.011334)


def row(index: int, provider: str, model: str, sent: str = "full", varied: dict | None = None) -> dict[str, Any]:
    """A call of 40,000 bytes as installed, 24,000 fewer with the dist patch and with both layers."""
    sizes = {"installed": 40_000, "dist": 16_000, "extension": 40_000, "both": 16_000}
    return {
        "index": index,
        "call": "turn",
        "provider": provider,
        "continuity": "flatten",
        "sent": sent,
        "bytes": sizes,
        "cache_write": dict(sizes),
        "recorded_payload_bytes": None,
        "recorded_as": None,
        "recorded_matches": [],
        "collapsed": {},
        "copies_vary": varied or {},
        "unpatched_bytes": 40_000,
        "patched_bytes": 16_000,
        "est_tokens_unpatched": 10_000,
        "est_tokens_patched": 4_000,
        "model": model,
        "sent_by": {"by": "none"},
        "directives": {"distinct": 1, **{f"kept_{c}": 1 for c in CONFIGS}},
    }


def summary_of(*calls: tuple[dict[str, Any], Rates | None]) -> dict[str, Any]:
    """The summary `audit` builds of these calls (each priced by money.of_call at its rates)."""
    summary = Summary(True)
    for each, rates in calls:
        summary.add(each, money.of_call(each, USAGE, rates), rates, None if rates else "senpi lists no price for it")
    return summary.result()


def test_the_figures_are_the_summarys_own():
    s = summary_of(
        (row(0, "anthropic", "claude-sonnet-4-6", varied={"ultrawork-mode": 2}), SONNET),
        (row(1, "anthropic", "claude-sonnet-4-6", sent="unknown"), SONNET),
        (row(2, "anthropic", "claude-sonnet-4-6", sent="delta"), SONNET),
    )
    seen = glance.of(s)
    assert seen["calls"] == 3 and seen["counted_calls"] == 2 and seen["unknown_lane_calls"] == 1
    assert seen["bytes"] == {"installed": 80_000, "both": 32_000}
    tokens = s["money"]["tokens"]
    assert seen["cache_write_tokens"] == {
        "installed": tokens["installed"]["cacheWrite"],
        "both": tokens["both"]["cacheWrite"],
    }
    assert seen["cache_write_tokens_saved"] == tokens["installed"]["cacheWrite"] - tokens["both"]["cacheWrite"] > 0
    assert seen["copies_vary"] == {"ultrawork-mode": 2}
    assert s["at_a_glance"] == seen


def test_list_price_dollars_sum_every_priced_model_and_mark_a_subscription_as_a_basis():
    s = summary_of(
        (row(0, "anthropic", "claude-sonnet-4-6"), SONNET),
        (row(1, "anthropic", "claude-sonnet-4-6"), SONNET),
        (row(2, "claude-sdk-oauth", "claude-opus-4-5"), SONNET),
    )
    price = glance.of(s)["list_price_usd"]
    by_model = s["money"]["by_model"]
    installed = sum(g["list_price_equivalent_usd"]["installed"] for g in by_model)
    both = sum(g["list_price_equivalent_usd"]["both"] for g in by_model)
    assert price["installed"] == pytest.approx(3 * 0.011334) == pytest.approx(installed)
    assert price["both"] == pytest.approx(both) and price["saved"] == pytest.approx(installed - both)
    assert price["saved"] > 0 and price["calls"] == 3
    assert price["models"] == [
        {"model": "claude-sonnet-4-6", "provider": "anthropic"},
        {"model": "claude-opus-4-5", "provider": "claude-sdk-oauth"},
    ]
    assert price["only_a_basis"] == [{"provider": "claude-sdk-oauth", "subscription": True}]


def test_a_model_without_a_price_is_named_with_why_and_left_out_of_the_dollars():
    s = summary_of(
        (row(0, "anthropic", "claude-sonnet-4-6"), SONNET),
        (row(1, "local", "llama-9"), None),
    )
    seen = glance.of(s)
    assert seen["unpriced"] == [{"model": "llama-9", "provider": "local", "why": "senpi lists no price for it"}]
    assert seen["list_price_usd"]["calls"] == 1 and seen["list_price_usd"]["installed"] == pytest.approx(0.011334)


def test_no_priced_call_is_no_dollar_figure():
    assert glance.of(summary_of((row(0, "local", "llama-9"), None)))["list_price_usd"] is None
    assert glance.of(summary_of((row(0, "anthropic", "x", sent="unknown"), SONNET)))["list_price_usd"] is None
    empty = glance.of(Summary(True).result())
    assert empty["list_price_usd"] is None and empty["unpriced"] == [] and empty["cache_write_tokens_saved"] == 0
