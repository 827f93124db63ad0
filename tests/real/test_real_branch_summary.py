"""A branch summary (/tree navigation with a summary) on the real senpi 2026.8.22-2, in RPC mode: senpi
serialises the branch left behind into one user message and sends it without running any `context`
handler. `audit` gives that request a row of its own, its bytes what the provider received, the same
in every configuration (the extension never sees it, so it saves nothing there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_real_audit_truth as truth
from realsenpi import SUPPORT, audit_report, read_jsonl, senpi_guard
from test_real_audit_truth import ENTRY, MODEL, billed, user_of
from test_real_inside import PATCH, Rpc

from senpi_guard.io.config import Config

pytestmark = [pytest.mark.real, pytest.mark.slow]
agent = truth.agent  # (the agent dir with the priced model: a fixture)

# An extension command that navigates the tree with a summary, as /tree does in the TUI.
NAVIGATE = """\
export default function navigate(pi) {
    pi.registerCommand("navsum", {
        description: "navigate the session tree with a summary",
        handler: async (args, ctx) => {
            const result = await ctx.navigateTree(String(args).trim(), { summarize: true });
            ctx.ui.notify("senpi-guard navigated " + JSON.stringify(result), "info");
        },
    });
}
"""


def tree_session(full_senpi, agent, root, extensions):
    """Three 'ulw' prompts, back to the first answer with a summary, two more prompts."""
    navigate = root.parent / f"{root.name}-navsum.js"
    navigate.write_text(NAVIGATE, "utf-8")
    user = user_of(full_senpi, agent, root)
    rpc = Rpc(
        user, [SUPPORT / "priced_provider.js", SUPPORT / "directive_prepend.js", navigate, *extensions], model=MODEL
    )
    for i in range(3):
        rpc.prompt(f"ulw step {i}")
    stored = read_jsonl(user.session_file())
    first_answer = next(e for e in stored if e.get("type") == "message" and e["message"]["role"] == "assistant")
    rpc.send({"type": "prompt", "message": f"/navsum {first_answer['id']}"})
    for i in range(3, 5):
        rpc.prompt(f"ulw step {i}")
    rpc.close()
    return user, first_answer["id"]


@pytest.mark.parametrize("guarded", [False, True], ids=["plain", "extension"])
def test_a_branch_summary_is_a_row_of_what_the_provider_received(full_senpi, agent, tmp_path, guarded):
    extensions = []
    if guarded:
        extension = tmp_path / "ext.js"
        extension.write_text(PATCH.render_extension(Config()), "utf-8")
        extensions.append(extension)
    user, target = tree_session(full_senpi, agent, tmp_path / "s", extensions)
    stored = read_jsonl(user.session_file())
    (summary_entry,) = [e for e in stored if e.get("type") == "branch_summary"]
    assert summary_entry["parentId"] == summary_entry["fromId"] == target  # (senpi stores where it went)
    received = billed(user)
    assert len(received) == 6  # five turns and the branch summary's request
    rows, _, text = audit_report(full_senpi, user.session_file())
    assert [r["call"] for r in rows] == ["turn"] * 3 + ["branch_summary"] + ["turn"] * 2
    row = rows[3]
    assert row["entry_id"] == summary_entry["id"] and "branch" in text
    sent = received[3]["bytes"]
    assert sent > 50_000  # (the two 'ulw' prompts left behind, each with its directive)
    assert abs(row["bytes"]["installed"] - sent) <= sent * 0.03, (row["bytes"], sent)
    assert len(set(row["bytes"].values())) == 1  # no context handler runs: the same in every configuration
    assert row["money"]["usd"]["installed"] == row["money"]["usd"]["both"]
    assert row["extension_entry"] is None and row["usage"]["cacheWrite"] > 0
    assert "generateBranchSummary" in row["measured_as"], text.splitlines()[:4]  # (a fallback's reason is there)
    print(f"\nbranch summary request: audit {row['bytes']['installed']} B, the provider received {sent} B")


def audit_json(full_senpi, session: Path) -> dict:
    """audit --json's report of one session."""
    result = senpi_guard("audit", "--root", full_senpi.package_dir, "--json", session)
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)["sessions"]
    return report


