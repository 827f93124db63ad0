"""The extension's `context` handler keeps what it computed between calls and processes only what a
call adds (issue 27): on random session histories, each call's result equals the stateless full
rewrite of the same messages, and its call record counts the bytes of those messages, call by call.

A history grows as senpi's does: appends; a retry that cuts the last message and sends another; an
edit of one of the last messages without any event; compaction (`session_compact`: a summary and
the recent messages), tree navigation (`session_tree`: a branch cut anywhere and continued) and a
fork or a new session (`session_start`), each with senpi's event. Every message carries its own
timestamp, as senpi stamps each. Below 64 messages, where the identity pass compares every
message's print, an edit anywhere without an event (a new message with a new timestamp in an old
place) is made too; past that the pass samples (see extension.js), and an edit there comes with
`session_tree`, as senpi's own do."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import HANG_S
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unit.patches.test_extension_properties import BOUNDARY
from unit.patches.test_payload_properties import CONFIG, PATCH, texts

OPS = ("append", "append", "append", "bulk", "retry", "tail-edit", "edit", "compact", "tree", "fork", "same")
BULK = "<system-reminder>" + "keep going. " * 20 + "</system-reminder>"
WHOLE = 64  # (below this many messages the identity pass compares every message's print)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    path = tmp_path_factory.mktemp("ext") / "extension.js"
    path.write_text(PATCH.render_extension(CONFIG))
    driver = Path(__file__).resolve().parents[2] / "js" / "extension.mjs"
    proc = subprocess.Popen(["node", str(driver), str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(steps):
        proc.stdin.write(json.dumps({"history": steps}) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())["calls"]

    yield run
    proc.stdin.close()
    proc.wait(timeout=HANG_S)


parts = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, texts),
        st.just({"type": "image", "data": "AA==", "mimeType": "image/png"}),
    ),
    max_size=3,
)
bodies = st.one_of(
    st.builds(lambda c: {"role": "user", "content": c}, parts),
    st.builds(lambda t: {"role": "user", "content": t}, texts),
    st.builds(lambda t: {"role": "custom", "customType": "omo", "content": t, "display": False}, texts),
    st.builds(lambda c: {"role": "toolResult", "toolCallId": "c", "toolName": "bash", "content": c}, parts),
    st.builds(lambda t: {"role": "assistant", "content": [{"type": "text", "text": t}]}, texts),
    st.just({"role": "assistant", "content": [], "diagnostics": [BOUNDARY]}),
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_780_000_000_000

    def stamp(self, body: dict) -> dict:
        self.now += 1
        return {**body, "timestamp": self.now}


def step(data, clock: Clock, messages: list[dict]) -> tuple[list[str], list[dict]]:
    """One change to the history: the events senpi emits for it and the history after it."""
    new = lambda low=1, high=3: [clock.stamp(b) for b in data.draw(st.lists(bodies, min_size=low, max_size=high))]  # noqa: E731
    op = data.draw(st.sampled_from(OPS)) if messages else "append"
    at = lambda low=0: data.draw(st.integers(low, len(messages) - 1))  # noqa: E731
    if op == "append":
        return [], messages + new()
    if op == "bulk":  # (a long history, each message with the same directive: past WHOLE, old changes need events)
        return [], messages + [clock.stamp({"role": "user", "content": f"{BULK} step {k}"}) for k in range(40)]
    if op == "retry":
        return [], messages[:-1] + new(1, 1)
    if op == "edit":  # (past WHOLE: an edit as senpi makes one, with the tree event)
        k = at()
        return [] if len(messages) < WHOLE else ["session_tree"], [*messages[:k], *new(1, 1), *messages[k + 1 :]]
    if op == "tail-edit":
        k = at(max(0, len(messages) - 4))
        return [], [*messages[:k], *new(1, 1), *messages[k + 1 :]]
    if op == "compact":
        summary = clock.stamp({"role": "compactionSummary", "summary": "so far", "tokensBefore": 9})
        return ["session_compact"], [summary, *messages[at() :], *new(0, 2)]
    if op == "tree":
        return ["session_tree"], messages[: at()] + new()
    if op == "fork":
        return ["session_start"], messages[: at()] + new(0, 2)
    return [], messages


def text_bytes(messages: list[dict]) -> int:
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content.encode("utf-8", "surrogatepass"))
        for part in content if isinstance(content, list) else []:
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                total += len(part["text"].encode("utf-8", "surrogatepass"))
    return total


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_each_call_equals_the_full_rewrite_and_its_record_counts_it(history, data):
    clock, messages, steps = Clock(), [], []
    for _ in range(data.draw(st.integers(1, 12))):
        events, messages = step(data, clock, messages)
        messages = messages[:150]
        new_session = [] if steps else ["session_start"]  # (nothing from the last example)
        steps.append({"events": new_session + events, "messages": messages})
    for number, (sent, call) in enumerate(zip(steps, history(steps), strict=True)):
        assert call["incremental"] == call["full"], f"call {number} (after {sent['events']})"
        record = call["record"]
        assert record is not None and record["messages"] == len(sent["messages"])
        assert (record["in"], record["out"]) == (text_bytes(sent["messages"]), text_bytes(call["full"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_past_the_whole_pass_the_events_start_over(history, data):
    """A long history (where the identity pass samples) changed anywhere with senpi's event: each
    call still equals the full rewrite, which only the event can tell the handler."""
    clock = Clock()
    messages = [clock.stamp({"role": "user", "content": f"{BULK} step {k}"}) for k in range(100)]
    steps = [{"events": ["session_start"], "messages": messages}]  # (a new session: nothing from the last example)
    for _ in range(data.draw(st.integers(1, 6))):
        events, messages = step(data, clock, messages)
        if len(messages) >= WHOLE and not events and data.draw(st.booleans()):
            k = data.draw(st.integers(0, len(messages) - 1))  # (an edit, as /tree makes one)
            events, messages = (
                ["session_tree"],
                [*messages[:k], *[clock.stamp(b) for b in [data.draw(bodies)]], *messages[k + 1 :]],
            )
        steps.append({"events": events, "messages": messages[:150]})
    for number, call in enumerate(history(steps)):
        assert call["incremental"] == call["full"], f"call {number} (after {steps[number]['events']})"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_past_the_whole_pass_a_directive_message_changed_without_an_event_is_seen(history, data):
    """A long history (where the identity pass samples) whose messages holding a directive (a first
    copy, or a later one rewritten) lose it in place, with no event at all: nothing reused may carry
    the old text or count the old first copy, so each call equals the full rewrite."""
    clock = Clock()
    holding = sorted(set(data.draw(st.lists(st.integers(0, 99), min_size=2, max_size=6))))
    messages = [
        clock.stamp({"role": "user", "content": f"{BULK} step {k}" if k in holding else f"plain step {k}"})
        for k in range(100)
    ]
    steps = [{"events": ["session_start"], "messages": messages}]  # (nothing from the last example)
    while len(holding) > 1 and data.draw(st.booleans()):
        k = data.draw(st.sampled_from(holding))
        holding.remove(k)
        messages = [*messages[:k], clock.stamp({"role": "user", "content": f"edited {k}"}), *messages[k + 1 :]]
        if data.draw(st.booleans()):
            messages = [*messages, clock.stamp({"role": "user", "content": "one more"})]
        steps.append({"events": [], "messages": messages})
    for number, call in enumerate(history(steps)):
        assert call["incremental"] == call["full"], f"call {number}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_past_the_whole_pass_any_change_without_an_event_sends_no_stale_text(history, data):
    """Old messages of a long history rewritten with no event (only another extension could), each
    change altering a length or sampled character (what the identity pass sees of a rewritten
    copy): each message sent is the full rewrite's, the message as handed in, or, for a message
    not changed since the last call, what that call sent of it: never a text the message no longer
    holds. (A message that gained a directive copy may go out in full, bytes not saved; a later
    message that holds the same directive then keeps the copy it kept before: what was sent before
    does not change.) A compaction boundary is left out: senpi only ever appends one (as Claude
    Code compacts)."""
    clock = Clock()
    messages = [
        clock.stamp({"role": "user", "content": f"{BULK} step {k}" if k % 7 == 0 else f"plain {k}"}) for k in range(100)
    ]
    steps = [{"events": ["session_start"], "messages": messages}]
    for _ in range(data.draw(st.integers(1, 6))):
        k = data.draw(st.integers(0, len(messages) - 1))
        plain = bodies.filter(lambda body: "diagnostics" not in body)  # (a boundary is only ever appended)
        messages = [*messages[:k], clock.stamp(data.draw(plain)), *messages[k + 1 :]]
        steps.append({"events": [], "messages": messages})
    before: tuple[list, list] = ([], [])  # (the last call's messages as handed in, and as sent)
    for number, (sent, call) in enumerate(zip(steps, history(steps), strict=True)):
        for index, (out, full, handed) in enumerate(
            zip(call["incremental"], call["full"], sent["messages"], strict=True)
        ):
            unchanged = index < len(before[0]) and before[0][index] == handed
            assert out in (full, handed) or (unchanged and out == before[1][index]), f"call {number}, message {index}"
        before = (sent["messages"], call["incremental"])


REWRITTEN_ALL, REWRITTEN_WINDOW = 256, 64  # (extension-reuse.js: every rewritten print up to 256, then 64 a call)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_past_the_rewritten_window_a_changed_copy_is_seen_within_its_turn(history, data):
    """More rewritten copies than the identity pass checks on every call (300): one of them changed
    in place with no event (only another extension could) is seen within ceil(300 / 64) calls, from
    then on each call equals the full rewrite; until then that one message gets the very output it
    got before (the documented trade-off: what was sent is sent again) and every other one the full
    rewrite's."""
    clock = Clock()
    messages = [clock.stamp({"role": "user", "content": f"{BULK} step {k}"}) for k in range(301)]
    steps = [{"events": ["session_start"], "messages": messages}]
    k = data.draw(st.integers(20, 280))  # (a rewritten copy away from the ends the pass always compares)
    edit = data.draw(st.sampled_from(["gone", "longer"]))
    body = {"role": "user", "content": "edited" if edit == "gone" else f"{BULK} step {k} and more"}
    messages = [*messages[:k], {**body, "timestamp": messages[k]["timestamp"]}, *messages[k + 1 :]]
    turns = -(-300 // REWRITTEN_WINDOW)
    for n in range(turns + 2):
        messages = [*messages, clock.stamp({"role": "assistant", "content": [{"type": "text", "text": f"ok {n}"}]})]
        steps.append({"events": [], "messages": messages})
    calls = history(steps)
    before = calls[0]["incremental"][k]
    seen = next(n for n, call in enumerate(calls) if n > 0 and call["incremental"] == call["full"])
    assert 1 <= seen <= turns, f"seen at call {seen}"
    for call in calls[1:seen]:
        out, full = call["incremental"], call["full"]
        assert out[k] == before and out[:k] + out[k + 1 :] == full[:k] + full[k + 1 :]
    assert all(call["incremental"] == call["full"] for call in calls[seen:])


def test_a_call_that_adds_one_message_reuses_the_previous_outputs_and_events_start_over(tmp_path):
    """A rewritten message of the previous call is returned as that very object when a call only adds
    messages; after a history event, or when an old message changed, it is computed again."""
    path = tmp_path / "extension.js"
    path.write_text(PATCH.render_extension(CONFIG))
    script = f"""
        const ext = await import({json.dumps(path.as_uri())});
        const on = {{}};
        ext.default({{ on: (e, f) => {{ (on[e] ??= []).push(f); }} }});
        const call = (messages) => on.context[0]({{ type: "context", messages: structuredClone(messages) }}).messages;
        const block = "<ultrawork-mode>" + "y".repeat(300) + "</ultrawork-mode>";
        const u = (t) => ({{ role: "user", content: block, timestamp: t }});
        const a = {{ role: "assistant", content: [{{ type: "text", text: "ok" }}], timestamp: 9 }};
        const one = call([u(1), u(2)]);
        const two = call([u(1), u(2), a]);
        on.session_tree[0]({{ type: "session_tree" }}, {{}});
        const three = call([u(1), u(2), a]);
        const four = call([u(1), u(5), a, a]); // (the second message is another one)
        console.log(JSON.stringify([two[1] === one[1], three[1] !== two[1], four[1] !== three[1],
            [one, two, three, four].every((out) => out[1].content.startsWith("[ultrawork-mode:"))]));
    """
    result = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == [True] * 4
