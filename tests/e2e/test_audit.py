import json
import subprocess
from pathlib import Path

import pytest
from conftest import SHAPE_REL, run_cli

from senpi_guard.demo import sample, sample_session


def audit_json(capsys, *args) -> dict:
    code, out, err = run_cli(capsys, "audit", *args, "--json")
    assert code == 0, err
    (report,) = json.loads(out)["sessions"]
    return report


def node_bytes(module: Path, messages: list[dict], names: dict[str, str] | None = None) -> int:
    """UTF-8 bytes of the text blocks that `module`'s buildPromptBlocks makes of `messages` (with
    `names` as the provider's custom tool name map)."""
    script = (
        f"import {{ buildPromptBlocks }} from {json.dumps(module.as_uri())};\n"
        f"const names = new Map(Object.entries({json.dumps(names or {})}));\n"
        f"const blocks = buildPromptBlocks({{ messages: {json.dumps(messages)} }}, names);\n"
        "let n = 0; for (const b of blocks) if (b.type === 'text') n += Buffer.byteLength(b.text);\n"
        "console.log(n);"
    )
    return int(
        subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True).stdout
    )


def test_per_turn_report_through_the_installed_senpi(npm_install, tmp_path, capsys):
    pkg = npm_install(2)
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=12, directive_bytes=8000)
    report = audit_json(capsys, path, "--root", pkg)
    assert str(pkg) in report["serializer"]
    turns = report["turns"]
    assert len(turns) == 24  # two assistant entries per step; the orphan is skipped
    # (its branch summary names an entry of the very path it is on: nothing left behind, no request)
    assert [t["index"] for t in turns] == list(range(24)) and {t["call"] for t in turns} == {"turn"}
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:-1] if line.startswith('{"')]
    assistants = [
        e["id"]
        for e in lines
        if e.get("type") == "message" and e["message"]["role"] == "assistant" and e["parentId"] != "no-such-parent"
    ]
    assert [t["entry_id"] for t in turns] == assistants
    assert turns[0]["unpatched_bytes"] == turns[0]["patched_bytes"]
    assert all(t["patched_bytes"] <= t["unpatched_bytes"] for t in turns)
    assert turns[-1]["collapsed"]["ultrawork-mode"] >= 9
    assert turns[-1]["usage"]["cacheRead"] > 0
    for t in turns:  # shape 2 has no dedupe of its own: nothing is lost either way
        d = t["directives"]
        assert d["distinct"] >= 1 and d["kept_installed"] == d["kept_dist"] == d["distinct"]
    # no continuity records and a senpi with a resident lane: every call's lane is unknown
    assert {(t["sent"], t["continuity"]) for t in turns} == {("unknown", None)}
    s = report["summary"]
    unknown = s["sent"]["unknown"]
    assert unknown["unpatched_bytes"] == sum(t["unpatched_bytes"] for t in turns)
    assert unknown["saved_bytes"] == unknown["unpatched_bytes"] - unknown["patched_bytes"] > 0
    assert s["headline"]["turns"] == 0 and s["headline"]["saved_bytes"] == 0  # never counted as full
    assert report["warnings"] == {
        "malformed line": 1,
        "unknown entry type 'future_entry_kind'": 1,
        "entry with a missing parent": 1,
        "truncated last line": 1,
    }
    # the first turn's bytes equal what senpi's own function makes of that context
    first_user = next(e for e in lines if e.get("type") == "message")["message"]
    assert turns[0]["unpatched_bytes"] == node_bytes(pkg / SHAPE_REL[2], [first_user])


