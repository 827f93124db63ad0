"""audit counts each call as senpi sent it: lanes from senpi's continuity records, its own recorded
payloadBytes, contexts rebuilt by senpi's own functions or by ours (and both agree)."""

import json
import sys

import pytest
from conftest import SHAPE_REL, run_cli

from senpi_guard.core.patch.fixture_formats.context_template import directive_text
from senpi_guard.demo import sample_session

PROVIDER = {1: "claude-agent-sdk", 2: "claude-sdk-oauth", 3: "claude-sdk-oauth"}


def audit(capsys, path, *args, code=0):
    got, out, err = run_cli(capsys, "audit", path, "--json", *args)
    assert got == code, err
    return json.loads(out), err


def recorded_session(tmp_path, shape, pkg, **kwargs):
    return sample_session.write_sample_session(
        tmp_path / f"s{shape}.jsonl",
        directive_bytes=kwargs.pop("directive_bytes", 3000),
        turns=kwargs.pop("turns", 26),
        compact_every=kwargs.pop("compact_every", 8),
        lanes=shape > 1,
        provider=PROVIDER[shape],
        payload_from=pkg if shape == 3 else None,
        **kwargs,
    )


@pytest.mark.parametrize("shape", [1, 2, 3])
def test_both_reconstructions_agree_and_lanes_follow_the_records(npm_install, tmp_path, capsys, shape):
    pkg = npm_install(shape)
    path = recorded_session(tmp_path, shape, pkg)
    ours, _ = audit(capsys, path, "--root", pkg, "--reconstruction", "python")
    senpis, _ = audit(capsys, path, "--root", pkg, "--reconstruction", "senpi")
    (a,), (b,) = ours["sessions"], senpis["sessions"]
    assert (a["reconstruction"], b["reconstruction"]) == ("python", "senpi")
    assert a["turns"] == b["turns"] and a["summary"] == b["summary"]
    assert [t["call"] for t in a["turns"]].count("compaction") == 3  # (a summary request each)
    assert all(t["sent"] == "summary" for t in a["turns"] if t["call"] == "compaction")
    turns = [t for t in a["turns"] if t["call"] == "turn"]
    assert len(turns) == 52
    if shape == 1:  # no resident lane: every call re-sent everything, and nothing was recorded
        assert {(t["sent"], t["continuity"]) for t in turns} == {("full", None)}
        return
    lanes = dict(enumerate((t["continuity"], t["sent"]) for t in turns))
    assert lanes[0] == ("bootstrap", "full") and lanes[1] == ("delta", "delta")
    assert lanes[10] == ("fork", "delta") and lanes[18] == ("flatten", "full")
    assert lanes[22] == ("disabled", "full") and lanes[34] == ("flatten", "full")
    delta = [t for t in turns if t["sent"] == "delta"]
    assert all(t["unpatched_bytes"] == t["patched_bytes"] for t in delta)
    assert all(t["cache_write"] is None for t in delta)
    s = a["summary"]
    assert s["sent"]["delta"]["saved_bytes"] == 0 and s["sent"]["unknown"]["turns"] == 0
    assert s["headline"]["turns"] == sum(t["sent"] == "full" for t in turns) == 6
    assert s["headline"]["unpatched_bytes"] == sum(t["unpatched_bytes"] for t in turns if t["sent"] == "full")


def test_delta_bytes_are_the_new_messages_only(npm_install, tmp_path, capsys):
    pkg = npm_install(2)
    path = recorded_session(tmp_path, 2, pkg, extras=False)
    (report,) = audit(capsys, path, "--root", pkg)[0]["sessions"]
    # turn 3 answers step 1's tool result: one new message, its label and its text
    reminder = directive_text("system-reminder", 600, "todo")
    expected = len(f"Tool result (Bash, id=toolu_0001):\n{reminder}\n1 passed".encode())
    assert report["turns"][3]["unpatched_bytes"] == expected
    # turn 1 answers step 0's web_search result: a custom tool, named as senpi names it for the SDK
    expected = len(f"Tool result (mcp__custom-tools__web_search, id=toolu_0000):\n{reminder}\n0 passed".encode())
    assert report["turns"][1]["unpatched_bytes"] == expected


@pytest.mark.parametrize("reconstruction", ["python", "senpi"])
def test_recorded_payload_bytes_match_exactly(npm_install, tmp_path, capsys, reconstruction):
    pkg = npm_install(3)
    path = recorded_session(tmp_path, 3, pkg, turns=40, directive_bytes=5000)
    (report,) = audit(capsys, path, "--root", pkg, "--reconstruction", reconstruction)[0]["sessions"]
    recorded = [t for t in report["turns"] if t["recorded_payload_bytes"] is not None]
    assert len(recorded) >= 5  # bootstrap, the flattens, the compactions' flattens
    assert all(t["recorded_payload_bytes"] == t["unpatched_bytes"] for t in recorded)
    # recorded as installed: that configuration, or (where another gives the same bytes) unknown
    assert all("installed" in t["recorded_matches"] and t["recorded_as"] in ("installed", "unknown") for t in recorded)
    agreement = report["summary"]["recorded_payload"]
    assert agreement["recorded_as"].get("installed", 0) >= 1
    assert agreement == {
        "turns": len(recorded),
        "matched": len(recorded),
        "mismatches": [],
        "recorded_as": agreement["recorded_as"],
    }


