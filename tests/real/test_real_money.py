"""Tokens and dollars in `senpi-guard audit`, on sessions the real senpi 2026.8.22-2 recorded.

- senpi's Claude provider (claude-sdk-oauth, driving the stand-in `claude`, here reporting a usage
  the way the Anthropic API does with a prompt cache): senpi records each call's usage and prices it
  itself (its calculateCost, its model registry). The audit reads those tokens, prices them the same
  from the same registry, and says the subscription pays no list price: tokens, not dollars.
- A priced provider that is not Claude (tests/real/support/priced_provider.js), its list price set
  in the agent dir's models.json the way a user prices a model: the audit of the session recorded
  as installed predicts, in tokens and dollars, what the session recorded with the extension layer
  (both layers: there the extension is what acts) really cost."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from conftest import write_user_config
from realsenpi import RealSenpi, audit_report, read_jsonl, senpi_guard

pytestmark = [pytest.mark.real, pytest.mark.slow]

SUPPORT = Path(__file__).parent / "support"
CLAUDE = "claude-sdk-oauth/claude-sonnet-4-5"
PRICE = {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}  # what models.json sets for priced-1
TOKEN_KEYS = ("input", "output", "cacheRead", "cacheWrite")


def recorded_usage(session: Path) -> list[dict]:
    return [
        e["message"]["usage"]
        for e in read_jsonl(session)
        if e.get("type") == "message" and e["message"].get("role") == "assistant"
    ]


def registry_cost(package_dir: Path, provider: str, model: str) -> dict:
    """The model's cost as senpi's own registry (pi-ai's data file) lists it, read here independently."""
    data = json.loads(
        (
            package_dir
            / "node_modules"
            / "@earendil-works"
            / "pi-ai"
            / "dist"
            / "providers"
            / "data"
            / f"{provider}.json"
        ).read_text()
    )
    return next(group[model] for group in data.values() if model in group)["cost"]


def by_hand(cost: dict, usage: dict) -> float:
    """Dollars of one recorded usage at these rates (no tiers, no hour-long writes here)."""
    return sum(cost[key] * usage[key] for key in TOKEN_KEYS) / 1_000_000


def prompt_tokens(tokens: dict) -> int:
    return tokens["input"] + tokens["cacheRead"] + tokens["cacheWrite"]


def test_claude_subscription_tokens_and_list_price_are_senpis_own(full_senpi, isolated_dirs, monkeypatch, tmp_path):
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    state = tmp_path / "api-cache"
    user = RealSenpi(
        full_senpi,
        tmp_path / "claude",
        Path(os.environ["SENPI_CODING_AGENT_DIR"]),
        tmp_path / "work",
        extra_env={
            "CLAUDE_CODE_EXECUTABLE": str(SUPPORT / "claude_standin_priced.py"),
            "STANDIN_PRICED_STATE": str(state),
        },
    )
    for env, prompts in (
        ({}, ("ulw one", "ulw two")),
        ({}, ("ulw three",)),
        ({"SENPI_CLAUDE_SDK_OAUTH_RESUME": "off"}, ("ulw four", "ulw five")),
    ):
        user.extra_env.update(env)
        user.prompt(*prompts, model=CLAUDE, plugins=("directive_prepend.js",))
    usages = recorded_usage(user.session_file())
    rows, summary, text = audit_report(full_senpi, user.session_file())
    assert len(rows) == len(usages) == 5
    assert {r["sent"] for r in rows} >= {"full", "delta"}
    cost = registry_cost(full_senpi.package_dir, "anthropic", "claude-sonnet-4-5")
    for row, usage in zip(rows, usages, strict=True):
        money = row["money"]
        assert money["tokens_are"] == "recorded" and money["record_is"] == "installed"
        assert {k: money["tokens"]["installed"][k] for k in TOKEN_KEYS} == {k: usage[k] for k in TOKEN_KEYS}
        assert usage["cost"]["total"] > 0  # senpi priced the call itself, at the anthropic list price
        assert math.isclose(money["usd"]["installed"], usage["cost"]["total"], rel_tol=1e-6)
        assert math.isclose(money["usd"]["installed"], by_hand(cost, usage), rel_tol=1e-6)
        # a layer's prompt tokens are the recorded ones less the bytes it removes, a token per 4 bytes
        for config in ("dist", "extension", "both"):
            removed = (row["bytes"]["installed"] - row["bytes"][config]) / 4
            assert abs(prompt_tokens(money["tokens"][config]) - (prompt_tokens(usage) - removed)) <= 2, (config, row)
            assert money["tokens"][config]["output"] == usage["output"]
    (group,) = summary["money"]["by_model"]
    assert group["provider"] == "claude-sdk-oauth" and group["model"] == "claude-sonnet-4-5"
    assert group["subscription"] and group["usd"] is None and group["saved_usd"] is None
    assert group["price"]["input"] == cost["input"] and group["price"]["cacheWrite"] == cost["cacheWrite"]
    assert math.isclose(
        group["list_price_equivalent_usd"]["installed"], sum(u["cost"]["total"] for u in usages), rel_tol=1e-6
    )
    assert math.isclose(group["recorded_usd"], sum(u["cost"]["total"] for u in usages), rel_tol=1e-6)
    assert group["saved_tokens"]["both"]["total"] > 0 and summary["money"]["usd"] is None
    assert group["tokens"]["installed"]["total"] == sum(
        u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"] for u in usages
    )
    assert "claude-sonnet-4-5 via claude-sdk-oauth" in text and "a subscription: it pays no list price" in text
    assert "tokens that count against its limits" in text and "at API list price" not in text


def priced_session(full_senpi, root: Path, work: Path) -> RealSenpi:
    user = RealSenpi(
        full_senpi,
        root,
        Path(os.environ["SENPI_CODING_AGENT_DIR"]),
        work,
        extra_env={"SENPI_GUARD_PRICED_LOG": str(root / "priced.jsonl")},
    )
    for prompt in ("ulw step 0", "ulw step 1", "what changed?", "ulw step 3", "ulw step 4"):
        user.prompt(prompt, model="priced/priced-1", plugins=("priced_provider.js", "directive_prepend.js"))
    return user


def test_other_provider_dollars_predict_what_the_guarded_session_cost(full_senpi, isolated_dirs, monkeypatch, tmp_path):
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    agent = Path(os.environ["SENPI_CODING_AGENT_DIR"])
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "models.json").write_text(
        json.dumps({"providers": {"priced": {"modelOverrides": {"priced-1": {"cost": PRICE}}}}})
    )
    plain = priced_session(full_senpi, tmp_path / "plain", tmp_path / "work")
    write_user_config(isolated_dirs, 'layers = ["dist", "extension"]\n')
    result = senpi_guard("apply", "--root", full_senpi.package_dir, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    try:
        ext = priced_session(full_senpi, tmp_path / "ext", tmp_path / "work")
    finally:
        assert senpi_guard("revert", "--root", full_senpi.package_dir).returncode == 0

    # senpi applied the models.json price to the extension's model, and recorded what the provider priced
    calls = read_jsonl(plain.root / "priced.jsonl")
    assert calls and all(c["cost"]["input"] == PRICE["input"] for c in calls)
    plain_usage, ext_usage = recorded_usage(plain.session_file()), recorded_usage(ext.session_file())
    assert all(u["cost"]["total"] > 0 for u in plain_usage + ext_usage)

    rows, summary, text = audit_report(full_senpi, plain.session_file())
    assert [r["sent"] for r in rows] == ["context"] * 5
    for row, usage in zip(rows, plain_usage, strict=True):
        assert math.isclose(row["money"]["usd"]["installed"], usage["cost"]["total"], rel_tol=1e-6)
        assert math.isclose(row["money"]["usd"]["installed"], by_hand(PRICE, usage), rel_tol=1e-6)
    # what the audit of the plain session predicts for the extension is what that session recorded
    for row, usage in zip(rows, ext_usage, strict=True):
        predicted = row["money"]["tokens"]["both"]
        for key in TOKEN_KEYS:
            assert abs(predicted[key] - usage[key]) <= max(2, usage[key] / 100), (key, predicted, usage)
        assert math.isclose(row["money"]["usd"]["both"], usage["cost"]["total"], rel_tol=0.01)
    money = summary["money"]
    (group,) = money["by_model"]
    assert group["pays_list_price"] and not group["subscription"] and "models.json" in group["price"]["source"]
    spent = {
        "installed": sum(u["cost"]["total"] for u in plain_usage),
        "ext": sum(u["cost"]["total"] for u in ext_usage),
    }
    assert math.isclose(money["usd"]["installed"], spent["installed"], rel_tol=1e-6)
    assert math.isclose(money["usd"]["both"], spent["ext"], rel_tol=0.01)
    assert math.isclose(money["saved_usd"]["both"], spent["installed"] - spent["ext"], rel_tol=0.02)
    # the dist patch does not act on another provider's calls: the extension is all of it
    assert money["saved_usd"]["both"] > 0 and money["saved_usd"]["dist"] == 0
    assert money["saved_usd"]["extension"] == money["saved_usd"]["both"]
    assert "at API list price for priced-1" in text and "saved" in text
