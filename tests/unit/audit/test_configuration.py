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
