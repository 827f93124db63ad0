"""Session JSONL -> contexts: the parent chain, compactions, and what a damaged file holds."""

from __future__ import annotations

import json

from senpi_guard.audit import session
from senpi_guard.demo import sample_session


def test_turns_follow_the_parent_chain_and_count_damage(tmp_path):
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=4, directive_bytes=300)
    found = session.index(path)
    turns = list(session.turns(found))
    assert {t.kind for t in turns} == {"turn"}  # (its branch summary leaves nothing behind: no request)
    assert len(turns) == 8  # two assistant messages per step; the orphan is skipped
    assert all(t.model == "claude-opus-4-5" for t in turns)
    assert found.warnings and sum(found.warnings.values()) >= 3
    sizes = [len(t.path) for t in turns]
    assert sizes == sorted(sizes)  # each context grows


def test_compaction_keeps_only_what_it_names(tmp_path):
    path = sample_session.write_sample_session(
        tmp_path / "s.jsonl", turns=8, directive_bytes=300, compact_every=3, extras=False
    )
    found = session.index(path)
    last = list(session.turns(found))[-1]
    first = found.entries[last.path[0]]
    assert first.kind == "compaction"
    assert len(last.path) < 4 * 8  # the compaction dropped the steps before it


def test_entry_to_message():
    assert session.to_message({"type": "custom_message", "content": "hi"}) == {
        "role": "user",
        "content": [{"type": "text", "text": "hi"}],
    }
    assert session.to_message({"type": "label"}) is None


def test_a_bash_execution_becomes_user_text_as_senpi_sends_it():
    def run(**fields):
        return session.to_message({"type": "message", "message": {"role": "bashExecution", **fields}})

    assert run(command="ls", output="a\nb", exitCode=0)["content"][0]["text"] == "Ran `ls`\n```\na\nb\n```"
    assert (
        run(command="false", output="", exitCode=1)["content"][0]["text"]
        == "Ran `false`\n(no output)\n\nCommand exited with code 1"
    )
    assert (
        run(command="sleep 9", output="", cancelled=True, exitCode=None)["content"][0]["text"]
        == "Ran `sleep 9`\n(no output)\n\n(command cancelled)"
    )
    assert (
        run(command="cat big", output="x", exitCode=0, truncated=True, fullOutputPath="/tmp/o")["content"][0]["text"]
        == "Ran `cat big`\n```\nx\n```\n\n[Output truncated. Full output: /tmp/o]"
    )
    assert run(command="secret", output="x", excludeFromContext=True) is None


def test_branch_summaries_as_senpi_sends_them():
    text = session.to_message({"type": "branch_summary", "summary": "tried X"})["content"][0]["text"]
    assert text.endswith("<summary>\ntried X</summary>")
    assert session.to_message({"type": "branch_summary", "summary": ""}) is None


def test_a_session_with_bash_executions_audits(tmp_path, capsys):
    from conftest import run_cli

    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=2, directive_bytes=300, extras=False)
    lines = path.read_text().splitlines()
    last = json.loads(lines[-1])["id"]
    extra = [
        {
            "type": "message",
            "id": "bash1",
            "parentId": last,
            "timestamp": "t",
            "message": {"role": "bashExecution", "command": "ls", "output": "x", "exitCode": 0},
        },
        {
            "type": "message",
            "id": "bash2",
            "parentId": "bash1",
            "timestamp": "t",
            "message": {"role": "bashExecution", "command": "env", "output": "SECRET", "excludeFromContext": True},
        },
        {"type": "branch_summary", "id": "empty", "parentId": "bash2", "timestamp": "t", "summary": ""},
        {
            "type": "message",
            "id": "ask",
            "parentId": "empty",
            "timestamp": "t",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        },
    ]
    path.write_text("\n".join(lines + [json.dumps(e) for e in extra]) + "\n")
    code, out, err = run_cli(capsys, "audit", "--json", path)
    assert code == 1 and "--sample" in err and len(err.strip().splitlines()) == 1  # never a sample silently
    code, out, err = run_cli(capsys, "audit", "--json", "--sample", path)
    assert code == 0, err
    assert "SAMPLE" in json.loads(out)["sessions"][0]["serializer"]
    rows = json.loads(out)["sessions"][0]["turns"]
    assert rows[-1]["entry_id"] == "ask" and len(rows) == 5


