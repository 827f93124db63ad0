"""`senpi-guard audit` leads with one headline (calls; cache-write tokens, bytes and list-price
dollars saved or more; the basis they stand on; whether the session's copies vary), prints a short
summary that fits the terminal, and the per-call table only with -v (issue 48, item 5)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_cli
from test_audit_money_cli import priced_package, with_cost

from senpi_guard import ui
from senpi_guard.audit.money_text import usd
from senpi_guard.demo import sample, sample_session


def words(text: str) -> str:
    return " ".join(text.split())


def summary_of(capsys, *args) -> dict:
    code, out, err = run_cli(capsys, "audit", *args, "--json")
    assert code == 0, err
    (report,) = json.loads(out)["sessions"]
    return report["summary"]


def path_or_command(line: str) -> bool:
    """A line holding only a path or a command (the one kind a terminal's width may not wrap)."""
    text = line.strip()
    return text.startswith("senpi-guard ") or (text.startswith("/") and " " not in text)


def test_the_first_line_is_the_headline_at_list_price(tmp_path, capsys):
    pkg = priced_package(tmp_path)
    path = with_cost(
        sample_session.write_sample_session(
            tmp_path / "s.jsonl", turns=8, directive_bytes=6000, provider="anthropic", extras=False
        )
    )
    s = summary_of(capsys, path, "--root", pkg)
    tokens, every = s["money"]["tokens"], s["every_call"]["bytes"]
    cache_writes = tokens["installed"]["cacheWrite"] - tokens["both"]["cacheWrite"]
    saved = every["installed"] - every["both"]
    assert cache_writes > 0 and saved > 0 and s["money"]["saved_usd"]["both"] > 0
    code, out, err = run_cli(capsys, "audit", path, "--root", pkg)
    assert code == 0, err
    assert out.splitlines()[0] == (
        f"{s['turns']} calls: {cache_writes:,} cache-write tokens, {ui.size(saved)} and "
        f"{usd(s['money']['saved_usd']['both'])} saved at list price"
    )
    basis = words(out)
    assert "as installed → with both layers" in basis
    assert "$ at the API list price of claude-opus-4-5 via anthropic, an estimate" in basis
    assert "only a basis" not in basis
    glance = s["at_a_glance"]  # (the headline's figures in --json too)
    assert glance["cache_write_tokens_saved"] == cache_writes and glance["calls"] == s["turns"]


def test_a_subscriptions_dollars_are_only_a_basis(tmp_path, capsys):
    pkg = priced_package(tmp_path)
    path = sample_session.write_sample_session(
        tmp_path / "s.jsonl", turns=8, directive_bytes=6000, lanes=True, extras=False
    )
    s = summary_of(capsys, path, "--root", pkg)
    (group,) = s["money"]["by_model"]
    assert group["subscription"] and group["usd"] is None  # (it pays none: no $ saved is claimed)
    listed = group["list_price_equivalent_usd"]
    code, out, err = run_cli(capsys, "audit", path, "--root", pkg)
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith(f"{s['turns']} calls: ") and "cache-write tokens" in first
    assert f"{usd(listed['installed'] - listed['both'])} saved at list price" in words(out)
    assert "only a basis: claude-sdk-oauth is a subscription and pays no list price" in words(out)


def test_bytes_that_rise_against_keep_last_are_said_and_why(tmp_path, capsys):
    """On a senpi with upstream's keep-last, a session whose <ultrawork-mode> copies vary sends more
    bytes patched (keep-first keeps each distinct copy): the headline says more, not saved."""
    pkg = tmp_path / "pkg"
    sample.write_sample_package(pkg, 3, fillers=0)
    path = sample_session.write_sample_session(
        tmp_path / "s.jsonl", turns=10, directive_bytes=6000, provider="claude-agent-sdk", extras=False
    )
    s = summary_of(capsys, path, "--root", pkg)
    every = s["every_call"]["bytes"]
    more = every["both"] - every["installed"]
    assert more > 0 and s["copies_vary"] == {"ultrawork-mode": 2}
    code, out, err = run_cli(capsys, "audit", path, "--root", pkg)
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith(f"{s['turns']} calls: ") and f"; {ui.size(more)} more" in first
    assert "cache-write tokens" in first and "no $ figure" in first  # (this sample senpi has no prices)
    assert (
        "copies vary: 2 distinct <ultrawork-mode>; keep-first keeps each distinct copy, so more bytes go "
        "out than with senpi's own keep-last"
    ) in words(out)


@pytest.mark.parametrize("columns", [80, 120])
def test_default_audit_is_short_and_fits_the_terminal(tmp_path, capsys, monkeypatch, columns):
    pkg = tmp_path / "pkg"
    sample.write_sample_package(pkg, 2, fillers=0)
    demo_like = sample_session.write_sample_session(
        tmp_path / "s.jsonl", turns=30, lanes=True, payload_from=pkg, extras=False
    )
    monkeypatch.setenv("COLUMNS", str(columns))
    for args in ((demo_like, "--root", pkg), ("--sample", demo_like)):
        code, out, err = run_cli(capsys, "audit", *args)
        assert code == 0, err
        lines = out.splitlines()
        assert len(lines) <= 12, out
        too_wide = [line for line in lines if len(line) > columns and not path_or_command(line)]
        assert too_wide == [], out
        assert str(demo_like) in lines  # (the session's path on a line of its own)


def test_not_a_terminal_is_80_columns(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=8, directive_bytes=2000)
    code, out, _ = run_cli(capsys, "audit", "--sample", path)
    assert code == 0
    assert max(len(line) for line in out.splitlines() if not path_or_command(line)) <= 80, out


def test_the_per_call_table_only_with_verbose_or_json(tmp_path, capsys):
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=6, directive_bytes=2000, extras=False)
    _, short, _ = run_cli(capsys, "audit", "--sample", path)
    _, wide, _ = run_cli(capsys, "-v", "audit", "--sample", path)
    _, after, _ = run_cli(capsys, "audit", "-v", "--sample", path)

    def table(out: str) -> list[str]:
        return [line for line in out.splitlines() if line.split()[:2] == ["call", "entry"]]

    assert table(short) == [] and len(table(wide)) == 1 and wide == after
    rows = [line for line in wide.splitlines() if line[:5].strip().isdigit()]
    assert len(rows) == 12  # (one per call)
    assert short.splitlines()[0] == wide.splitlines()[0]  # (-v leads with the same headline)
    report = json.loads(run_cli(capsys, "audit", "--sample", path, "--json")[1])["sessions"][0]
    assert len(report["turns"]) == 12


def test_more_than_one_session_each_leads_with_its_headline(tmp_path, capsys, monkeypatch):
    agent = tmp_path / "agent"
    made = [
        sample_session.write_sample_session(agent / f"sessions/--w--/{name}.jsonl", turns=n, directive_bytes=900)
        for name, n in (("a", 2), ("b", 3))
    ]
    for age, path in enumerate(made):
        os.utime(path, (1000 + age, 1000 + age))
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(agent))
    code, out, _ = run_cli(capsys, "-q", "audit", "--all", "--sample")
    assert code == 0
    lines = out.splitlines()
    heads = [
        i for i, line in enumerate(lines) if line.endswith("calls, none of a lane senpi recorded: no saving counted")
    ]
    assert heads[0] == 0 and len(heads) == 2
    assert [Path(line) for line in lines if line.startswith("/")] == made
