"""Property-based tests of the injected dedupe, run in the real node in batches (one process)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import HANG_S
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from senpi_guard.core.patch import definition
from senpi_guard.io.config import Config

PATCH = definition.load("directive-dedupe")
TAGS = ("ultrawork-mode", "system-reminder", "omo-senpi-task")
CONFIG = Config().with_patch("directive-dedupe", tags=list(TAGS))


@pytest.fixture(scope="module")
def node_dedupe(tmp_path_factory):
    payload = tmp_path_factory.mktemp("payload") / "payload.js"
    payload.write_text(PATCH.render_payload(CONFIG))
    runner = Path(__file__).resolve().parents[2] / "js" / "payload.mjs"
    proc = subprocess.Popen(
        ["node", str(runner), str(payload)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )

    def run(cases: list[list[dict]]) -> list[list[dict]]:
        proc.stdin.write(json.dumps({"cases": cases}) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert "error" not in reply, reply.get("error")
        run.elapsed_ms = reply["elapsedMs"]
        return reply["outputs"]

    yield run
    proc.stdin.close()
    proc.wait(timeout=HANG_S)


def marker(tag: str) -> str:
    return PATCH.marker(tag)


def oracle_text(text: str, kept: dict[str, set[str]]) -> str:
    """The semantics from the issue for one text, written independently in Python; `kept` holds
    the spans met so far, per tag."""
    spans = []
    for tag in TAGS:
        tokens = [(m.start(), m.group()) for m in re.finditer(f"</?{re.escape(tag)}>", text)]
        opens = [t for t in tokens if not t[1].startswith("</")]
        good = len(tokens) % 2 == 0 and all(
            tokens[i][1] == f"<{tag}>" and tokens[i + 1][1] == f"</{tag}>" for i in range(0, len(tokens), 2)
        )
        if good and opens:
            spans += [(tokens[i][0], tokens[i + 1][0] + len(f"</{tag}>"), tag) for i in range(0, len(tokens), 2)]
    spans.sort()
    outer, reach, broken = [], -1, False
    for start, end, tag in spans:
        if start >= reach:
            outer.append((start, end, tag))
            reach = end
        elif end > reach:
            broken = True
    if broken:
        outer = []
    pieces, last = [], 0
    for start, end, tag in outer:
        body = text[start:end]
        seen = kept.setdefault(tag, set())
        if body in seen:
            if len(marker(tag)) < len(body):  # the marker never makes a text longer
                pieces += [text[last:start], marker(tag)]
                last = end
        else:
            seen.add(body)
    return "".join(pieces) + text[last:] if last else text


def oracle(blocks: list[dict]) -> list[dict]:
    kept: dict[str, set[str]] = {}
    out = []
    for block in blocks:
        if block.get("type") != "text":
            out.append(block)
            continue
        text = oracle_text(block["text"], kept)
        out.append({**block, "text": text} if text != block["text"] else block)
    return out


bodies = st.sampled_from(["a", "rule one", "rule two\nmore", "x" * 50, "ünï ✓"])
spans = st.builds(lambda tag, body: f"<{tag}>{body}</{tag}>", st.sampled_from(TAGS), bodies)
noise = st.sampled_from(
    [
        "hello ",
        "\n",
        "<ultrawork-mode>",
        "</system-reminder>",
        "<b>",
        "text ",
        "<",
        "</",
        "<ultrawork-mode",
        ">",
        "<>",
        "</>",
        "<omo-senpi-task-x>",
        "a<b>c",
    ]
)
texts = st.lists(st.one_of(spans, spans, noise, st.text(max_size=5)), max_size=8).map("".join)
blocks = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, texts),
        st.just({"type": "image", "source": {"type": "base64", "data": "AA=="}}),
        st.builds(lambda t: {"type": "text", "text": t, "cache_control": {"type": "ephemeral"}}, texts),
    ),
    max_size=8,
)
batches = st.lists(blocks, min_size=1, max_size=20)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches)
def test_matches_the_specification(node_dedupe, batch):
    assert node_dedupe(batch) == [oracle(b) for b in batch]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches)
def test_prefix_stable_idempotent_and_lossless(node_dedupe, batch):
    prefixes = [b[:k] for b in batch for k in range(len(b) + 1)]
    outputs = node_dedupe(batch + prefixes)
    full, rest = outputs[: len(batch)], outputs[len(batch) :]
    again = node_dedupe(full)
    index = 0
    for blocks_in, blocks_out, twice in zip(batch, full, again, strict=True):
        for k in range(len(blocks_in) + 1):
            assert rest[index] == blocks_out[:k]  # decisions depend only on earlier blocks
            index += 1
        assert twice == blocks_out
        assert len(blocks_out) == len(blocks_in)
        seen_in = {m for b in blocks_in if b["type"] == "text" for m in re.findall(r"<(\S+?)>[\s\S]*?</\1>", b["text"])}
        text_out = "".join(b.get("text", "") for b in blocks_out)
        for tag in seen_in:
            assert tag not in TAGS or f"<{tag}>" in text_out  # a tag never vanishes entirely
        for a, b in zip(blocks_in, blocks_out, strict=True):
            if a["type"] != "text" or not any(f"<{t}>" in a["text"] for t in TAGS):
                assert a == b


def test_markers_are_short_and_tag_free():
    for tag in PATCH.settings(Config())["tags"]:
        assert len(marker(tag).encode()) <= 120
        assert not any(f"<{t}>" in marker(tag) for t in PATCH.settings(Config())["tags"])


def test_keeps_first_drops_identical_keeps_variants(node_dedupe):
    a, b = ("<ultrawork-mode>" + body * 80 + "</ultrawork-mode>" for body in "AB")
    case = [{"type": "text", "text": t} for t in (a, b, a, b, a + " " + a)]
    (out,) = node_dedupe([case])
    m = marker("ultrawork-mode")
    assert [x["text"] for x in out] == [a, b, m, m, m + " " + m]


def test_a_marker_never_makes_the_prompt_longer(node_dedupe):
    short = "<system-reminder>ok</system-reminder>"  # 36 characters, shorter than its marker
    case = [{"type": "text", "text": short * 3}, {"type": "text", "text": short}]
    (out,) = node_dedupe([case])
    assert out == case
    edge = "<system-reminder>" + "x" * (len(marker("system-reminder")) - 34) + "</system-reminder>"
    assert len(edge) == len(marker("system-reminder")) + 1
    (out,) = node_dedupe([[{"type": "text", "text": edge + edge}]])
    assert out[0]["text"] == edge + marker("system-reminder")  # one byte shorter: replaced


def test_many_copies_collapse_to_one_copy_and_markers(node_dedupe):
    """Output size is one copy plus one marker per repeat (timing is measured in bench/)."""
    span = "<ultrawork-mode>" + "z" * 25_000 + "</ultrawork-mode>"
    for copies in (10, 100):
        (out,) = node_dedupe([[{"type": "text", "text": span}] * copies])
        assert sum(len(b["text"]) for b in out) == len(span) + (copies - 1) * len(marker("ultrawork-mode"))


@pytest.mark.parametrize("where", ["start", "middle", "end", "quarter"])
def test_many_distinct_same_length_spans_stay_linear(node_dedupe, where):
    """A plugin that stamps a counter into each 25 kB copy makes 1,000 distinct spans of one
    length. Keyed by whole text, V8 would compare them all pairwise (~1.6 s); the bound is generous
    for a busy machine and far below that. `quarter` differs outside the sampled slices: the
    worst case for the short key, where whole-text hashes take over."""
    size, copies = 25_000, 1_000
    at = {"start": 20, "middle": size // 2, "end": size - 60, "quarter": size // 4}[where]

    def span(n: int) -> str:
        body = "r" * (size - 40)
        stamp = f"{n:06d}"
        body = body[:at] + stamp + body[at + len(stamp) :]
        return f"<ultrawork-mode>{body}</ultrawork-mode>"

    blocks = [{"type": "text", "text": span(n % 900)} for n in range(copies)]  # 100 repeats
    (out,) = node_dedupe([blocks])
    assert out == oracle(blocks)  # (how fast: bench/payload_compare.py, against the hand hot-fix)


UPSTREAM_ONCE = """
const api = new Function(require("fs").readFileSync(process.argv[1], "utf8") + "\\nreturn { dedupe: "
    + "__senpiGuardDedupe, upstream: __senpiGuardUpstream, skip: __senpiGuardSkip, skipped: __senpiGuardSkipped };")();
