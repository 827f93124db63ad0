"""Session JSONL -> contexts: the parent chain, compactions, and what a damaged file holds."""

from __future__ import annotations

from senpi_guard import sample, session


def test_turns_follow_the_parent_chain_and_count_damage(tmp_path):
    path = sample.write_sample_session(tmp_path / "s.jsonl", turns=4, directive_bytes=300)
    found = session.index(path)
    turns = list(session.turns(found))
    assert len(turns) == 8  # two assistant messages per step; the orphan is skipped
    assert all(t.model == "claude-opus-4-5" for t in turns)
    assert found.warnings and sum(found.warnings.values()) >= 3
    sizes = [len(t.path) for t in turns]
    assert sizes == sorted(sizes)  # each context grows


def test_compaction_keeps_only_what_it_names(tmp_path):
    path = sample.write_sample_session(tmp_path / "s.jsonl", turns=8, directive_bytes=300,
                                       compact_every=3, extras=False)
    found = session.index(path)
    last = list(session.turns(found))[-1]
    first = found.entries[last.path[0]]
    assert first.kind == "compaction"
    assert len(last.path) < 4 * 8  # the compaction dropped the steps before it


def test_entry_to_message():
    assert session.to_message({"type": "custom_message", "content": "hi"}) == {
        "role": "user", "content": [{"type": "text", "text": "hi"}]}
    assert session.to_message({"type": "label"}) is None
