"""audit/session_messages.py directly, on entries as senpi records them and as a damaged or hostile
file may hold them: the message each entry contributes to a call (as senpi's convertToLlm gives
it), the last continuity record of an assistant entry (a field of the wrong type read as not
recorded, text another user wrote escaped), the usage senpi recorded (NaN, negative, a string or a
bool: not recorded), and the context window of a model."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from senpi_guard.audit import session_messages as sm
from senpi_guard.demo import sample_session

CONTINUITY = sample_session.CONTINUITY


def assistant(diagnostics: Any = None, at_top: Any = None, **message: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "message", "id": "a1", "message": {"role": "assistant", **message}}
    if diagnostics is not None:
        entry["message"]["diagnostics"] = diagnostics
    if at_top is not None:
        entry["diagnostics"] = at_top
    return entry


def record(**details: Any) -> dict[str, Any]:
    return {"type": CONTINUITY, "timestamp": "t", "details": details}


# ---- to_message ----------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["user", "assistant", "toolResult"])
def test_a_message_senpi_sends_is_sent_as_stored(role):
    message = {"role": role, "content": [{"type": "text", "text": "hi"}], "extra": 1}
    assert sm.to_message({"type": "message", "message": message}) is message


def test_a_message_without_content_is_sent_with_an_empty_list():
    assert sm.to_message({"type": "message", "message": {"role": "user", "content": None}}) == {
        "role": "user",
        "content": [],
    }
    assert sm.to_message({"type": "message", "message": {"role": "assistant"}}) == {"role": "assistant", "content": []}


@pytest.mark.parametrize("role", ["system", "custom", "branchSummary", "", None])
def test_a_role_senpi_does_not_know_is_dropped(role):
    assert sm.to_message({"type": "message", "message": {"role": role, "content": "x"}}) is None


def test_a_compaction_is_the_user_text_senpi_sends():
    sent = sm.to_message({"type": "compaction", "summary": "did A\nthen B"})
    assert sent == {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "The conversation history before this point was compacted into the following summary:"
                "\n\n<summary>\ndid A\nthen B\n</summary>",
            }
        ],
    }
    assert sm.to_message({"type": "compaction"})["content"][0]["text"].endswith("<summary>\n\n</summary>")


@pytest.mark.parametrize("summary", [None, 7, ["x"], ""])
def test_a_branch_summary_that_is_no_text_adds_nothing(summary):
    assert sm.to_message({"type": "branch_summary", "summary": summary}) is None


def test_a_custom_message_is_a_user_message_whatever_its_content():
    parts = [{"type": "text", "text": "a"}, {"type": "image", "data": "x"}]
    assert sm.to_message({"type": "custom_message", "content": parts}) == {"role": "user", "content": parts}
    assert sm.to_message({"type": "custom_message"}) == {"role": "user", "content": []}


@pytest.mark.parametrize("kind", ["custom", "model_change", "label", "session_info", "thinking_level_change", None])
def test_entries_that_are_no_message_contribute_nothing(kind):
    assert sm.to_message({"type": kind, "content": "x", "summary": "y"}) is None


def test_a_bash_execution_with_a_nonzero_code_but_cancelled_says_only_cancelled():
    sent = sm.bash_execution_text({"command": "make", "output": "", "cancelled": True, "exitCode": 2})
    assert sent["content"][0]["text"] == "Ran `make`\n(no output)\n\n(command cancelled)"
    truncated_without_path = sm.bash_execution_text({"command": "x", "output": "o", "truncated": True})
    assert truncated_without_path["content"][0]["text"] == "Ran `x`\n```\no\n```"


# ---- call_of -------------------------------------------------------------------------------------


def test_the_last_continuity_record_describes_the_call():
    entry = assistant(
        [
            record(kind="bootstrap", reason="first_call", deltaMessages=0),
            {"type": "claude_sdk_oauth_compact_boundary", "details": {"boundary": {"trigger": "auto"}}},
            record(kind="flatten", reason="account_changed", deltaMessages=3, payloadBytes=1234),
            {"type": "claude_sdk_oauth_resume_fallback", "details": {"kind": "ignored"}},
        ],
        provider="claude-sdk-oauth",
    )
    assert sm.call_of(entry) == sm.Call("flatten", "account_changed", 3, 1234, "claude-sdk-oauth")


def test_a_call_without_any_record_is_not_recorded():
    assert sm.call_of(assistant()) == sm.Call(None, None, None, None, None)
    assert sm.call_of({"type": "message", "message": "not a dict"}) == sm.Call(None, None, None, None, None)
    assert sm.call_of({"type": "compaction"}) == sm.Call(None, None, None, None, None)


def test_records_on_the_entry_itself_count_when_the_message_has_none():
    entry = assistant(at_top=[record(kind="delta", reason="prefix_matched", deltaMessages=1)])
    assert sm.call_of(entry).continuity == "delta" and sm.call_of(entry).delta_messages == 1


@pytest.mark.parametrize(
    "diagnostics",
    [
        "flatten",
        {"type": CONTINUITY, "details": {"kind": "flatten"}},
        [None, 3, "x", {"type": CONTINUITY, "details": "flatten"}, {"type": CONTINUITY, "details": ["flatten"]}],
    ],
)
def test_diagnostics_of_the_wrong_shape_are_not_a_record(diagnostics):
    assert sm.call_of(assistant(diagnostics)) == sm.Call(None, None, None, None, None)


@pytest.mark.parametrize("count", [-1, True, 1.5, "3", None, math.nan])
def test_a_count_that_is_no_whole_number_is_not_recorded(count):
    found = sm.call_of(assistant([record(kind="flatten", deltaMessages=count, payloadBytes=count)]))
    assert found.delta_messages is None and found.payload_bytes is None and found.continuity == "flatten"


def test_text_another_user_wrote_is_escaped_and_other_types_are_not_recorded():
    hostile = "flatten\x1b[2J\r\nforged line"
    found = sm.call_of(assistant([record(kind=hostile, reason=["x"])], provider="p\x07"))
    assert found.continuity == "flatten\\x1b[2J\\r\\nforged line" and found.reason is None
    assert found.provider == "p\\x07"
    assert sm.call_of(assistant(provider=42)).provider is None


# ---- usage_of ------------------------------------------------------------------------------------


def test_usage_keeps_the_four_figures_audit_uses():
    usage = {"input": 10, "output": 99, "cacheRead": 2.5, "cacheWrite": 0, "totalTokens": 1_000_000}
    assert sm.usage_of(assistant(usage=usage)) == {"input": 10, "cacheRead": 2.5, "cacheWrite": 0, "totalTokens": 1e6}


@pytest.mark.parametrize("bad", [-1, math.nan, math.inf, "12", True, None, [1], {"n": 1}])
def test_a_figure_that_is_no_count_is_not_recorded(bad):
    found = sm.usage_of(assistant(usage={"input": bad, "cacheRead": 5}))
    assert found == {"input": None, "cacheRead": 5, "cacheWrite": None, "totalTokens": None}


def test_usage_parsed_from_hostile_json_is_not_recorded():
    # (Python's json reads NaN and Infinity, which senpi never writes)
    entry = json.loads('{"message": {"usage": {"input": NaN, "cacheRead": -Infinity, "cacheWrite": 1e400}}}')
    assert set(sm.usage_of(entry).values()) == {None}


@pytest.mark.parametrize("usage", [None, "12", [1, 2], 5])
def test_no_usage_dict_is_no_usage(usage):
    assert sm.usage_of(assistant(usage=usage)) is None
    assert sm.usage_of({"type": "compaction"}) is None


# ---- context_window --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-opus-4-5", 200_000),
        ("claude-sonnet-4-5[1m]", 1_000_000),
        ("claude-sonnet-4-5-1m", 1_000_000),
        ("Sonnet 4.5 1M", 1_000_000),
        ("opus", 200_000),
        ("haiku-3", 200_000),
        ("claude-3-5-haiku-20241022", 200_000),
        ("gpt-5", None),
        ("gemini-2.5-pro", None),
        ("", None),
        (None, None),
    ],
)
def test_the_context_window_of_a_model(model, window):
    assert sm.context_window(model) == window