def test_context_rules_compaction_branch_summary_custom_message(npm_install, tmp_path, capsys):
    pkg = npm_install(2)
    bridge = pkg / SHAPE_REL[2]
    stamp = "2026-11-20T10:00:00Z"
    entries = [
        {"type": "session", "version": 3, "id": "s", "timestamp": stamp, "cwd": "/w"},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": stamp,
            "message": {"role": "user", "content": "first question"},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": stamp,
            "message": {"role": "assistant", "content": [{"type": "text", "text": "first answer"}]},
        },
        {
            "type": "custom_message",
            "id": "c1",
            "parentId": "a1",
            "timestamp": stamp,
            "customType": "omo",
            "content": "extension note",
            "display": False,
        },
        {"type": "custom", "id": "x1", "parentId": "c1", "timestamp": stamp, "customType": "ui"},
        {
            "type": "message",
            "id": "u2",
            "parentId": "x1",
            "timestamp": stamp,
            "message": {"role": "user", "content": "second question"},
        },
        {
            "type": "compaction",
            "id": "k1",
            "parentId": "u2",
            "timestamp": stamp,
            "summary": "they asked twice",
            "firstKeptEntryId": "u2",
            "tokensBefore": 10,
        },
        {
            "type": "message",
            "id": "u3",
            "parentId": "k1",
            "timestamp": stamp,
            "message": {"role": "user", "content": "third question"},
        },
        {
            "type": "message",
            "id": "a3",
            "parentId": "u3",
            "timestamp": stamp,
            "message": {"role": "assistant", "content": [{"type": "text", "text": "third answer"}]},
        },
        {  # back at k1 (senpi stores the place navigated to as both parentId and fromId)
            "type": "branch_summary",
            "id": "b1",
            "parentId": "k1",
            "timestamp": stamp,
            "fromId": "k1",
            "summary": "an abandoned branch",
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "b1",
            "timestamp": stamp,
            "message": {"role": "assistant", "content": [{"type": "text", "text": "second answer"}]},
        },
    ]
    path = tmp_path / "ctx.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    report = audit_json(capsys, path, "--root", pkg)
    # the compaction implies its summary request (what it summarised: the context before u2); the
    # branch summary, the request that summarised the branch left behind (u3, a3)
    assert [(t["entry_id"], t["call"]) for t in report["turns"]] == [
        ("a1", "turn"),
        ("k1", "compaction"),
        ("a3", "turn"),
        ("b1", "branch_summary"),
        ("a2", "turn"),
    ]
    summarised = ("first question", "first answer", "extension note")
    assert report["turns"][1]["bytes"]["installed"] == sum(len(t) for t in summarised)
    assert report["turns"][1]["money"]["tokens_are"] == "estimated"
    branch = report["turns"][3]
    # (this sample senpi has no generateBranchSummary: senpi's serialisation shape, and its frame, estimated)
    serialised = len("[User]: third question\n\n[Assistant]: third answer")
    assert branch["bytes"] == dict.fromkeys(("installed", "dist", "extension", "both"), serialised + 722)
    assert branch["measured_as"].startswith("an estimate") and branch["money"]["tokens_are"] == "estimated"
    report["turns"] = [t for t in report["turns"] if t["entry_id"] in ("a1", "a2")]

    def user(text):
        return {"role": "user", "content": [{"type": "text", "text": text}]}

    first = [entries[1]["message"]]
    second = [
        user(
            "The conversation history before this point was compacted into the following "
            "summary:\n\n<summary>\nthey asked twice\n</summary>"
        ),
        entries[5]["message"],
        user(
            "The following is a summary of a branch that this conversation came back from:"
            "\n\n<summary>\nan abandoned branch</summary>"
        ),  # no newline before the tag
    ]
    assert report["turns"][0]["unpatched_bytes"] == node_bytes(bridge, first)
    assert report["turns"][1]["unpatched_bytes"] == node_bytes(bridge, second)
    # before the compaction, the custom_message is part of the context and `custom` is not
    before = [entries[1]["message"], entries[2]["message"], user("extension note"), entries[5]["message"]]
    assert node_bytes(bridge, before) != report["turns"][1]["unpatched_bytes"]