def _chain(path, rows: list[tuple[str, str | None, str]], kept: dict[str, str]):
    """A session of (id, parent, type) rows: a message is an assistant's when its id starts with
    "a", else a user's; a custom entry is a hook's; compaction `k` keeps from `kept[k]`."""
    lines = [json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"})]
    for entry_id, parent, kind in rows:
        entry = {"type": kind, "id": entry_id, "parentId": parent, "timestamp": "t"}
        if kind == "message":
            entry["message"] = {"role": "assistant" if entry_id.startswith("a") else "user", "content": entry_id}
        elif kind == "custom":
            entry |= {"customType": "senpi.hooks.stop-state", "data": {}}
        else:
            entry |= {"summary": entry_id, "firstKeptEntryId": kept[entry_id]}
        lines.append(json.dumps(entry))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_compaction_that_keeps_from_an_older_compaction_keeps_nothing_before_itself(tmp_path):
    """senpi skips compaction entries when looking for firstKeptEntryId."""
    rows = [
        ("u1", None, "message"),
        ("k1", "u1", "compaction"),
        ("u2", "k1", "message"),
        ("k2", "u2", "compaction"),
        ("u3", "k2", "message"),
    ]
    found = session.index(_chain(tmp_path / "chain.jsonl", rows, {"k1": "u1", "k2": "k1"}))
    ids, chain = session.context_ids(found, "u3")
    assert ids == ["k2", "u3"]  # not u2: k2 names k1, which is skipped, so nothing before k2 is kept
    assert chain[-1] == "u3" and "k2" in chain
    assert session.context_ids(found, "u2")[0] == ["k1", "u1", "u2"]
    assert not found.warnings


def test_what_senpi_does_not_send_is_not_sent():
    def msg(message):
        return session.to_message({"type": "message", "message": message})

    assert msg({"role": "user", "content": None}) == {"role": "user", "content": []}
    assert msg({"role": "someFutureRole", "content": "x"}) is None
    assert session.to_message({"type": "custom_message", "customType": "x"}) == {"role": "user", "content": []}


def _compacted_session(tmp_path, summary: str, *, usage: bool = False, recorded: bool = False):
    """u1, a1, then a compaction that keeps a1 (its summary request carries u1), then u2 and a2; with
    `recorded`, the extension's entry for the first turn (so the session is one it recorded)."""
    lines = [json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"})]
    entries = [{"type": "message", "id": "u1", "parentId": None, "message": {"role": "user", "content": "hi"}}]
    if recorded:
        data = {"v": 1, "patch": 12, "settings": "x", "dist": None, "messages": 1, "in": 2, "out": 2}
        entries = [
            {"type": "custom", "id": "e1", "parentId": None, "customType": "senpi-guard.sent", "data": data},
            {**entries[0], "parentId": "e1"},
        ]
    reply = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "model": "m"}
    compaction = {"type": "compaction", "id": "k1", "parentId": "a1", "summary": summary, "firstKeptEntryId": "a1"}
    if usage:
        compaction["usage"] = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15}
    entries += [
        {"type": "message", "id": "a1", "parentId": "u1", "message": reply},
        compaction,
        {"type": "message", "id": "u2", "parentId": "k1", "message": {"role": "user", "content": "more"}},
        {"type": "message", "id": "a2", "parentId": "u2", "message": reply},
    ]
    lines += [json.dumps({"timestamp": "t", **entry}) for entry in entries]
    path = tmp_path / "compacted.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return session.index(path)


def test_a_compaction_that_split_a_turn_is_two_requests(tmp_path):
    """senpi's compact() summarises a split turn's history and its turn prefix in two requests, and
    joins the two summaries with a fixed line: the row says two requests."""
    plain = [t for t in session.turns(_compacted_session(tmp_path, "the story so far")) if t.kind == "compaction"]
    split = "the story so far\n\n---\n\n**Turn Context (split turn):**\n\nthe turn began"
    (row,) = [t for t in session.turns(_compacted_session(tmp_path, split)) if t.kind == "compaction"]
    assert [t.requests for t in plain] == [1] and row.requests == 2