def test_a_mismatch_is_shown_not_hidden(npm_install, tmp_path, capsys):
    pkg = npm_install(3)
    path = recorded_session(tmp_path, 3, pkg)
    text = path.read_text()
    first = text.index('"payloadBytes":') + len('"payloadBytes":')
    end = first + len(text[first:].split(",")[0].split("}")[0])
    path.write_text(text[:first] + "12345" + text[end:])
    (report,) = audit(capsys, path, "--root", pkg)[0]["sessions"]
    agreement = report["summary"]["recorded_payload"]
    assert agreement["matched"] == agreement["turns"] - 1
    assert agreement["mismatches"][0]["recorded"] == 12345
    code, out, _ = run_cli(capsys, "audit", path, "--root", pkg)
    assert agreement["mismatches"][0]["audit"]["installed"] != 12345
    assert code == 0 and "MISMATCH at call #0: senpi recorded 12,345 bytes" in " ".join(out.split())


def test_keep_first_writes_less_to_the_cache_than_upstreams_keep_last(npm_install, tmp_path, capsys):
    pkg = npm_install(3)
    path = sample_session.write_sample_session(
        tmp_path / "s.jsonl", turns=24, directive_bytes=6000, lanes=True, payload_from=pkg, extras=False
    )
    (report,) = audit(capsys, path, "--root", pkg)[0]["sessions"]
    s = report["summary"]
    full = [t for t in report["turns"] if t["sent"] == "full"]
    assert full[0]["cache_write"]["installed"] == full[0]["unpatched_bytes"]  # nothing cached yet
    assert s["cache_write"]["patched_bytes"] < s["cache_write"]["unpatched_bytes"]
    assert s["turns_losing_a_directive"]["patched"] == 0 < s["turns_losing_a_directive"]["unpatched"]
    code, out, _ = run_cli(capsys, "audit", path, "--root", pkg)
    assert code == 0
    dropped = s["turns_losing_a_directive"]["installed"]
    assert f"a distinct directive was dropped in {dropped} calls as installed, 0 with both layers" in " ".join(
        out.split()
    )
    code, out, _ = run_cli(capsys, "-v", "audit", path, "--root", pkg)
    assert code == 0
    words = " ".join(out.split())
    assert "a provider's cache had to write" in words and "a distinct directive was dropped in" in words


def test_a_turn_that_cannot_be_serialised_is_skipped_and_counted(npm_install, tmp_path, capsys):
    pkg = npm_install(2)
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=3, directive_bytes=300, extras=False)
    lines = path.read_text().splitlines()
    last = json.loads(lines[-1])["id"]
    poison = [
        {
            "type": "message",
            "id": "bad",
            "parentId": last,
            "timestamp": "t",
            "message": {"role": "user", "content": [None]},
        },
        {
            "type": "message",
            "id": "ask",
            "parentId": "bad",
            "timestamp": "t",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        },
    ]
    path.write_text("\n".join(lines + [json.dumps(e) for e in poison]) + "\n")
    (report,) = audit(capsys, path, "--root", pkg)[0]["sessions"]
    assert len(report["turns"]) == 6
    skipped = report["summary"]["skipped_turns"]
    assert skipped["turns"] == 1 and skipped["first"][0]["index"] == 6


def test_all_audits_every_session_it_can(tmp_path, capsys, monkeypatch, npm_install):
    pkg = npm_install(2)
    sessions = tmp_path / "agent" / "sessions" / "--w--"
    good = sample_session.write_sample_session(sessions / "a.jsonl", turns=2, directive_bytes=300)
    bad = sessions / "b.jsonl"
    bad.write_text('{"not": "a session"}\n')
    also = sample_session.write_sample_session(sessions / "c.jsonl", turns=3, directive_bytes=300)
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    code, out, err = run_cli(capsys, "audit", "--all", "--json", "--root", pkg)
    assert code == 1
    report = json.loads(out)  # valid JSON although one session failed
    by_path = {s["session"]: s for s in report["sessions"]}
    assert len(by_path[str(good)]["turns"]) == 4 and len(by_path[str(also)]["turns"]) == 6
    assert "is not a senpi session file" in by_path[str(bad)]["error"]
    assert err.count("could not audit") == 1 and str(bad) in err


