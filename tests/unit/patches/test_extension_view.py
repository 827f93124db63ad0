"""The extension's status line, /senpi-guard command and context budget, driven through a fake
senpi in the real node (tests/js/extension.mjs, scenario mode): the figures are what the calls
really did not send (whole context, or only the new messages on the delta lane), they reset with
the session, nothing is shown in print mode, a budget warning comes once per session, a block aborts
the call, and none of it changes the messages a call returns — even when every accessor of the
context throws."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
from conftest import HANG_S, kb

from senpi_guard.core.patch import definition
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config

PATCH = definition.load("directive-dedupe")
RUNNER = Path(__file__).resolve().parents[2] / "js" / "extension.mjs"
DIRECTIVE = "<ultrawork-mode>\n" + "rule: verify end to end.\n" * 200 + "</ultrawork-mode>"
MARKER = PATCH.marker("ultrawork-mode")
SAVED = len(DIRECTIVE.encode()) - len(MARKER.encode())  # what one collapsed copy saves
REPLY = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "stopReason": "stop"}


def user(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def turns(n: int) -> list[list[dict]]:
    """The context of each of n calls: every prompt carries the directive."""
    out, messages = [], []
    for i in range(n):
        messages = [*messages, *([REPLY] if messages else []), user(f"{DIRECTIVE}\n\nstep {i}")]
        out.append(messages)
    return out


def delta(k: int) -> dict:
    return {
        **REPLY,
        "diagnostics": [
            {
                "type": "claude_sdk_oauth_session_continuity",
                "details": {"kind": "delta", "reason": "prefix_matched", "deltaMessages": k},
            }
        ],
    }


@pytest.fixture(scope="module")
def extension(tmp_path_factory):
    folder = tmp_path_factory.mktemp("view")

    def render(**settings) -> Path:
        path = folder / f"ext-{len(list(folder.iterdir()))}.js"
        path.write_text(PATCH.render_extension(Config().with_patch("directive-dedupe", **settings)))
        return path

    return render


def play(path: Path, steps: list[dict], **ctx) -> list[dict]:
    request = json.dumps({"scenario": {"ctx": ctx, "steps": steps}})
    result = subprocess.run(
        ["node", str(RUNNER), str(path)],
        input=request + "\n",
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=True,
    )
    return json.loads(result.stdout)["steps"]


def calls(contexts: list[list[dict]], reply: dict = REPLY) -> list[dict]:
    return [{"context": c, "events": {"message_end": {"message": reply}}} for c in contexts]


def statuses(steps: list[dict]) -> list[str]:
    return [entry[2] for step in steps for entry in step["log"] if entry[0] == "setStatus"]


def test_status_counts_what_each_call_did_not_send(extension):
    steps = play(extension(), calls(turns(4)))
    # call k carries k-1 repeats: 0 + 1 + 2 + 3 copies not sent over the session
    assert statuses(steps) == [
        "senpi-guard: on, no repeats yet",
        f"senpi-guard: 1 repeat, {kb(SAVED)} not re-sent",
        f"senpi-guard: 3 repeats, {kb(3 * SAVED)} not re-sent",
        f"senpi-guard: 6 repeats, {kb(6 * SAVED)} not re-sent",
    ]
    report = play(extension(), [*calls(turns(4)), {"command": True}])[-1]["log"]
    ((kind, text, level),) = report
    assert (kind, level) == ("notify", "info")
    assert f"not re-sent: 6 copies, {6 * SAVED:,} bytes (≈{math.floor(6 * SAVED / 4 + 0.5):,} tokens)" in text
    assert "<ultrawork-mode>: 6 copies" in text and "4 calls with a reply" in text
    assert "dist layer: unknown" in text  # (node runs the test, not a senpi package)


def test_delta_lane_counts_only_the_new_messages_it_sent(extension):
    contexts = turns(3)
    third = {"context": contexts[2], "events": {"message_end": {"message": delta(1)}}}
    steps = play(extension(), [*calls(contexts[:2]), third, {"command": True}])
    # the third call (delta, one new message) sent one collapsed copy, not the two its context holds
    assert statuses(steps)[-1] == f"senpi-guard: 2 repeats, {kb(2 * SAVED)} not re-sent"
    assert "lanes: whole context 2, delta 1" in steps[-1]["log"][0][1]


def test_no_reply_or_an_error_reply_counts_nothing(extension):
    contexts = turns(3)
    steps = play(
        extension(),
        [
            *calls(contexts[:2]),
            {"context": contexts[2]},
            {"events": {"message_end": {"message": {**REPLY, "stopReason": "error"}}}},
        ],
    )
    assert statuses(steps)[-1] == f"senpi-guard: 1 repeat, {kb(SAVED)} not re-sent"


def test_figures_reset_when_the_session_changes_and_survive_a_reload(extension):
    contexts = turns(2)
    steps = play(
        extension(),
        [
            *calls(contexts),
            {"events": {"session_start": {"reason": "reload"}}},
            {"events": {"session_start": {"reason": "new"}}, "ctx": {"sessionId": "s-2"}},
        ],
    )
    assert statuses(steps)[-2:] == [
        f"senpi-guard: 1 repeat, {kb(SAVED)} not re-sent",
        "senpi-guard: on, no repeats yet",
    ]


def test_print_mode_is_silent_and_the_command_prints(extension):
    steps = play(extension(), [*calls(turns(3)), {"command": True}], hasUI=False, mode="print")
    assert all(step["log"] == [] for step in steps[:-1])
    ((kind, text),) = steps[-1]["log"]
    assert kind == "stdout" and "3 copies" in text


def test_ui_never_changes_the_messages_returned_even_when_the_context_throws(extension):
    path = extension(**{"budget.block_at": 0.05})
    contexts = turns(4)
    bare = play(path, [{"context": c} for c in contexts], throws=True)
    plain = play(path, [{"context": c} for c in contexts], window=10**9)
    assert [s["result"] for s in bare] == [s["result"] for s in plain]
    assert bare[-1]["result"][-1]["content"][0]["text"].startswith(MARKER)
    assert all(step["log"] == [] for step in bare)


def test_warns_once_per_session_past_warn_at_with_the_figures(extension):
    contexts = turns(4)
    path = extension(**{"budget.warn_at": 0.5})
    tokens = sent_tokens(path, contexts, 400)
    window = int(tokens[2] / 0.5)  # (the third call is the first past half of it)
    steps = play(path, calls(contexts), window=window, systemPrompt="s" * 400)
    warnings = [(i, e[1]) for i, s in enumerate(steps) for e in s["log"] if e[0] == "notify"]
    assert len(warnings) == 1
    at, text = warnings[0]
    assert at == 2
    assert f"≈{tokens[at]:,} tokens, {tokens[at] * 100 // window}% of m-1's {window:,}-token context window" in text
    assert "budget.warn_at = 0.5" in text and "/compact" in text


def sent_tokens(path: Path, contexts: list[list[dict]], system: int) -> list[int]:
    """Each call's size as the extension measures it: UTF-8 bytes as returned plus the system prompt, / 4."""
    sent = [s["result"] or c for s, c in zip(play(path, [{"context": c} for c in contexts]), contexts, strict=True)]
    return [math.ceil((sum(len(p["text"].encode()) for m in ctx for p in m["content"]) + system) / 4) for ctx in sent]


