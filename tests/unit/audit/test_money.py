"""The audit's tokens and dollars (audit/money.py, prices.py, ledger.py, money_text.py), against
figures computed by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from senpi_guard.audit import money, money_text
from senpi_guard.audit.ledger import Ledger
from senpi_guard.audit.money import Rates, Tokens
from senpi_guard.audit.prices import PriceBook, rates_of

SONNET = Rates(3, 15, 0.3, 3.75)


def row(
    installed: int,
    both: int,
    fresh_installed: int | None,
    fresh_both: int | None,
    sent: str = "full",
    provider: str = "anthropic",
    model: str = "claude-sonnet-4-6",
    matches: tuple[str, ...] = (),
) -> dict:
    """An audit row: dist = installed, extension = both (enough for the arithmetic)."""
    sizes = {"installed": installed, "dist": installed, "extension": both, "both": both}
    cache = (
        None
        if fresh_installed is None
        else {"installed": fresh_installed, "dist": fresh_installed, "extension": fresh_both, "both": fresh_both}
    )
    return {
        "bytes": sizes,
        "cache_write": cache,
        "recorded_matches": list(matches),
        "sent": sent,
        "provider": provider,
        "model": model,
    }


def test_cost_is_senpis_calculate_cost_by_hand():
    # 1,000 input x $3 + 500 output x $15 + 20,000 reads x $0.30 + 3,000 5-minute writes x $3.75
    # + 1,000 hour-long writes x $6 (twice input) = 3,000 + 7,500 + 6,000 + 11,250 + 6,000 = 33,750 / 1e6
    tokens = Tokens(input=1000, output=500, cache_read=20_000, cache_write=4000, cache_write_1h=1000)
    assert money.cost(SONNET, tokens) == pytest.approx(0.03375, abs=1e-12)


def test_a_tier_prices_the_whole_call_once_the_prompt_is_above_it():
    tiered = Rates(2.5, 15, 0.25, 0, ((272_000, Rates(5, 22.5, 0.5, 0)),))
    assert money.cost(tiered, Tokens(input=200_000, output=1000)) == pytest.approx(0.5 + 0.015)
    assert money.cost(tiered, Tokens(input=300_000, output=1000)) == pytest.approx(1.5 + 0.0225)
    # the highest threshold exceeded wins, whatever the order they are listed in
    two = Rates(1, 1, 1, 1, ((500, Rates(3, 3, 3, 3)), (100, Rates(2, 2, 2, 2))))
    assert money.cost(two, Tokens(input=1000)) == pytest.approx(0.003)
    assert money.cost(two, Tokens(input=200)) == pytest.approx(0.0004)


def test_removed_bytes_come_out_of_their_place_in_the_call():
    base = Tokens(input=10, output=50, cache_read=10_000, cache_write=2000, cache_write_1h=500)
    after = money.shifted(base, cached=3000, fresh=1000, cacheless=False)
    assert after == Tokens(input=10, output=50, cache_read=7000, cache_write=1000, cache_write_1h=250)
    # more removed from the prefix than was read: the rest was written, then plain input; never below 0
    after = money.shifted(base, cached=11_000, fresh=0, cacheless=False)
    assert after == Tokens(input=10, output=50, cache_read=0, cache_write=1000, cache_write_1h=250)
    after = money.shifted(base, cached=0, fresh=2005, cacheless=False)
    assert after == Tokens(input=5, output=50, cache_read=10_000, cache_write=0, cache_write_1h=0)
    assert money.shifted(base, cached=50_000, fresh=50_000, cacheless=False).prompt == 0
    # sent more (negative): added where it sits
    after = money.shifted(base, cached=-400, fresh=-200, cacheless=False)
    assert after == Tokens(input=10, output=50, cache_read=10_400, cache_write=2200, cache_write_1h=550)
    # a provider that recorded no cache use: all plain input
    plain = Tokens(input=5000, output=9)
    assert money.shifted(plain, 1000, 500, cacheless=True) == Tokens(input=3500, output=9)


def test_one_recorded_call_priced_in_every_configuration():
    # installed 40,000 bytes, 8,000 past the cached prefix; both 16,000, 4,000 past it: the layers
    # remove 20,000 cached bytes (5,000 reads) and 4,000 new ones (1,000 writes)
    usage = money.Recorded(Tokens(input=3, output=50, cache_read=9000, cache_write=2100), 0.011334)
    call = money.of_call(row(40_000, 16_000, 8000, 4000), usage, SONNET)
    assert call["tokens_are"] == "recorded" and call["record_is"] == "installed"
    assert call["tokens"]["installed"] == usage.tokens
    assert call["tokens"]["both"] == Tokens(input=3, output=50, cache_read=4000, cache_write=1100)
    # (9 + 750 + 2,700 + 7,875) / 1e6 and (9 + 750 + 1,200 + 4,125) / 1e6
    assert call["usd"]["installed"] == pytest.approx(0.011334)
    assert call["usd"]["both"] == pytest.approx(0.006084)
    assert call["recorded_usd"] == 0.011334
    shown = money.as_json(call)
    assert shown["tokens"]["both"] == {
        "input": 3,
        "output": 50,
        "cacheRead": 4000,
        "cacheWrite": 1100,
        "cacheWrite1h": 0,
        "total": 5153,
    }


def test_a_record_of_the_guarded_configuration_is_shifted_from_that_one():
    # senpi's payloadBytes says the call went out with both layers: its record is "both"
    usage = money.Recorded(Tokens(cache_read=4000, cache_write=1000), None)
    call = money.of_call(row(40_000, 16_000, 8000, 4000, matches=("both", "extension")), usage, None)
    assert call["record_is"] == "both" and call["usd"] is None
    assert call["tokens"]["both"] == usage.tokens
    assert call["tokens"]["installed"] == Tokens(cache_read=9000, cache_write=2000)


def test_without_a_record_tokens_are_estimated_from_bytes():
    call = money.of_call(row(4000, 2000, 1000, 600), None, SONNET)
    assert call["tokens_are"] == "estimated" and call["recorded_usd"] is None
    assert call["tokens"]["installed"] == Tokens(cache_read=750, cache_write=250)
    assert call["tokens"]["both"] == Tokens(cache_read=350, cache_write=150)
    assert call["usd"]["installed"] == pytest.approx((750 * 0.3 + 250 * 3.75) / 1e6)


def test_a_delta_call_is_credited_only_for_the_new_messages_it_sends():
    usage = money.Recorded(Tokens(input=3, cache_read=50_000, cache_write=2000), None)
    call = money.of_call(row(8000, 2000, None, None, sent="delta"), usage, SONNET)
    # 6,000 fewer new bytes = 1,500 fewer writes; the 50,000 reads of the resident session stay
    assert call["tokens"]["both"] == Tokens(input=3, cache_read=50_000, cache_write=500)
    assert call["tokens"]["dist"] == usage.tokens


@pytest.mark.parametrize(
    "usage",
    [
        None,
        "lots",
        [],
        {},
        {"input": 5},
        {"input": float("nan"), "output": 1, "cacheRead": 0, "cacheWrite": 0},
        {"input": "5", "output": 1, "cacheRead": 0, "cacheWrite": 0},
        {"input": -1, "output": 1, "cacheRead": 0, "cacheWrite": 0},
        {"input": True, "output": 1, "cacheRead": 0, "cacheWrite": 0},
        {"input": float("inf"), "output": 1, "cacheRead": 0, "cacheWrite": 0},
        {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},  # a provider that reports nothing
    ],
)
def test_odd_usage_is_not_recorded(usage):
    assert money.recorded({"usage": usage}) is None


def test_odd_optional_fields_are_dropped_not_trusted():
    base = {"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4}
    assert money.recorded({"usage": {**base, "cacheWrite1h": 9}}).tokens.cache_write_1h == 0  # more than written
    assert money.recorded({"usage": {**base, "cacheWrite1h": "x"}}).tokens.cache_write_1h == 0
    assert money.recorded({"usage": {**base, "cacheWrite1h": 3}}).tokens.cache_write_1h == 3
    assert money.recorded({"usage": {**base, "cost": {"total": float("nan")}}}).cost is None
    assert money.recorded({"usage": {**base, "cost": "free"}}).cost is None
    assert money.recorded({"usage": {**base, "cost": {"total": 0.25}}}).cost == 0.25
    assert money.recorded("not a message") is None


def registry(tmp_path: Path) -> Path:
    data = tmp_path / "pkg" / "node_modules" / "@earendil-works" / "pi-ai" / "dist" / "providers" / "data"
    data.mkdir(parents=True)
    (data / "anthropic.json").write_text(
        json.dumps(
            {
                "anthropic-messages": {
                    "claude-sonnet-4-6": {
                        "id": "claude-sonnet-4-6",
                        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
                    },
                    "claude-free": {
                        "id": "claude-free",
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                    },
                }
            }
        )
    )
    (data / "openai.json").write_text(
        json.dumps(
            {
                "openai-responses": {
                    "gpt-x": {
                        "cost": {
                            "input": 2.5,
                            "output": 15,
                            "cacheRead": 0.25,
                            "cacheWrite": 0,
                            "tiers": [
                                {
                                    "inputTokensAbove": 272000,
                                    "input": 5,
                                    "output": 22.5,
                                    "cacheRead": 0.5,
                                    "cacheWrite": 0,
                                },
                                {"inputTokensAbove": "lots", "input": 9},
                            ],
                        }
                    }
                }
            }
        )
    )
    return tmp_path / "pkg"


def test_prices_come_from_senpis_registry_and_say_where(tmp_path):
    book = PriceBook(registry(tmp_path), None)
    rates, where = book.lookup("anthropic", "claude-sonnet-4-6")
    assert (rates.input, rates.output, rates.cache_read, rates.cache_write) == (3, 15, 0.3, 3.75)
    assert where.endswith("anthropic.json")
    assert book.lookup("claude-sdk-oauth", "claude-sonnet-4-6")[0] == rates  # senpi gives it anthropic's models
    tiered, _ = book.lookup("openai", "gpt-x")
    assert [above for above, _ in tiered.tiers] == [272000]  # the malformed tier is left out
    for provider, model, why in (
        ("anthropic", "claude-free", "lists no price"),
        ("anthropic", "claude-nope", "not in senpi's model registry"),
        ("../../etc", "passwd", "not in senpi's model registry"),
        ("rec", "rec-1", "not in senpi's model registry"),
        (None, "m", "no provider"),
    ):
        found, reason = book.lookup(provider, model)
        assert found is None and why in reason, reason
    assert PriceBook(None, None).lookup("anthropic", "claude-sonnet-4-6")[1].startswith("no model registry")


def test_models_json_prices_a_custom_model_and_overrides_a_builtin_one(tmp_path):
    models = tmp_path / "models.json"
    models.write_text(
        json.dumps(
            {
                "providers": {
                    "ollama": {"models": [{"id": "llama", "cost": {"input": 0.5, "output": 1}}]},
                    "anthropic": {"modelOverrides": {"claude-sonnet-4-6": {"cost": {"cacheRead": 0.1}}}},
                    "priced": {
                        "modelOverrides": {
                            "full": {"cost": {"input": 1, "output": 2, "cacheRead": 0.1, "cacheWrite": 1.25}},
                            "part": {"cost": {"input": 1}},
                        }
                    },
                }
            }
        )
    )
    book = PriceBook(registry(tmp_path), models)
    assert book.lookup("ollama", "llama")[0] == Rates(0.5, 1, 0, 0, (), f"{models} (providers.ollama.models)")
    merged, where = book.lookup("anthropic", "claude-sonnet-4-6")
    assert (merged.input, merged.cache_read) == (3, 0.1) and "cost override" in where
    assert book.lookup("priced", "full")[0].cache_write == 1.25
    assert book.lookup("priced", "part")[0] is None and "only part" in book.lookup("priced", "part")[1]
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert PriceBook(None, broken).lookup("priced", "full")[0] is None


def test_rates_refuse_what_is_no_price():
    assert rates_of({"input": -1, "output": 1}, "x") is None
    assert rates_of({"input": "3"}, "x") is None
    assert rates_of({}, "x") is None
    assert rates_of(["3"], "x") is None


def _priced(ledger: Ledger, r: dict, usage: money.Recorded | None, rates: Rates | None) -> None:
    ledger.add(r, money.of_call(r, usage, rates), rates, None if rates else "no price")


def test_the_ledger_keeps_a_subscription_to_tokens_and_sums_list_price_calls():
    ledger = Ledger()
    usage = money.Recorded(Tokens(input=3, output=50, cache_read=9000, cache_write=2100), 0.011334)
    for _ in range(2):
        _priced(ledger, row(40_000, 16_000, 8000, 4000), usage, SONNET)
    _priced(ledger, row(40_000, 16_000, 8000, 4000, provider="claude-sdk-oauth"), usage, SONNET)
    _priced(ledger, row(40_000, 16_000, 8000, 4000, sent="unknown"), usage, SONNET)  # not counted
    result = ledger.result()
    api, plan = result["by_model"]
    assert api["calls"] == 2 and api["usd"]["installed"] == pytest.approx(2 * 0.011334)
    assert api["saved_usd"]["both"] == pytest.approx(2 * (0.011334 - 0.006084))
    assert api["recorded_usd"] == pytest.approx(0.022668)
    assert plan["subscription"] and plan["usd"] is None and plan["saved_usd"] is None
    assert plan["list_price_equivalent_usd"]["installed"] == pytest.approx(0.011334)
    assert plan["saved_tokens"]["both"] == {
        "input": 0,
        "output": 0,
        "cacheRead": 5000,
        "cacheWrite": 1000,
        "cacheWrite1h": 0,
        "total": 6000,
    }
    assert result["calls"] == 3 and result["usd_calls"] == 2 and result["saved_tokens"]["both"] == 18_000
    assert result["usd"]["installed"] == pytest.approx(0.022668)  # (the subscription pays none)
    assert len(ledger.usd_series["installed"]) == 4 and ledger.usd_series["installed"][3] == 0
    words = " ".join(money_text.lines(result))
    assert "≈ $0.0227 as installed" in words and "at API list price for claude-sonnet-4-6" in words
    assert "via claude-sdk-oauth" in words and "a subscription: it pays no list price" in words
    assert "tokens that count against its limits" in words
    assert money_text.beside_bytes(result).startswith("; ≈ $0.0227 → $0.0122 at API list price")


def test_a_provider_that_recorded_no_cost_gets_tokens_and_an_unpriced_one_says_why():
    ledger = Ledger()
    free = money.Recorded(Tokens(input=1000, output=10), 0.0)
    _priced(ledger, row(4000, 2000, 4000, 2000, provider="local", model="llama"), free, SONNET)
    _priced(ledger, row(4000, 2000, 4000, 2000, provider="rec", model="rec-1"), None, None)
    free_group, unpriced = ledger.result()["by_model"]
    assert not free_group["pays_list_price"] and free_group["usd"] is None
    assert unpriced["usd"] is None and unpriced["no_price"] == "no price" and unpriced["tokens_estimated_calls"] == 1
    words = " ".join(money_text.lines(ledger.result()))
    assert "senpi recorded no cost for (0 or none)" in words and "no $ figure for rec-1: no price" in words
    assert "estimated at 4 bytes/token" in words
    # 1,000 input + 10 output, and 1,000 estimated writes; both layers: 500 and 500 fewer
    assert money_text.beside_bytes(ledger.result()) == "; 2,010 → 1,010 tokens (1,000 fewer)"
    assert math.isclose(ledger.result()["saved_tokens"]["both"], 1000)


def test_dollar_amounts_read_as_money():
    assert money_text.usd(1234.5) == "$1,234.50" and money_text.usd(0.01234) == "$0.0123"
    assert money_text.usd(-0.5) == "-$0.5000"


def test_absurd_numbers_are_not_counted_and_plans_are_subscriptions():
    from senpi_guard.audit.prices import is_subscription

    assert money.count(1e308) is None and money.count(1e12) == 1e12
    assert rates_of({"input": 1e308, "output": 1, "cacheRead": 0, "cacheWrite": 0}, "x") is None
    assert [
        is_subscription(p)
        for p in (
            "claude-sdk-oauth",
            "openai-codex",
            "github-copilot",
            "zai-coding-cn",
            "alibaba-token-plan",
            "openai",
            "anthropic",
            None,
        )
    ] == [True, True, True, True, True, False, False, False]


def test_an_ambiguous_call_on_a_plan_gives_its_tokens_as_a_range():
    """A subscription pays no $, so its saving is told in tokens: a call that two configurations fit
    equally well gives the tokens of each, as a range (as a list-price model gives dollars)."""
    ledger = Ledger()
    usage = money.Recorded(Tokens(input=3, output=50, cache_read=9000, cache_write=2100), 0.0)
    plain = row(40_000, 16_000, 8000, 4000, provider="claude-sdk-oauth")
    _priced(ledger, plain, usage, SONNET)
    call = money.of_call(plain, usage, SONNET, "installed")
    call["alternatives"] = [money.of_call(plain, usage, SONNET, "extension")]
    ledger.add(plain, call, SONNET, None)
    (plan,) = ledger.result()["by_model"]
    spread = plan["tokens_range"]
    low_saved, high_saved = spread["saved"]
    # (which configuration the record is moves every figure; the saving between two, less so)
    assert spread["ambiguous_calls"] == 1 and low_saved <= high_saved
    assert spread["installed"][0] < spread["installed"][1] and spread["both"][0] < spread["both"][1]
    words = " ".join(money_text.lines(ledger.result()))
    assert f"{low_saved:,}–{high_saved:,} fewer" in words and "tokens that count against its limits" in words


def test_an_ambiguous_call_at_list_price_gives_its_dollars_as_a_range():
    """A list-price model: a call that two configurations fit equally well is priced as each, and the
    saving is told in dollars as a range from the one to the other (the sum over the plain calls too)."""
    ledger = Ledger()
    usage = money.Recorded(Tokens(input=3, output=50, cache_read=9000, cache_write=2100), 0.011334)
    plain = row(40_000, 16_000, 8000, 4000)
    _priced(ledger, plain, usage, SONNET)  # (one call that is not ambiguous: in both ends of the range)
    as_installed = money.of_call(plain, usage, SONNET, "installed")
    as_extension = money.of_call(plain, usage, SONNET, "extension")
    call = {**as_installed, "alternatives": [as_extension]}
    ledger.add(plain, call, SONNET, None)
    (group,) = ledger.result()["by_model"]
    spread = group["usd_range"]
    assert spread["ambiguous_calls"] == 1 and group["tokens_range"]["ambiguous_calls"] == 1

    def saved(priced: dict) -> float:
        return priced["usd"]["installed"] - priced["usd"]["both"]

    one = saved(as_installed)  # the plain call's saving, counted whichever the record is
    ends = sorted([one + saved(as_installed), one + saved(as_extension)])
    assert saved(as_installed) != saved(as_extension)  # (the two readings differ: a range, not a point)
    assert spread["saved"] == pytest.approx(ends, abs=1e-9)
    for config in ("installed", "both"):
        values = sorted(as_installed["usd"][config] + o["usd"][config] for o in (as_installed, as_extension))
        assert spread[config] == pytest.approx(values, abs=1e-9)
    words = " ".join(money_text.lines(ledger.result()))
    low, high = (money_text.usd(x) for x in spread["saved"])
    assert "ambiguous: 1 calls fit two configurations equally well" in words and f"saved {low}–{high}" in words
