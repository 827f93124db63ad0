"""audit/resend: the `changes` line verify, apply, status and demo print. Beside upstream's keep-last
it prices one full re-send per call (cache writes, prompt tokens, dollars at the registry's list
price), says which side is cheaper for each shape (and when keep-last wins, the setting that defers
to it), and why; on older senpi it gives the bytes as installed -> patched; with no figures it says
nothing, and before any replay it says what the patch does without figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from senpi_guard.audit import resend
from senpi_guard.core.patch import definition

# opus-4-5's list price, USD per million tokens
OPUS = {"input": 5, "output": 25, "cacheRead": 0.5, "cacheWrite": 6.25}


def package_with_prices(tmp_path: Path, cost: dict[str, float] | None = OPUS) -> Path:
    """A senpi package dir whose bundled pi-ai registry prices claude-opus-4-5."""
    pkg = tmp_path / "pkg"
    data = pkg / "node_modules" / "@earendil-works" / "pi-ai" / "dist" / "providers" / "data"
    data.mkdir(parents=True)
    models = {resend.MODEL: {"id": resend.MODEL, "cost": cost}} if cost else {}
    (data / "anthropic.json").write_text(json.dumps({"anthropic-messages": models}))
    return pkg


def shape(calls: int, installed: tuple[int, int], patched: tuple[int, int], **more: Any) -> dict[str, Any]:
    """A headline fixture's replay stats: (bytes sent, bytes written to the cache) per configuration."""
    return {
        "resend": {
            "calls": calls,
            "installed": {"bytes": installed[0], "cacheWrite": installed[1]},
            "patched": {"bytes": patched[0], "cacheWrite": patched[1]},
        },
        **more,
    }


# keep-last rewrites the whole cache each call; the patch sends more but writes far less
LONG = shape(4, (400_000, 400_000), (480_000, 120_000), upstreamOnly={"bytes": 30_000}, pipelineBytes=55_000)
# a short session: the patch sends and writes more (keep-last is cheaper on every count)
SHORT = shape(2, (100_000, 50_000), (200_000, 100_000))


def test_per_call_tokens_and_dollars_from_the_bytes_sent_and_written(tmp_path):
    rates, where = resend.rates_for(package_with_prices(tmp_path))
    assert rates is not None and where.endswith("anthropic.json")
    figures = resend.per_call(LONG["resend"], rates)
    # installed: 100,000 tokens written over 4 calls; patched: 30,000 written, 90,000 read
    assert figures["installed"]["cache_write_tokens"] == 25_000
    assert figures["installed"]["prompt_tokens"] == 25_000
    assert figures["patched"]["cache_write_tokens"] == 7_500
    assert figures["patched"]["prompt_tokens"] == 30_000
    assert figures["installed"]["usd"] == pytest.approx(100_000 * 6.25 / 1e6 / 4)
    assert figures["patched"]["usd"] == pytest.approx((30_000 * 6.25 + 90_000 * 0.5) / 1e6 / 4)
    assert resend.upstream_cheaper(figures) is False
    assert resend.per_call(LONG["resend"], None)["patched"]["usd"] is None


def test_unpriced_the_verdict_is_by_tokens_or_none_when_they_disagree():
    def verdict(stats: dict[str, Any]) -> bool | None:
        return resend.upstream_cheaper(resend.per_call(stats["resend"], None))

    assert verdict(SHORT) is True  # (keep-last no worse on either count)
    assert verdict(shape(3, (300_000, 300_000), (300_000, 30_000))) is False  # (the patch no worse)
    assert verdict(LONG) is None  # fewer writes, more prompt tokens: it depends on the prices
    same = shape(3, (300_000, 30_000), (300_000, 30_000))
    assert verdict(same) is False  # (a tie is not keep-last being cheaper)


def test_priced_the_line_gives_dollars_first_and_the_why(tmp_path):
    pkg = package_with_prices(tmp_path)
    said = resend.sentence({"long": LONG}, ("long",), True, pkg)
    text = said["text"]
    assert text.startswith("per call, upstream's keep-last -> patched")
    assert "long (4 calls): 25,000 -> 7,500 cache-write tokens, 25,000 -> 30,000 prompt tokens" in text
    assert "$0.1562 -> $0.0581" in text and "claude-opus-4-5 at the list price" in text
    assert f"Why: {resend.KEEP_LAST_WHY}" in text and "defer" not in text
    # the one figure that could look like a loss: a full re-send's bytes, with its reason
    assert "one full re-send of long is larger (30,000 -> 55,000 bytes)" in text
    assert said["short"].endswith("long (4 calls) $0.1562 -> $0.0581")
    assert said["model"] == resend.MODEL and said["prices"].endswith("anthropic.json")
    assert set(said["per_call"]) == {"long"}


