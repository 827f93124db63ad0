"""`senpi-guard audit` tokens and dollars end to end on a sample install whose model registry
(pi-ai's data files, as senpi bundles them) prices the session's model: the JSON figures, the
sentences, the plot, and odd usage records that must not crash it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from senpi_guard.demo import sample, sample_session

PRICE = {"input": 5, "output": 25, "cacheRead": 0.5, "cacheWrite": 6.25}


def priced_package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    sample.write_sample_package(pkg, 2, fillers=0)
    data = pkg / "node_modules" / "@earendil-works" / "pi-ai" / "dist" / "providers" / "data"
    data.mkdir(parents=True)
    (data / "anthropic.json").write_text(
        json.dumps({"anthropic-messages": {"claude-opus-4-5": {"id": "claude-opus-4-5", "cost": PRICE}}})
    )
    return pkg


def with_cost(path: Path) -> Path:
    """The sample's usages, with the cost senpi records beside the tokens (at PRICE)."""
    lines = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        usage = entry.get("message", {}).get("usage") if entry.get("type") == "message" else None
        if usage:
            usage["cost"] = {"total": sum(PRICE[k] * usage[k] for k in PRICE) / 1e6}
        lines.append(json.dumps(entry))
    path.write_text("\n".join(lines) + "\n")
    return path


def strict(text: str) -> dict:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the JSON output")

    return json.loads(text, parse_constant=refuse)


def test_dollars_at_list_price_for_an_api_session(tmp_path, capsys):
    pkg = priced_package(tmp_path)
    path = with_cost(
        sample_session.write_sample_session(
            tmp_path / "s.jsonl", turns=8, directive_bytes=6000, provider="anthropic", extras=False
        )
    )
    code, out, err = run_cli(capsys, "audit", path, "--root", pkg, "--json")
    assert code == 0, err
    (report,) = strict(out)["sessions"]
    money = report["summary"]["money"]
    (group,) = money["by_model"]
    assert group["provider"] == "anthropic" and group["pays_list_price"] and group["price"]["input"] == 5
    assert money["calls"] == len(report["turns"]) == 16 and money["tokens_recorded_calls"] == 16
    # as installed, the audit's dollars are the recorded tokens at the registry's price, call by call
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    usages = [e["message"]["usage"] for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"]
    assert len(usages) == 16
    by_hand = sum(PRICE[k] * u[k] for u in usages for k in ("input", "output", "cacheRead", "cacheWrite")) / 1e6
    assert money["usd"]["installed"] == pytest.approx(by_hand)
    assert money["by_model"][0]["recorded_usd"] == pytest.approx(by_hand)
    assert 0 < money["usd"]["both"] < money["usd"]["installed"]
    assert money["saved_usd"]["both"] == pytest.approx(money["usd"]["installed"] - money["usd"]["both"])
    code, out, err = run_cli(capsys, "-v", "audit", path, "--root", pkg)
    assert code == 0, err
    assert "at API list price for claude-opus-4-5" in out and "tokens, claude-opus-4-5 via anthropic" in out


def test_a_subscription_session_gets_tokens_and_the_plot_draws_every_layer(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    pkg = priced_package(tmp_path)
    path = sample_session.write_sample_session(
        tmp_path / "s.jsonl", turns=8, directive_bytes=6000, lanes=True, extras=False
    )
    image = tmp_path / "p.svg"
    code, out, err = run_cli(capsys, "-v", "audit", path, "--root", pkg, "--plot", image)
    assert code == 0, err
    assert "a subscription: it pays no list price" in out and "tokens that count against its limits" in out
    assert "at API list price" not in out
    # (the headline's dollars are the list price's, and say it is only a basis)
    assert "only a basis: claude-sdk-oauth is a subscription and pays no list price" in " ".join(out.split())
    drawn = image.read_text()
    for label in (
        "senpi as installed",
        "with senpi-guard (both layers)",
        "dist layer only",
        "extension layer only",
        "tokens, cumulative",
    ):
        assert label in drawn, label


BIG = "__a number too large for a float__"
ODD = ["12", -5, True, None, [], {"input": 1}, BIG, "NaN"]  # (1e309: valid JSON, infinite as a double)


def test_odd_usage_records_are_not_recorded_and_never_crash(tmp_path, capsys):
    pkg = priced_package(tmp_path)
    path = sample_session.write_sample_session(
        tmp_path / "s.jsonl", turns=6, directive_bytes=3000, provider="anthropic", extras=False
    )
    lines, n = [], 0
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "message" and entry["message"].get("role") == "assistant":
            odd = ODD[n % len(ODD)]
            usage = entry["message"]["usage"]
            if n % 2:
                entry["message"]["usage"] = {**usage, "cacheRead": odd, "cost": {"total": odd}}
            else:
                entry["message"]["usage"] = odd
            n += 1
        lines.append(json.dumps(entry).replace(json.dumps(BIG), "1e309"))
    path.write_text("\n".join(lines) + "\n")
    code, out, err = run_cli(capsys, "audit", path, "--root", pkg, "--json")
    assert code == 0, err
    (report,) = strict(out)["sessions"]
    assert all(r["money"]["tokens_are"] == "estimated" for r in report["turns"])
    assert report["summary"]["money"]["tokens_estimated_calls"] == len(report["turns"]) == 12
    code, out, err = run_cli(capsys, "-v", "audit", path, "--root", pkg)
    assert code == 0, err
    assert "12 estimated at 4 bytes/token" in out


def test_huge_finite_numbers_in_usage_and_prices_never_crash_nor_print_nan(tmp_path, capsys):
    """1e308 is a finite double, but two of them add up to infinity (and inf * 0 to NaN): such
    records and rates are not trusted (found by a hostile review: exit 3, then NaN in --json)."""
    pkg = priced_package(tmp_path)
    data = pkg / "node_modules" / "@earendil-works" / "pi-ai" / "dist" / "providers" / "data"
    (data / "anthropic.json").write_text(
        json.dumps(
            {
                "anthropic-messages": {
                    "claude-opus-4-5": {
                        "id": "claude-opus-4-5",
                        "cost": {"input": 1e308, "output": 1e308, "cacheRead": 0, "cacheWrite": 0},
                    }
                }
            }
        )
    )
    path = sample_session.write_sample_session(
        tmp_path / "s.jsonl", turns=4, directive_bytes=3000, provider="anthropic", extras=False
    )
    lines = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "message" and entry["message"].get("role") == "assistant":
            entry["message"]["usage"] = {**entry["message"]["usage"], "input": 1e308, "cacheRead": 1e308}
        lines.append(json.dumps(entry))
    path.write_text("\n".join(lines) + "\n")
    code, out, err = run_cli(capsys, "audit", path, "--root", pkg, "--json")
    assert code == 0, err
    (report,) = strict(out)["sessions"]
    assert all(r["money"]["tokens_are"] == "estimated" for r in report["turns"])
    money = report["summary"]["money"]
    assert money["usd"] is None and "lists no price for claude-opus-4-5" in money["by_model"][0]["no_price"]