def test_what_says_a_compactions_request_was_made(tmp_path):
    """A compaction's request is known from the extension's entry or senpi's usage; in a session the
    extension recorded, one it has no entry for went past it (no saving can be counted in it); with
    nothing recorded at all, the request is assumed."""
    from senpi_guard.audit import configuration, rows

    def evidence(found, entry=None) -> str | None:
        (turn,) = [t for t in session.turns(found) if t.kind == "compaction"]
        recorded = any(e.custom_type == configuration.SENT_ENTRY for e in found.entries.values())
        judge = configuration.Judge(None, recorded_by_extension=recorded)
        with found.path.open("rb") as handle:  # (the usage senpi stored on the compaction, as replay reads it)
            usage = session.usage_of({"message": session.read_entry(handle, found.entries["k1"], found.path)})
        return rows.compaction_evidence(turn, {"entry": entry, "usage": usage}, judge)

    assert evidence(_compacted_session(tmp_path, "s")) == "assumed"
    assert evidence(_compacted_session(tmp_path, "s", usage=True)) == "usage"
    assert evidence(_compacted_session(tmp_path, "s", recorded=True)) == "unseen"
    assert evidence(_compacted_session(tmp_path, "s", recorded=True), entry={"compacting": True}) == "entry"


def test_a_compaction_that_keeps_from_an_entry_that_sends_nothing_keeps_what_follows_it(tmp_path):
    """senpi 2026.8.22-2 keeps from a hook's custom entry (senpi.hooks.stop-state) when it comes
    first among what is kept: the messages after it are kept, none before it (measured: audit's own
    reconstruction dropped them, and said the entry was not on the path)."""
    rows = [
        ("u1", None, "message"),
        ("a1", "u1", "message"),
        ("c1", "a1", "custom"),
        ("u2", "c1", "message"),
        ("k1", "u2", "compaction"),
        ("u3", "k1", "message"),
    ]
    found = session.index(_chain(tmp_path / "kept.jsonl", rows, {"k1": "c1"}))
    ids, _walked = session.context_ids(found, "u3")
    assert ids == ["k1", "u2", "u3"]
    assert not found.warnings


def test_a_forked_session_counts_only_the_calls_made_after_it_was_forked(tmp_path):
    """senpi's fork (and its branch into a new file) copies the entries it starts from, ids and times
    kept, after a header naming the parent session: their calls were made, and are counted, there
    (measured: a fork audited with --all counted the parent's calls twice)."""

    def at(second: int) -> str:
        return f"2026-12-06T10:00:{second:02d}.000Z"

    rows = [
        ("u1", None, "user", 1),
        ("a1", "u1", "assistant", 2),
        ("u2", "a1", "user", 10),
        ("a2", "u2", "assistant", 11),
    ]
    header = {"type": "session", "version": 3, "id": "f", "timestamp": at(5), "cwd": "/", "parentSession": "/p.jsonl"}
    lines = [json.dumps(header)]
    for entry_id, parent, role, second in rows:
        message = {"role": role, "content": entry_id}
        lines.append(
            json.dumps(
                {"type": "message", "id": entry_id, "parentId": parent, "timestamp": at(second), "message": message}
            )
        )
    path = tmp_path / "fork.jsonl"
    path.write_text("\n".join(lines) + "\n")
    found = session.index(path)
    (turn,) = session.turns(found)
    assert turn.entry_id == "a2" and turn.path == ["u1", "a1", "u2"]  # (what it was sent still holds the copies)
    assert any("forked from" in warning for warning in found.warnings)
    unforked = tmp_path / "plain.jsonl"
    unforked.write_text(
        "\n".join([json.dumps({k: v for k, v in header.items() if k != "parentSession"}), *lines[1:]]) + "\n"
    )
    assert [t.entry_id for t in session.turns(session.index(unforked))] == ["a1", "a2"]
