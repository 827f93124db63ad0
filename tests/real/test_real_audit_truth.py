"""What `senpi-guard audit` says about sessions the real senpi 2026.8.22-2 recorded with senpi-guard
in place, against what the provider really received and billed (tests/real/support/priced_provider.js:
a provider with a prompt cache whose input tokens are the bytes it received / 4, priced in the agent
dir's models.json; the model is the one mocked part). The same prompts run once without senpi-guard
and once with it:

- each call is priced as the configuration that sent it (the extension's own entry for the call),
  so the saving is counted once, within 2% of what the provider billed less;
- a compaction's summary request is a row of its own (RPC `{"type": "compact"}`), and the copy the
  extension collapsed in it counts;
- a session without the entries (older ones) is inferred, and says so."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import write_user_config
from realsenpi import SUPPORT, RealSenpi, audit_report, read_jsonl, senpi_guard
from test_real_inside import PATCH, Rpc

from senpi_guard.io.config import Config

pytestmark = [pytest.mark.real, pytest.mark.slow]

PRICE = {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}
MODEL = "priced/priced-1"
ENTRY = "senpi-guard.sent"


@pytest.fixture
def agent(full_senpi, isolated_dirs, monkeypatch) -> Path:
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    folder = Path(os.environ["SENPI_CODING_AGENT_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "models.json").write_text(
        json.dumps({"providers": {"priced": {"modelOverrides": {"priced-1": {"cost": PRICE}}}}})
    )
    (folder / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 2000}}))
    return folder


def user_of(full_senpi, agent: Path, root: Path) -> RealSenpi:
    return RealSenpi(
        full_senpi, root, agent, root.parent / "work", extra_env={"SENPI_GUARD_PRICED_LOG": str(root / "priced.jsonl")}
    )


def billed(user: RealSenpi) -> list[dict]:
    """What the provider received (text bytes) and billed, per call, in order."""
    return read_jsonl(user.root / "priced.jsonl")


def dollars(call: dict) -> float:
    return call["usage"]["cost"]["total"]


def entries(session: Path) -> list[dict]:
    return [e for e in read_jsonl(session) if e.get("type") == "custom" and e.get("customType") == ENTRY]


def table(rows: list[dict], calls: list[dict], label: str) -> str:
    """The audit's per-call figures beside the provider's (for the report)."""
    lines = [f"{label}: call kind sent_by | audit bytes inst/both, $ inst/both | provider bytes, tokens in, $"]
    for row, call in zip(rows, calls, strict=False):
        usage, money = call["usage"], row["money"]["usd"]
        tokens = usage["input"] + usage["cacheRead"] + usage["cacheWrite"]
        lines.append(
            f"{row['index']:>2} {row['call']:<10} {row['sent_by']['by']}:{row['sent_by']['config']:<9} | "
            f"{row['bytes']['installed']:>7} {row['bytes']['both']:>7} "
            f"${money['installed']:.4f} ${money['both']:.4f} | "
            f"{call['bytes']:>7} {tokens:>6} ${dollars(call):.4f}"
        )
    return "\n".join(lines)


def rpc_session(full_senpi, agent: Path, root: Path, extensions: list[Path]) -> RealSenpi:
    """Four 'ulw' prompts, a compaction, two more prompts, in one RPC process."""
    user = user_of(full_senpi, agent, root)
    rpc = Rpc(user, [SUPPORT / "priced_provider.js", SUPPORT / "directive_prepend.js", *extensions], model=MODEL)
    for i in range(4):
        rpc.prompt(f"ulw step {i}")
    rpc.send({"type": "compact"})
    for i in range(4, 6):
        rpc.prompt(f"ulw step {i}")
    rpc.close()
    return user


def test_a_compactions_summary_request_is_a_row_and_its_saving_counts(full_senpi, agent, tmp_path):
    extension = tmp_path / "ext.js"
    extension.write_text(PATCH.render_extension(Config()), "utf-8")
    plain = rpc_session(full_senpi, agent, tmp_path / "plain", [])
    guarded = rpc_session(full_senpi, agent, tmp_path / "ext", [extension])
    without, received = billed(plain), billed(guarded)
    assert len(without) == len(received) == 7  # six turns and the compaction's summary request
    (tmp_path / "calls.json").write_text(json.dumps({"plain": without, "ext": received}))
    rows, summary, text = audit_report(full_senpi, guarded.session_file())
    plain_rows, plain_summary, _ = audit_report(full_senpi, plain.session_file())
    assert len(rows) == len(plain_rows) == 7
    print("\n" + table(plain_rows, without, "without senpi-guard") + "\n" + table(rows, received, "with the extension"))
    kinds = [r["call"] for r in rows]
    assert kinds == ["turn"] * 4 + ["compaction"] + ["turn"] * 2 and kinds == [r["call"] for r in plain_rows]
    summary_row = rows[4]
    assert summary_row["sent"] == "summary" and "compact" in text and "summary request" in text
    # the extension collapsed copies in the summary request: the audit counts what it took out
    removed = without[4]["bytes"] - received[4]["bytes"]
    assert removed > 20_000
    assert abs((summary_row["bytes"]["installed"] - summary_row["bytes"]["both"]) - removed) <= removed / 100
    # every call of the guarded session is priced as the extension's, from its entry
    assert {(r["sent_by"]["by"], r["sent_by"]["config"]) for r in rows} == {("entry", "extension")}
    saved = sum(map(dollars, without)) - sum(map(dollars, received))
    money = summary["money"]
    assert abs(money["saved_usd"]["both"] - saved) <= 0.02 * saved, (money["saved_usd"], saved)
    assert abs(money["usd"]["both"] - sum(map(dollars, received))) <= 0.02 * sum(map(dollars, received))
    assert abs(plain_summary["money"]["saved_usd"]["both"] - saved) <= 0.02 * saved


PROMPTS = ("ulw step 0", "ulw step 1", "what changed?", "ulw step 3", "ulw step 4")
PLUGINS = ("priced_provider.js", "directive_custom.js", "directive_task.js")


def print_session(full_senpi, agent: Path, root: Path) -> RealSenpi:
    """One print-mode process per prompt: the task block comes back with each one."""
    user = user_of(full_senpi, agent, root)
    for prompt in PROMPTS:
        user.prompt(prompt, model=MODEL, plugins=PLUGINS)
    return user


def without_entries(session: Path, out: Path) -> Path:
    """The session as an older senpi-guard would have left it: our entries taken out (their children
    re-parented), everything else byte for byte."""
    lines = session.read_text("utf-8").splitlines(keepends=True)
    parsed = [json.loads(line) for line in lines]
    ours = {e["id"]: e.get("parentId") for e in parsed if e.get("customType") == ENTRY}
    kept = []
    for line, entry in zip(lines, parsed, strict=True):
        if entry.get("id") in ours:
            continue
        parent = entry.get("parentId")
        while parent in ours:
            parent = ours[parent]
        kept.append(line if parent == entry.get("parentId") else json.dumps({**entry, "parentId": parent}) + "\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(kept), "utf-8")
    return out


def test_a_guarded_session_counts_the_saving_once(full_senpi, agent, isolated_dirs, tmp_path):
    plain = print_session(full_senpi, agent, tmp_path / "plain")
    write_user_config(isolated_dirs, 'layers = ["dist", "extension"]\n')
    result = senpi_guard("apply", "--root", full_senpi.package_dir, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    try:
        guarded = print_session(full_senpi, agent, tmp_path / "ext")
    finally:
        assert senpi_guard("revert", "--root", full_senpi.package_dir).returncode == 0
    without, received = billed(plain), billed(guarded)
    assert len(without) == len(received) == len(PROMPTS)
    spent = {"plain": sum(map(dollars, without)), "ext": sum(map(dollars, received))}
    saved = spent["plain"] - spent["ext"]
    assert saved > 0.3 * spent["plain"]

    session = guarded.session_file()
    rows, summary, text = audit_report(full_senpi, session)
    plain_rows, plain_summary, _ = audit_report(full_senpi, plain.session_file())
    print({"billed": spent, "audit_ext": summary["money"]["usd"], "audit_plain": plain_summary["money"]["usd"]})
    money = summary["money"]
    # the record is the extension's: as installed is derived from it, with the extension is it
    assert abs(money["usd"]["installed"] - spent["plain"]) <= 0.02 * spent["plain"], (money["usd"], spent)
    assert abs(money["usd"]["both"] - spent["ext"]) <= 0.02 * spent["ext"], (money["usd"], spent)
    assert abs(money["saved_usd"]["both"] - saved) <= 0.02 * saved, (money["saved_usd"], saved)
    print("\n" + table(plain_rows, without, "without senpi-guard") + "\n" + table(rows, received, "with both layers"))
    assert {(r["sent_by"]["by"], r["sent_by"]["config"]) for r in rows} == {("entry", "extension")}
    # one small entry per call, in the guarded session only
    lines = [line for line in session.read_text().splitlines() if f'"customType":"{ENTRY}"' in line]
    assert len(lines) == len(PROMPTS) and not entries(plain.session_file())
    assert max(len(line.encode()) + 1 for line in lines) <= 300
    assert "which configuration sent each call: 5 from senpi-guard's entry" in " ".join(text.split())

    # the same session without the entries (as recorded before them): inferred, and said so
    older = without_entries(session, agent / "sessions" / "older" / session.name)  # (priced by its models.json)
    rows, summary, text = audit_report(full_senpi, older)
    by = [(r["sent_by"]["by"], r["sent_by"]["config"]) for r in rows]
    assert by[0] == ("none", "installed") and set(by[1:]) == {("inferred", "extension")}, by
    assert abs(summary["money"]["saved_usd"]["both"] - saved) <= 0.02 * saved
    assert "inferred from the recorded tokens" in " ".join(text.split())


def test_a_fork_counts_only_its_own_calls_and_the_two_files_every_call_once(full_senpi, agent, tmp_path):
    """senpi's RPC fork copies the entries it starts from into a new file (ids and times kept): the
    parent's calls are counted in the parent, the fork's in the fork, each once (measured before:
    the fork's file counted the parent's copied calls again, and --all counted them twice)."""
    user = user_of(full_senpi, agent, tmp_path / "fork")
    rpc = Rpc(user, [SUPPORT / "priced_provider.js", SUPPORT / "directive_prepend.js"], model=MODEL)
    for i in range(3):
        rpc.prompt(f"ulw step {i}")
    (parent,) = user.sessions.glob("*.jsonl")
    prompts = [e for e in read_jsonl(parent) if e.get("type") == "message" and e["message"]["role"] == "user"]
    rpc.send({"type": "fork", "entryId": prompts[2]["id"]})
    for i in range(2):
        rpc.prompt(f"ulw other {i}")
    rpc.close()
    calls = billed(user)
    (fork,) = [path for path in user.sessions.glob("*.jsonl") if path != parent]
    parent_rows, _, _ = audit_report(full_senpi, parent)
    fork_rows, _, _ = audit_report(full_senpi, fork)
    assert len(calls) == 5 and len(parent_rows) == 3 and len(fork_rows) == 2, (len(calls), parent_rows, fork_rows)
    audited = [r["bytes"]["installed"] for r in parent_rows + fork_rows]
    assert all(abs(a - c["bytes"]) <= 0.02 * c["bytes"] for a, c in zip(audited, calls, strict=True)), (audited, calls)
    done = senpi_guard("audit", "--root", full_senpi.package_dir, "--json", fork)
    (report,) = json.loads(done.stdout)["sessions"]
    assert [n for what, n in report["warnings"].items() if "forked from" in what] == [2], report["warnings"]