def test_senpi_usage_figure_from_before_the_rewrite_is_not_what_is_measured(extension):
    """senpi's getContextUsage() inside a context handler predates the rewrite: a figure past warn_at
    there warns of nothing when what the call carries is far below it."""
    path = extension(**{"budget.warn_at": 0.9})
    (tokens,) = sent_tokens(path, turns(1)[:1], 0)
    steps = play(path, calls(turns(1)), window=10 * tokens, usageTokens=10 * tokens)
    assert [e for e in steps[0]["log"] if e[0] == "notify"] == []


def test_block_at_stops_the_call_and_says_why(extension):
    path = extension(**{"budget.block_at": 0.5})
    contexts = turns(3)
    window = int(sent_tokens(path, contexts, 0)[1] / 0.5)  # (the second call is the first past half of it)
    ui = play(path, calls(contexts), window=window)
    stopped = [i for i, s in enumerate(ui) if ["abort"] in s["log"]]
    assert stopped and stopped == list(range(stopped[0], len(contexts)))
    notes = [e for e in ui[stopped[0]]["log"] if e[0] == "notify"]
    assert notes[0][2] == "error" and "stopped this call before it was sent" in notes[0][1]
    assert "budget.block_at = 0.5" in notes[0][1]
    # a stopped call counts nothing, whatever reply follows: the status moves only for the calls before
    assert stopped[0] == 1 and len(statuses(ui)) == 1
    printed = play(path, calls(contexts), window=window, hasUI=False, mode="print")
    assert any(e[0] == "stderr" and "stopped this call" in e[1] for e in printed[stopped[0]]["log"])


