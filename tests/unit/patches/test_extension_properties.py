"""Property-based tests of the extension layer's `context` handler, run in the real node: it
matches an independent oracle (keep the first copy per epoch, a compact boundary starts a new
epoch), and every message's output depends only on it and the messages before it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import HANG_S
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unit.patches.test_payload_properties import CONFIG, PATCH, oracle_text, texts

PROCESSED = {"user", "custom", "toolResult"}
BOUNDARY = {"type": "claude_sdk_oauth_compact_boundary", "details": {"boundary": {"trigger": "auto"}}}


@pytest.fixture(scope="module")
def node_handler(tmp_path_factory):
    path = tmp_path_factory.mktemp("ext") / "extension.js"
    path.write_text(PATCH.render_extension(CONFIG))
    runner = Path(__file__).resolve().parents[2] / "js" / "extension.mjs"
    proc = subprocess.Popen(["node", str(runner), str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(cases):
        proc.stdin.write(json.dumps({"cases": cases}) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())["outputs"]

    yield run
    proc.stdin.close()
    proc.wait(timeout=HANG_S)


def oracle(messages: list[dict]) -> list[dict]:
    kept: dict[str, set[str]] = {}
    out = []
    for message in messages:
        if message.get("role") in PROCESSED:
            content = message.get("content")
            if isinstance(content, str):
                text = oracle_text(content, kept)
                message = {**message, "content": text} if text != content else message
            elif isinstance(content, list):
                parts = [{**p, "text": oracle_text(p["text"], kept)} if p.get("type") == "text" else p for p in content]
                message = {**message, "content": parts}
        out.append(message)
        if message.get("role") == "assistant" and BOUNDARY in (message.get("diagnostics") or []):
            kept = {}
    return out


parts = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, texts),
        st.just({"type": "image", "data": "AA==", "mimeType": "image/png"}),
    ),
    max_size=3,
)
messages = st.lists(
    st.one_of(
        st.builds(lambda c: {"role": "user", "content": c}, parts),
        st.builds(lambda t: {"role": "user", "content": t}, texts),
        st.builds(lambda t: {"role": "custom", "customType": "omo", "content": t, "display": False}, texts),
        st.builds(lambda c: {"role": "toolResult", "toolCallId": "c", "toolName": "bash", "content": c}, parts),
        st.builds(lambda t: {"role": "assistant", "content": [{"type": "text", "text": t}]}, texts),
        st.just({"role": "assistant", "content": [], "diagnostics": [BOUNDARY]}),
        st.builds(lambda t: {"role": "bashExecution", "command": "x", "output": t}, texts),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(messages, min_size=1, max_size=10))
def test_matches_the_oracle_and_every_prefix_is_stable(node_handler, batch):
    for case, result in zip(batch, node_handler(batch), strict=True):
        assert result["whole"] == oracle(case)
        assert result["again"] == result["whole"]  # whatever call came before
        assert not result["mutated"]
        for k, prefix in enumerate(result["prefixes"]):
            assert prefix == result["whole"][: k + 1]  # what was sent before never changes


def test_untouched_messages_are_the_same_objects_and_a_boundary_resets(tmp_path):
    path = tmp_path / "extension.js"
    path.write_text(PATCH.render_extension(CONFIG))
    script = f"""
        const ext = await import({json.dumps(path.as_uri())});
        let h; ext.default({{ on: (e, f) => {{ h = f; }} }});
        const u = "<ultrawork-mode>" + "y".repeat(300) + "</ultrawork-mode>";
        const plain = {{ role: "user", content: [{{ type: "text", text: "no tags" }}] }};
        const b = {{ role: "assistant", content: [], diagnostics: [{{ type: "claude_sdk_oauth_compact_boundary" }}] }};
        const ulw = () => ({{ role: "user", content: u }});
        const msgs = [ulw(), plain, ulw(), b, ulw()];
        const out = h({{ type: "context", messages: msgs }}).messages;
        // a later call whose history differs from the previous call's is not served from it
        const v = {{ role: "user", content: "<ultrawork-mode>" + "v".repeat(300) + "</ultrawork-mode>" }};
        const other = h({{ type: "context", messages: [v, plain, ulw(), b, ulw(), ulw()] }});
        console.log(JSON.stringify([out[0] === msgs[0], out[1] === msgs[1], out[2] !== msgs[2],
            out[3] === msgs[3], out[4] === msgs[4], out[2].content.startsWith("[ultrawork-mode:"),
            other.messages[2].content === u, other.messages[5].content.startsWith("[ultrawork-mode:")]));
    """
    result = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout) == [True] * 8