def rewritten(session: Path, folder: Path, change) -> Path:
    """A copy of the session (in a sessions/ folder of the same agent dir) with `change` applied to
    every senpi-guard.sent entry's data."""
    lines = []
    for entry in read_jsonl(session):
        if entry.get("customType") == ENTRY:
            change(entry)
        lines.append(json.dumps(entry))
    copy = session.parent.parent / folder / session.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text("\n".join(lines) + "\n")
    return copy


def forged(session: Path, folder: str) -> Path:
    """A session recorded without senpi-guard, with an entry before each prompt claiming the
    extension sent the call (what a copied or hand-made entry looks like)."""
    lines, n = [], 0
    for entry in read_jsonl(session):
        if entry.get("type") == "message" and entry["message"]["role"] == "user":
            data = {"v": 1, "patch": 12, "settings": "00000000", "dist": None, "messages": 1, "in": 1, "out": 1}
            fake = {"type": "custom", "customType": ENTRY, "id": f"forged{n}", "parentId": entry["parentId"]}
            lines.append(json.dumps({**fake, "timestamp": entry["timestamp"], "data": data}))
            entry["parentId"], n = fake["id"], n + 1
        lines.append(json.dumps(entry))
    copy = session.parent.parent / folder / session.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text("\n".join(lines) + "\n")
    return copy


def ignored(report: dict) -> int:
    return sum(n for what, n in report["warnings"].items() if what.startswith(f"{ENTRY} entry ignored"))


def test_entries_that_do_not_fit_their_call_are_ignored_and_counted(full_senpi, agent, tmp_path):
    extension = tmp_path / "ext.js"
    extension.write_text(PATCH.render_extension(Config()), "utf-8")
    sessions = {}
    for name, extensions in (("plain", []), ("ext", [extension])):
        user = user_of(full_senpi, agent, tmp_path / name)
        rpc = Rpc(user, [SUPPORT / "priced_provider.js", SUPPORT / "directive_prepend.js", *extensions], model=MODEL)
        for i in range(3):
            rpc.prompt(f"ulw step {i}")
        rpc.close()
        sessions[name] = user.session_file()
    honest = audit_json(full_senpi, sessions["ext"])
    assert [r["sent_by"]["by"] for r in honest["turns"]] == ["entry"] * 3 and ignored(honest) == 0
    # a plain session with forged entries: priced as it was sent (no saving), the entries counted
    lie = audit_json(full_senpi, forged(sessions["plain"], "forged"))
    truth = audit_json(full_senpi, sessions["plain"])
    assert all(r["sent_by"]["by"] != "entry" for r in lie["turns"]) and ignored(lie) == 3
    assert [r["sent_by"]["config"] for r in lie["turns"]] == [r["sent_by"]["config"] for r in truth["turns"]]
    assert lie["summary"]["money"]["saved_usd"] == truth["summary"]["money"]["saved_usd"]
    # a dist layer claimed for a provider it never acts on
    dist = audit_json(full_senpi, rewritten(sessions["ext"], "dist", lambda e: e["data"].update(dist=True)))
    assert ignored(dist) == 3 and all(r["sent_by"]["config"] != "both" for r in dist["turns"])
    # malformed data: each kind counted, none trusted
    damage = {
        "string": lambda e: e.update(data="garbage"),
        "list": lambda e: e.update(data=[1, 2]),
        "v-string": lambda e: e["data"].update(v="1"),
        "v2": lambda e: e["data"].update(v=2),
        "nodata": lambda e: e.pop("data"),
        "negative": lambda e: e["data"].update({"in": -5, "out": "x"}),
        "compacting-string": lambda e: e["data"].update(compacting="false"),
    }
    for name, change in damage.items():
        report = audit_json(full_senpi, rewritten(sessions["ext"], name, change))
        assert ignored(report) == 3, (name, report["warnings"])
        assert all(r["sent_by"]["by"] != "entry" for r in report["turns"]), name