def test_where_keep_last_is_cheaper_the_line_names_the_setting_that_defers_to_it(tmp_path):
    short = {**SHORT, "pipelineBytes": 9_000}  # (no keep-last bytes to set beside it)
    said = resend.sentence({"short": short}, ("short",), True, package_with_prices(tmp_path))
    assert 'upstream\'s keep-last is cheaper for this shape: set upstream_dedupe = "defer"' in said["text"]
    assert 'keep-last is cheaper: upstream_dedupe = "defer"' in said["short"]
    assert "is larger" not in said["text"]  # (no keep-last figure for one full re-send)


def test_unpriced_the_line_says_why_and_where_the_prices_would_break_even():
    said = resend.sentence({"long": LONG, "short": SHORT}, ("long", "short"), True, None)
    text = said["text"]
    assert "unpriced: no model registry in the installed senpi" in text and "$" not in text
    # 17,500 fewer tokens written per call against 22,500 more read from the cache
    assert "(the patch is cheaper wherever a cache read costs under 0.78x a cache write)" in text
    assert "; short (2 calls): 6,250 -> 12,500 cache-write tokens" in text
    assert said["short"].count("cache-write tokens") == 2 and said["per_call"]["long"]["installed"]["usd"] is None


def test_a_model_the_registry_does_not_price_is_said_unpriced(tmp_path):
    said = resend.sentence({"long": LONG}, ("long",), True, package_with_prices(tmp_path, cost=None))
    assert f"unpriced: anthropic/{resend.MODEL} is not in senpi's model registry" in said["text"]


def test_shapes_without_figures_are_left_out_and_none_at_all_says_nothing():
    stats = {"long": LONG, "bare": {"headline": "1 -> 2 bytes"}}
    said = resend.sentence(stats, ("gone", "bare", "long"), True, None)
    assert "long (4 calls)" in said["text"] and "gone" not in said["text"] and "bare" not in said["text"]
    assert list(said["per_call"]) == ["long"]
    assert "is larger" not in said["text"]  # (only the first headline shape's bytes are said)
    assert resend.sentence({"bare": {"headline": "1 -> 2 bytes"}}, ("bare",), True, None) == {}
    assert resend.sentence({}, ("long",), True, None) == {}


def test_on_older_senpi_the_line_is_each_shapes_bytes():
    stats = {"a": {"headline": "100 -> 50 bytes"}, "b": {"headline": "900 -> 60 bytes"}, "c": {}}
    said = resend.sentence(stats, ("a", "b", "c"), False, None)
    figures = "a: 100 -> 50 bytes; b: 900 -> 60 bytes"
    assert said == {"text": f"one full re-send, as installed -> patched: {figures} ({resend.OLDER_WHY})"}
    assert resend.sentence({"c": {}}, ("c",), False, None) == {}


def test_before_any_replay_the_line_says_what_the_patch_does_and_how_to_price_it():
    assert "`senpi-guard verify` or `apply --dry-run` prices it per call" in resend.unverified(True)
    assert "keeps the first copy of each directive beside upstream's keep-last" in resend.unverified(True)
    assert resend.unverified(False).startswith("sends one copy of each repeated directive")


def test_the_shipped_figures_give_a_line_for_every_headline_shape(tmp_path):
    """The figures shipped for senpi 2026.8.4-2 and later: the short session is where keep-last is
    cheaper, the long ones where the patch is."""
    patch = definition.load("directive-dedupe")
    shipped = json.loads((patch.root / "figures.json").read_text())
    stats = next(v["figures"] for k, v in shipped["dist"].items() if k.endswith("and later"))
    said = resend.sentence(stats, patch.headline, True, package_with_prices(tmp_path))
    assert set(said["per_call"]) == set(patch.headline)
    cheaper = {name: resend.upstream_cheaper(f) for name, f in said["per_call"].items()}
    assert cheaper[patch.headline[-1]] is False
    assert said["text"].count(" calls): ") == len(patch.headline)