def test_plot_is_checked_before_the_audit_and_drawn_per_session(tmp_path, capsys, monkeypatch, npm_install):
    pkg = npm_install(2)
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=2, directive_bytes=300)
    code, out, err = run_cli(capsys, "audit", path, "--root", pkg, "--plot", tmp_path / "x.jpg")
    assert code == 1 and "use a .png or .svg" in err and out == ""
    with monkeypatch.context() as patched:  # (undo only this: the XDG isolation must stay)
        patched.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
        code, out, err = run_cli(capsys, "audit", path, "--root", pkg, "--plot", tmp_path / "x.png")
    assert code == 1 and "needs matplotlib" in err and out == ""
    pytest.importorskip("matplotlib")
    sessions = tmp_path / "agent" / "sessions" / "--w--"
    for name in ("a", "b"):
        sample_session.write_sample_session(sessions / f"{name}.jsonl", turns=2, directive_bytes=300)
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    code, out, err = run_cli(capsys, "audit", "--all", "--root", pkg, "--plot", tmp_path / "p.svg")
    assert code == 0, err
    assert (tmp_path / "p-a.svg").stat().st_size > 5000 and (tmp_path / "p-b.svg").stat().st_size > 5000
    drawn = (tmp_path / "p-a.svg").read_text()  # what apply installs is the line: both layers
    assert "with senpi-guard (both layers)" in drawn and "dist layer only" in drawn and "senpi as installed" in drawn


def test_custom_tools_are_named_as_senpi_names_them(npm_install, tmp_path, capsys):
    pkg = npm_install(2)
    from test_audit import node_bytes  # (same folder)

    stamp = "t"
    result = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "web_search",
        "content": [{"type": "text", "text": "found"}],
    }
    call = {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "c1", "name": "web_search", "arguments": {"q": "x"}}],
    }
    user = {"role": "user", "content": [{"type": "text", "text": "look it up"}]}
    entries = [
        {"type": "session", "version": 3, "id": "s", "timestamp": stamp, "cwd": "/w"},
        {"type": "message", "id": "u", "parentId": None, "timestamp": stamp, "message": user},
        {"type": "message", "id": "a", "parentId": "u", "timestamp": stamp, "message": call},
        {"type": "message", "id": "r", "parentId": "a", "timestamp": stamp, "message": result},
        {
            "type": "message",
            "id": "b",
            "parentId": "r",
            "timestamp": stamp,
            "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        },
    ]
    path = tmp_path / "tools.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    (report,) = audit(capsys, path, "--root", pkg)[0]["sessions"]
    names = {"web_search": "mcp__custom-tools__web_search"}
    assert report["turns"][1]["unpatched_bytes"] == node_bytes(pkg / SHAPE_REL[2], [user, call, result], names)
    assert report["turns"][1]["unpatched_bytes"] != node_bytes(pkg / SHAPE_REL[2], [user, call, result])


def test_the_extension_layer_is_counted_on_the_delta_lane(npm_install, tmp_path, capsys):
    from senpi_guard.core.patch import definition

    pkg = npm_install(3)
    path = recorded_session(tmp_path, 3, pkg, extras=False, compact_every=0, turns=12)
    (report,) = audit(capsys, path, "--root", pkg)[0]["sessions"]
    turns = report["turns"]
    # turn 2 sends step 1's user message alone: its directive repeats step 0's, so the extension
    # sends the marker in its place; turn 0 (bootstrap) holds the first copy, kept in full
    marker = definition.load("directive-dedupe").marker("ultrawork-mode")
    assert turns[2]["sent"] == "delta"
    assert (
        turns[2]["bytes"]["extension"]
        == turns[2]["bytes"]["both"]
        == len(f"{marker}\n\nstep 1: continue the work".encode())
    )
    assert turns[2]["unpatched_bytes"] > 3000 > turns[2]["bytes"]["both"]
    assert turns[0]["bytes"]["both"] == turns[0]["patched_bytes"]
    assert turns[0]["bytes"]["extension"] == turns[0]["unpatched_bytes"]  # (the extension alone: upstream's pipeline)
    # the boundary after step 6 starts a new epoch: the next copy (turn 14, step 7's variant is new
    # anyway; step 8 at turn 16 repeats step 0's directive) goes out in full once more
    assert turns[16]["bytes"]["both"] == turns[16]["unpatched_bytes"]
    # …and a later repeat in that epoch is the marker again (turn 18, a flatten, re-sends every
    # distinct copy once: more than upstream's keep-last, which keeps the variant alone)
    assert turns[20]["sent"] == "delta" and turns[20]["bytes"]["both"] < turns[20]["unpatched_bytes"]
    delta = report["summary"]["sent"]["delta"]
    assert delta["saved_with_extension_bytes"] == delta["unpatched_bytes"] - delta["bytes"]["both"] > 0
