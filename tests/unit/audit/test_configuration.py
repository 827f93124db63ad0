"""Which configuration sent a call (audit/configuration.py): the extension's entry, senpi's
payloadBytes, or an inference from the recorded tokens; ambiguous when two fit equally well."""

from __future__ import annotations

from senpi_guard.audit.configuration import Judge
from senpi_guard.audit.money import Recorded, Tokens


def row(installed: int, extension: int, lane: str = "context") -> dict:
    return {
        "bytes": {"installed": installed, "dist": installed, "extension": extension, "both": extension},
        "sent": lane,
    }


def usage(prompt_tokens: float) -> Recorded:
    return Recorded(Tokens(input=2, cache_write=prompt_tokens - 2), None)


def test_the_entry_decides_then_payload_bytes_then_the_tokens():
    judge = Judge("abcd1234")
    entry = {"v": 1, "settings": "abcd1234", "dist": None}
    assert judge.judge(row(100_000, 30_000), entry, usage(9_000), []).config == "extension"
    assert judge.judge(row(100_000, 30_000, "full"), {**entry, "dist": True}, None, []).config == "both"
    assert judge.judge(row(100_000, 30_000, "full"), None, None, ["dist"]).by == "payloadBytes"
    assert judge.other_settings == 0
    judge.judge(row(1, 1), {**entry, "settings": "other"}, None, [])
    assert judge.other_settings == 1


def test_inferred_against_the_sessions_own_overhead_and_ambiguous_without_one():
    judge = Judge(None)
    # no baseline yet: 30,000 tokens hold either configuration's text (with more or less overhead)
    first = judge.judge(row(100_000, 40_000), None, usage(30_000), [])
    assert (first.by, first.candidates) == ("ambiguous", ("installed", "extension"))
    # a call every configuration sends alike sets the overhead (system prompt, tools): 1,000 tokens
    assert judge.judge(row(20_000, 20_000), None, usage(6_000), []).by == "none"
    extension = judge.judge(row(100_000, 40_000), None, usage(11_000), [])
    installed = judge.judge(row(100_000, 40_000), None, usage(26_000), [])
    assert (extension.by, extension.config) == ("inferred", "extension")
    assert (installed.by, installed.config) == ("inferred", "installed")
    # nothing recorded: as installed
    assert judge.judge(row(100_000, 40_000), None, None, []).by == "none"


def test_a_delta_is_judged_by_its_fresh_tokens_without_a_baseline():
    # (measured on 2026.8.22-2 with the stand-in claude: the delta's new messages are 28,443 B as
    # installed, 76 B with the extension; the resident history is a cache read)
    judge = Judge(None)
    extension = judge.judge(row(28_443, 76, "delta"), None, Recorded(Tokens(3, 5, 7_159, 19), None), [])
    installed = judge.judge(row(28_443, 76, "delta"), None, Recorded(Tokens(3, 5, 7_159, 7_115), None), [])
    assert (extension.by, extension.config) == ("inferred", "extension")
    assert (installed.by, installed.config) == ("inferred", "installed")


def test_a_delta_after_a_cold_cache_is_not_judged_as_if_the_history_were_read():
    """The history written afresh with the new messages (the cache expired): the fresh tokens hold
    it, of a size the record does not say, so they fit every configuration (measured: a delta of
    76 B with both layers, 7,186 tokens written; judged "installed" before, a saving never made)."""
    judge = Judge(None)
    cold = judge.judge(row(28_443, 76, "delta"), None, Recorded(Tokens(3, 5, 0, 7_183), None), [])
    assert cold.by == "ambiguous" and set(cold.candidates) == {"installed", "extension"}
    # (and it sets no baseline: the next warm delta is judged as before)
    warm = judge.judge(row(28_443, 76, "delta"), None, Recorded(Tokens(3, 5, 7_159, 19), None), [])
    assert (warm.by, warm.config) == ("inferred", "extension")


def test_payload_bytes_several_configurations_give_decide_among_them_alone():
    """senpi's own record rules out what does not give its bytes, even where two do."""
    judge = Judge(None)
    sizes = {"bytes": {"installed": 28_915, "dist": 28_881, "extension": 28_881, "both": 28_881}, "sent": "full"}
    verdict = judge.judge(sizes, None, usage(7_300), ["dist", "extension", "both"])
    assert (verdict.by, verdict.candidates) == ("payloadBytes", ()) and verdict.config != "installed"


def test_a_call_the_extension_recorded_that_no_reply_answers_is_said(tmp_path):
    """senpi killed mid-call: the extension's entry for the call is there, no reply is (measured: the
    provider got three calls, audit showed two rows and no word of the third)."""
    import json

    from senpi_guard.audit import configuration, session

    data = {"v": 1, "patch": 12, "settings": "x", "dist": None, "messages": 1, "in": 2, "out": 2}
    reply = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "model": "m"}
    entries = [
        {"type": "custom", "id": "e1", "parentId": None, "customType": "senpi-guard.sent", "data": data},
        {"type": "message", "id": "u1", "parentId": "e1", "message": {"role": "user", "content": "one"}},
        {"type": "message", "id": "a1", "parentId": "u1", "message": reply},
        {"type": "custom", "id": "e2", "parentId": "a1", "customType": "senpi-guard.sent", "data": data},
        {"type": "message", "id": "u2", "parentId": "e2", "message": {"role": "user", "content": "two"}},
    ]
    path = tmp_path / "killed.jsonl"
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"}
    path.write_text("\n".join(json.dumps({"timestamp": "t", **e}) for e in [header, *entries]) + "\n")
    found = session.index(path)
    claimed: set[str] = set()
    with session.open_session(path) as handle:
        for turn in session.turns(found):
            configuration.sent_entry_of(found, handle, turn, claimed)
        configuration.unanswered(found, handle, claimed)
    (warning,) = [w for w in found.warnings if "no reply" in w]
    assert found.warnings[warning] == 1 and found.warning_lines[warning] == 5  # (e2's line)


def test_an_entry_sent_with_other_settings_still_says_which_configuration_sent_the_call():
    """The dedupe settings changed since (tags = "auto" then back): what the extension sent is not
    what the audit renders today, but its entry still says the extension sent the call (it was
    dropped as not the call's, and the call judged as installed: a saving said to be none)."""
    judge = Judge("today")
    sizes = {**row(17_482, 9_400), "context_bytes": {"in": 17_000, "out": 9_300}}
    entry = {"v": 1, "settings": "then", "dist": None, "in": 17_050, "out": 9_056}
    verdict = judge.judge(sizes, entry, None, [])
    assert (verdict.by, verdict.config) == ("entry", "extension") and judge.other_settings == 1
    wrong = {**entry, "in": 5_000}  # (what it saw is not the call's context: still not the call's)
    assert judge.judge(sizes, wrong, None, []).by != "entry"