def test_compaction_requests_are_never_stopped_or_counted(extension):
    steps = play(extension(**{"budget.block_at": 0.05}), calls(turns(2)), window=100, compacting=True)
    assert all(step["log"] == [] for step in steps)
    assert steps[1]["result"][-1]["content"][0]["text"].startswith(MARKER)  # (still deduped)


def test_budget_settings_reach_the_extension_only():
    budget = Config().with_patch("directive-dedupe", **{"budget.warn_at": 0.5, "budget.block_at": 0.9})
    # patched dist files stay current; the extension is rendered anew
    assert PATCH.config_digest(budget) == PATCH.config_digest(Config())
    assert PATCH.render_payload(budget) == PATCH.render_payload(Config())
    assert PATCH.config_digest(budget, extension=True) != PATCH.config_digest(Config(), extension=True)
    assert '"budget.warn_at":0.5,"budget.block_at":0.9' in PATCH.render_extension(budget)
    assert "budget." not in PATCH.render_payload(budget)


@pytest.mark.parametrize(
    ("key", "value"),
    [("budget.warn_at", 1.5), ("budget.block_at", -0.1), ("budget.warn_at", "80%"), ("budget.block_at", True)],
)
def test_a_bad_budget_is_one_line_naming_the_key_range_and_fix(key, value):
    with pytest.raises(FatalError) as caught:
        PATCH.settings(Config().with_patch("directive-dedupe", **{key: value}))
    message = str(caught.value)
    assert "\n" not in message and f"'{key}' must be a number from 0.05 to 1 (or 0 for off)" in message


def test_a_reused_message_of_another_size_is_measured_again_and_odd_events_pass(extension):
    """The reuse key of an assistant message holds no content: when the same position holds other
    content (another extension trimmed it), the budget measures what this call carries, not what the
    previous call did. A null or empty event never throws."""
    path = extension(**{"budget.block_at": 0.5})
    script = f"""
        const mod = await import({json.dumps(path.as_uri())});
        const handlers = {{}};
        mod.default({{ on: (e, h) => {{ (handlers[e] ??= []).push(h); }}, registerCommand() {{}} }});
        let aborted = 0;
        const ctx = {{ hasUI: true, ui: {{ notify() {{}}, setStatus() {{}} }},
            sessionManager: {{ getSessionId: () => "s" }}, model: {{ id: "w", contextWindow: 100000 }},
            getSystemPrompt: () => "", getContextUsage: () => undefined,
            abort: () => {{ aborted++; }}, isCompacting: () => false }};
        const u1 = {{ role: "user", content: "first" }}, u2 = {{ role: "user", content: "go on" }};
        const answer = (text) => ({{ role: "assistant", content: [{{ type: "text", text }}] }});
        const run = (messages) => {{ aborted = 0; handlers.context[0]({{ messages }}, ctx); return aborted; }};
        const odd = [undefined, null, {{}}].map((event) => {{
            try {{ handlers.context[0](event, ctx); return "ok"; }} catch (e) {{ return String(e); }} }});
        console.log(JSON.stringify([run([u1]), run([u1, answer("z".repeat(240000)), u2]),
            run([u1, answer("short"), u2]), run([u1, answer("z".repeat(240000)), u2]), odd]));
    """
    out = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [0, 1, 0, 1, ["ok", "ok", "ok"]]


def test_a_call_of_a_run_is_recorded_when_its_reply_starts(extension):
    """senpi stores a call's messages on its event queue after the `context` handler ran, before it
    hands the reply's message_start to extensions: a run's call is recorded then (appended from the
    handler it came before the prompt, the session's first entry, and senpi's compaction found
    nothing to compact: tests/real/test_real_record_compaction.py). Outside a run, or for a summary
    request, at once; a held one with no reply at the run's end."""
    (context,) = turns(1)
    sent = ["senpi-guard.sent"]
    running = {"context": context, "ctx": {"idle": False}}
    steps = play(
        extension(),
        [
            running,
            {"events": {"message_start": {"message": user("a steer")}}},
            {"events": {"message_start": {"message": REPLY}}},
            {"context": context},  # (idle: a call outside a run)
            {**running, "ctx": {"idle": False, "compacting": True}},
            running,
            {"events": {"agent_end": {"messages": []}}},
        ],
    )
    assert [step["records"] for step in steps] == [[], [], sent, sent, sent, [], sent]
    off = play(extension(record_calls="off"), [running, {"events": {"message_start": {"message": REPLY}}}])
    assert [step["records"] for step in off] == [[], []]
    # a host that never says a reply started holds no more than 16
    assert [step["records"] for step in play(extension(), [running] * 18)] == [[]] * 16 + [sent, sent]