def test_window_overflow_is_reported(tmp_path, capsys, npm_install):
    pkg = npm_install(2)  # (on shape 3 upstream's keep-last already trims the unpatched prompt)
    path = sample_session.write_sample_session(tmp_path / "big.jsonl", turns=40, directive_bytes=25_000, extras=False)
    s = audit_json(capsys, path, "--root", pkg)["summary"]
    assert s["context_window_tokens"] == 200_000
    assert s["first_turn_over_window_unpatched"] is not None
    assert s["that_turn_over_window_patched"] is False and s["first_turn_over_window_patched"] is None


def test_fallback_without_senpi_and_latest(env, tmp_path, capsys, monkeypatch):
    agent = tmp_path / "agent"
    older = sample_session.write_sample_session(agent / "sessions/--work-app--/2026-11-01_a.jsonl", turns=2)
    newer = sample_session.write_sample_session(agent / "sessions/--work-app--/2026-11-02_b.jsonl", turns=3)
    import os

    os.utime(older, (1, 1))
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(agent))
    code, out, err = run_cli(capsys, "audit", "--latest", "--sample")
    assert code == 0, err
    words = " ".join(out.split())  # (wrapped to the terminal)
    assert "SAMPLE senpi" in words and "no senpi install found" in words and str(newer) in out.splitlines()
    code, out, err = run_cli(capsys, "-v", "audit", "--latest", "--sample")
    assert code == 0, err
    assert "tokens are estimates" in out
    assert (
        "SAMPLE: every figure below is what senpi-guard's own sample senpi" in out
    )  # (not yours: said by the figures)
    code, out, _err = run_cli(capsys, "audit", "--latest", "--sample", "--json")
    assert code == 0 and json.loads(out)["sessions"][0]["sample"] is True


def test_not_a_session_is_a_clear_error(tmp_path, capsys):
    bogus = tmp_path / "notes.jsonl"
    bogus.write_text('{"hello": "world"}\n')
    code, _, err = run_cli(capsys, "audit", bogus)
    assert code == 1 and "is not a senpi session file" in err and len(err.splitlines()) == 1


def test_plot_renders_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=20, directive_bytes=10_000)
    image = tmp_path / "out" / "bytes.png"
    code, _, err = run_cli(capsys, "audit", path, "--plot", image, "--root", _sample_pkg(tmp_path))
    assert code == 0, err
    data = image.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 20_000


def _sample_pkg(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    sample.write_sample_package(pkg, 2, fillers=0)
    return pkg


def test_upstream_keep_last_loses_directives_ours_does_not(npm_install, tmp_path, capsys):
    pkg = npm_install(3)
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=16, directive_bytes=6000)
    report = audit_json(capsys, path, "--root", pkg)
    s = report["summary"]
    assert s["turns_losing_a_directive"]["patched"] == 0
    assert s["turns_losing_a_directive"]["unpatched"] > 0  # the variant (step 7) is dropped later
    # the variant arrives at step 7 (turn 14); from then on keep-last always drops one of the two
    turns = [t for t in report["turns"] if t["call"] == "turn"]
    losing = [i for i, t in enumerate(turns) if t["directives"]["kept_installed"] < t["directives"]["distinct"]]
    assert losing == list(range(14, len(turns)))


def test_audit_through_a_file_another_patch_shares(npm_install, tmp_path, capsys, monkeypatch):
    """A target composed by another patch too (here a test-only one on prompt-bridge.js) is audited
    through the installed senpi: the audit knows every patch the file may carry."""
    monkeypatch.setenv("SENPI_GUARD_EXTRA_PATCHES", str(Path(__file__).parents[1] / "patches" / "prompt-blocks"))
    pkg = npm_install(2)
    code, _, err = run_cli(capsys, "apply", "--root", pkg)
    assert code == 0, err
    assert b"prompt-blocks" in (pkg / SHAPE_REL[2]).read_bytes()  # (both patches are in that file)
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=3, directive_bytes=2000)
    report = audit_json(capsys, path, "--root", pkg)
    assert str(pkg) in report["serializer"] and "SAMPLE" not in report["serializer"], report["serializer"]
