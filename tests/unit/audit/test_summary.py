"""audit/summary.py directly, on rows shaped as audit/rows.py makes them: every call counts in its
lane and its configuration's bytes; the headline is over full re-sends only and "every call" leaves
the unknown lane out; senpi's own payloadBytes are checked against the configuration that matched;
skipped turns and mismatches are all counted and the first 20 listed; the largest call, the first
over the context window, the directives lost and the copies collapsed are as the rows say; an
empty session is zeros, never a division by zero."""

from __future__ import annotations

import json
from typing import Any

import pytest

from senpi_guard.audit import glance, money
from senpi_guard.audit.money import Rates, Tokens
from senpi_guard.audit.rows import recorded_as
from senpi_guard.audit.summary import CONFIGS, LISTED, Summary

SONNET = Rates(3, 15, 0.3, 3.75)


def row(
    index: int,
    installed: int,
    saved: tuple[int, int, int] = (0, 0, 0),
    sent: str = "full",
    **more: Any,
) -> dict[str, Any]:
    """A row of one call: `installed` bytes as senpi is installed, `saved` the bytes the dist patch,
    the extension and both layers take off that; `more` overrides any other field."""
    sizes = {"installed": installed, **{c: installed - s for c, s in zip(CONFIGS[1:], saved, strict=True)}}
    recorded = more.pop("recorded", None)
    distinct, kept = more.pop("directives", (1, dict.fromkeys(CONFIGS, 1)))
    base = {
        "index": index,
        "entry_id": f"e{index}",
        "call": "turn",
        "provider": "anthropic",
        "continuity": "flatten" if sent != "delta" else "delta",
        "sent": sent,
        "bytes": sizes,
        "cache_write": None if sent == "delta" else dict(sizes),
        "unpatched_bytes": sizes["installed"],
        "patched_bytes": sizes["dist"],
        "recorded_payload_bytes": recorded,
        "recorded_as": recorded_as(recorded, sizes),
        "recorded_matches": [],
        "collapsed": {},
        "copies_vary": {},
        "est_tokens_unpatched": sizes["installed"] // 4,
        "est_tokens_patched": sizes["dist"] // 4,
        "model": "claude-opus-4-5",
        "sent_by": {"by": "payloadBytes" if recorded is not None else "none"},
        "directives": {"distinct": distinct, **({} if sent == "delta" else {f"kept_{c}": kept[c] for c in CONFIGS})},
    }
    return base | more


def summed(*rows: dict[str, Any], resident: bool = True) -> dict[str, Any]:
    summary = Summary(resident)
    for each in rows:
        summary.add(each)
    return summary.result()


def test_each_call_counts_in_its_lane_and_the_headline_is_full_re_sends_only():
    s = summed(
        row(0, 1000, (400, 300, 500)),
        row(1, 2000, (1000, 800, 1200)),
        row(2, 300, (0, 100, 100), sent="delta"),
        row(3, 700, (0, 0, 0), sent="unknown"),
        row(4, 500, (0, 250, 250), sent="context", provider="openai", model="gpt-5"),
        row(5, 100, (0, 0, 0), sent="summary", call="compaction"),
    )
    assert s["turns"] == 6
    assert s["sent"]["full"]["turns"] == 2 and s["sent"]["full"]["bytes"]["installed"] == 3000
    assert s["sent"]["full"]["saved_bytes"] == 1400 and s["sent"]["full"]["saved_with_extension_bytes"] == 1700
    assert s["headline"] | {"over": None} == {
        "over": None,
        "turns": 2,
        "unpatched_bytes": 3000,
        "patched_bytes": 1600,
        "saved_bytes": 1400,
        "saved_percent": 46.7,
    }
    every = s["every_call"]
    assert every["turns"] == 5  # (the unknown lane left out)
    assert every["bytes"] == {"installed": 3900, "dist": 2500, "extension": 2450, "both": 1850}
    assert every["saved_percent"] == {"installed": 0.0, "dist": 35.9, "extension": 37.2, "both": 52.6}
    assert s["calls"] == {"turn": 5, "compaction": 1}
    assert s["providers"] == {"anthropic": 5, "openai": 1}


def test_continuity_is_counted_for_the_claude_lanes_only_and_a_missing_one_said():
    s = summed(
        row(0, 10, continuity="bootstrap"),
        row(1, 10, sent="delta"),
        row(2, 10, continuity=None),
        row(3, 10, sent="context", continuity="flatten"),
        row(4, 10, sent="summary", continuity="flatten"),
        row(5, 10, sent="unknown", continuity=None, provider=None),
    )
    assert s["continuity"] == {"bootstrap": 1, "delta": 1, "not recorded": 2}
    assert s["providers"] == {"anthropic": 5, "not recorded": 1}
    assert s["sent_by"] == {"none": 6}


def test_cache_writes_count_full_re_sends_and_other_providers_calls_apart():
    s = summed(
        row(0, 1000, (100, 0, 100), cache_write={"installed": 600, "dist": 500, "extension": 600, "both": 500}),
        row(1, 1000, cache_write=None),  # (nothing measured to compare with)
        row(2, 400, sent="context", cache_write={"installed": 40, "dist": 40, "extension": 20, "both": 20}),
        row(3, 400, sent="delta"),
        row(4, 400, sent="summary"),
    )
    cache = s["cache_write"]
    assert cache["full_turns"] == 1 and cache["unpatched_bytes"] == 600 and cache["patched_bytes"] == 500
    assert cache["context_turns"] == 1 and cache["context_bytes"] == {
        "installed": 40,
        "dist": 40,
        "extension": 20,
        "both": 20,
    }