const a = "<ultrawork-mode>" + "x".repeat(200) + "</ultrawork-mode>";
const ours = api.dedupe([{ type: "text", text: a }, { type: "text", text: a }]);
const skipBefore = api.skip(ours);  // upstream's result shape is not known yet: its code runs
const first = api.upstream({ blocks: [], collapsedDirectives: 0 }, ours);
const reused = first.blocks === ours;
const skipAfter = api.skip(ours);  // now the guard may return early...
const early = api.upstream(api.skipped, ours);  // ...with what the full run returned
const copy = ours.slice();
ours.push({ type: "text", text: a });  // changed after our dedupe: it must run again
const skipChanged = api.skip(ours) || api.skip(copy);
const second = api.upstream({ blocks: [], collapsedDirectives: 0 }, ours);
console.log(JSON.stringify({ reused, collapsed: first.collapsedDirectives, skipBefore, skipAfter,
    early: early.blocks === first.blocks && early.collapsedDirectives === first.collapsedDirectives,
    skipChanged, again: second.blocks !== ours, last: second.blocks[2].text,
    collapsedAgain: second.collapsedDirectives }));
"""


def test_upstreams_wrapper_reuses_our_output_unless_it_changed(tmp_path):
    payload = tmp_path / "payload.js"
    payload.write_text(PATCH.render_payload(CONFIG))
    out = subprocess.run(["node", "-e", UPSTREAM_ONCE, str(payload)], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {
        "reused": True,
        "collapsed": 1,
        "skipBefore": False,
        "skipAfter": True,
        "early": True,
        "skipChanged": False,
        "again": True,
        "last": marker("ultrawork-mode"),
        "collapsedAgain": 2,
    }