def test_senpis_payload_bytes_are_matched_to_a_configuration_and_every_mismatch_counted():
    rows = [row(0, 1000, (400, 400, 400), recorded=600), row(1, 1000, (300, 200, 300), recorded=1000)]
    rows += [row(i, 1000, recorded=1) for i in range(2, 2 + LISTED + 5)]  # (matching none)
    rows += [row(99, 1000)]  # (nothing recorded: not checked)
    s = summed(*rows)["recorded_payload"]
    assert s["turns"] == 2 + LISTED + 5 and s["matched"] == 2
    assert s["recorded_as"] == {"unknown": 1, "installed": 1, "mismatch": LISTED + 5}
    assert len(s["mismatches"]) == LISTED and s["mismatches"][0]["index"] == 2
    assert s["mismatches"][0]["recorded"] == 1 and s["mismatches"][0]["audit"]["installed"] == 1000


def test_every_skipped_turn_is_counted_and_the_first_ones_listed():
    summary = Summary(True)
    for i in range(LISTED + 3):
        summary.skip(i, f"error {i}")
    skipped = summary.result()["skipped_turns"]
    assert skipped["turns"] == LISTED + 3 and len(skipped["first"]) == LISTED
    assert skipped["first"][0] == {"index": 0, "error": "error 0"}


def test_the_largest_call_and_the_first_over_the_window_are_the_rows_own():
    window = 200_000  # (claude-opus-4-5)
    over, under = (window + 1) * 4, (window - 1) * 4
    s = summed(
        row(0, 1000, model=None),
        row(1, over * 2, sent="delta"),  # (a delta call never counts as over the window)
        row(2, over, (over - under, 0, over - under)),  # over as installed, under with the dist patch
        row(3, over + 8),  # over in both
        row(4, over + 8),
    )
    assert s["context_window_tokens"] == window
    assert s["largest_turn"] == {"index": 1, "unpatched_bytes": over * 2, "patched_bytes": over * 2, "sent": "delta"}
    assert s["first_turn_over_window_unpatched"] == 2 and s["that_turn_over_window_patched"] is False
    assert s["first_turn_over_window_patched"] == 3


def test_a_model_without_a_known_window_is_never_over_it():
    s = summed(row(0, 10**7, model="gpt-5"), row(1, 10**7, model=None))
    assert s["context_window_tokens"] is None and s["first_turn_over_window_unpatched"] is None


def test_the_window_is_the_first_known_models_and_counts_from_then_on():
    s = summed(row(0, 10**7, model="gpt-5"), row(1, 10**7, model="claude-sonnet-4-5[1m]"), row(2, 10**7))
    assert s["context_window_tokens"] == 1_000_000
    assert s["first_turn_over_window_unpatched"] == 1 and s["first_turn_over_window_patched"] == 1


def test_directives_lost_and_copies_collapsed_are_the_most_of_any_one_call():
    lost_two = {"installed": 3, "dist": 1, "extension": 3, "both": 2}
    s = summed(
        row(0, 10, directives=(3, lost_two), collapsed={"ultrawork-mode": 4}, copies_vary={"ultrawork-mode": 2}),
        row(1, 10, directives=(3, dict.fromkeys(CONFIGS, 3)), collapsed={"ultrawork-mode": 2, "task": 1}),
        row(2, 10, sent="delta", directives=(9, None), copies_vary={"ultrawork-mode": 3}),
    )
    assert s["turns_losing_a_directive"] == {
        "installed": 0,
        "dist": 1,
        "extension": 0,
        "both": 1,
        "unpatched": 0,
        "patched": 1,
    }
    assert s["most_directives_lost_in_one_turn"] == {"installed": 0, "dist": 2, "extension": 0, "both": 1}
    assert s["most_copies_collapsed_in_one_turn"] == {"ultrawork-mode": 4, "task": 1}
    assert s["copies_vary"] == {"ultrawork-mode": 3}


def test_the_series_keep_each_calls_bytes_in_order_for_the_plot():
    summary = Summary(False)
    for i, size in enumerate((30, 10, 20)):
        summary.add(row(i, size, (5, 0, 5), sent="unknown" if i == 1 else "full"))
    assert list(summary.unpatched_series) == [30, 10, 20]
    assert list(summary.patched_series) == [25, 5, 15]
    assert list(summary.series["both"]) == [25, 5, 15]


def test_priced_calls_go_to_the_money_and_the_glance_is_taken_from_the_rest():
    summary = Summary(True)
    usage = money.Recorded(Tokens(input=3, output=50, cache_read=9000, cache_write=2100), 0.011334)
    for i in range(2):
        each = row(i, 40_000, (24_000, 0, 24_000))
        summary.add(each, money.of_call(each, usage, SONNET), SONNET, None)
    summary.add(row(2, 100))  # (not priced: counted in bytes alone)
    s = summary.result()
    assert s["money"]["calls"] == 2 and s["money"]["usd"]["installed"] == pytest.approx(2 * 0.011334)
    rest = {k: v for k, v in s.items() if k != "at_a_glance"}
    assert s["at_a_glance"] == glance.of(rest)
    assert s["at_a_glance"]["calls"] == 3


def test_an_empty_session_is_zeros_and_nothing_found():
    s = Summary(True).result()
    json.dumps(s)  # (what `audit --json` prints)
    assert s["turns"] == 0 and s["headline"]["saved_percent"] == 0.0
    assert set(s["every_call"]["saved_percent"].values()) == {0.0}
    assert s["largest_turn"] is None and s["first_turn_over_window_unpatched"] is None
    assert s["at_a_glance"]["list_price_usd"] is None and s["at_a_glance"]["counted_calls"] == 0
