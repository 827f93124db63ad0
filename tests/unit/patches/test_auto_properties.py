"""tags = "auto", both layers, against an independent oracle: every `<name …>…</name>` span of a
known tag, or of any other name from `min_bytes` UTF-8 bytes on, keeps its first copy; later
byte-identical copies become the marker. Same fail-closed rules (a name unclosed, nested or stray
in a text is left alone there; spans inside another candidate are not ours; crossing candidates
leave the text alone), same prefix stability."""

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
MIN_BYTES = 60  # small, so that generated spans fall on both sides of it
CONFIG = Config().with_patch("directive-dedupe", tags="auto", min_bytes=MIN_BYTES)
KNOWN = set(PATCH.job_settings(CONFIG)["tags"])
JS = Path(__file__).resolve().parents[2] / "js"

# The token grammar, written as regular expressions (the payload reads it by hand).
TOKEN = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9_.:-]{0,39})(>|[ \t\r\n][^<>]{0,999}>)")


def tokens(text: str) -> list[tuple[int, int, str, bool]]:
    out = []
    for m in TOKEN.finditer(text):
        closing, name, rest = m.group(1) == "/", m.group(2), m.group(3)
        if (closing and rest != ">") or (not closing and rest != ">" and rest.endswith("/>")):
            continue
        out.append((m.start(), m.end(), name, closing))
    return out


def candidates(text: str) -> list[tuple[int, int, str]]:
    by_name: dict[str, list[tuple[int, int, bool]]] = {}
    for start, end, name, closing in tokens(text):
        by_name.setdefault(name, []).append((start, end, closing))
    spans = []
    for name, toks in by_name.items():
        good = len(toks) % 2 == 0 and all(not toks[i][2] and toks[i + 1][2] for i in range(0, len(toks), 2))
        if good:
            spans += [(toks[i][0], toks[i + 1][1], name) for i in range(0, len(toks), 2)]
    return sorted(s for s in spans if s[2] in KNOWN or len(text[s[0] : s[1]].encode()) >= MIN_BYTES)


def oracle_text(text: str, kept: dict[str, set[str]]) -> str:
    outer, reach = [], -1
    for start, end, name in candidates(text):
        if start >= reach:
            outer.append((start, end, name))
            reach = end
        elif end > reach:
            return text  # crossing candidates: the text is left alone
    pieces, last = [], 0
    for start, end, name in outer:
        body, marker = text[start:end], PATCH.marker(name)
        if body in kept.setdefault(name, set()):
            if len(marker) < len(body):
                pieces += [text[last:start], marker]
                last = end
        else:
            kept[name].add(body)
    return "".join(pieces) + text[last:] if last else text


def oracle_blocks(blocks: list[dict]) -> list[dict]:
    kept: dict[str, set[str]] = {}
    out = []
    for block in blocks:
        text = oracle_text(block["text"], kept) if block.get("type") == "text" else None
        out.append({**block, "text": text} if text is not None and text != block["text"] else block)
    return out


def oracle_messages(messages: list[dict]) -> list[dict]:
    kept: dict[str, set[str]] = {}
    out = []
    for message in messages:
        content = message.get("content")
        if message.get("role") in ("user", "custom", "toolResult"):
            if isinstance(content, str):
                message = {**message, "content": oracle_text(content, kept)}
            elif isinstance(content, list):
                message = {
                    **message,
                    "content": [
                        {**p, "text": oracle_text(p["text"], kept)} if p.get("type") == "text" else p for p in content
                    ],
                }
        out.append(message)
    return out


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    folder = tmp_path_factory.mktemp("auto")
    (folder / "payload.js").write_text(PATCH.render_payload(CONFIG))
    (folder / "extension.js").write_text(PATCH.render_extension(CONFIG))
    procs = {
        name: subprocess.Popen(
            ["node", str(JS / f"{name}.mjs"), str(folder / f"{name}.js")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("payload", "extension")
    }

    def run(layer: str, cases: list) -> list:
        proc = procs[layer]
        proc.stdin.write(json.dumps({"cases": cases}) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert "error" not in reply, reply.get("error")
        return reply["outputs"]

    yield run
    for proc in procs.values():
        proc.stdin.close()
        proc.wait(timeout=HANG_S)


names = st.sampled_from(["note", "ultrawork-mode", "omo-senpi-ulw-execute", "b", "x.y:z", "Tool_1", "N" * 40, "N" * 41])
attrs = st.sampled_from(
    [
        "",
        ' id="1"',
        " kind='a b'",
        "\n data=x",
        " /",
        ' a="<"',
        "\t",
        " " + "a" * 998,
        " " + "a" * 999,
        " " + "a" * 1000,
    ]
)
# UTF-8 sizes around MIN_BYTES once wrapped: 45 + 13 = 58 bytes with <note>, 65 with id="1"
bodies = st.sampled_from(["a", "short body", "w" * 45, "w" * 46, "v" * 70, "ü" * 25, "x" * 200, "<b>in</b>"])
span = st.builds(lambda n, a, b: f"<{n}{a}>{b}</{n}>", names, attrs, bodies)
noise = st.sampled_from(
    [
        "hi ",
        "\n",
        "<note>",
        "</note>",
        "<b>",
        "</b>",
        "<",
        "a < b",
        "List<T>",
        "<br/>",
        "<img src=x />",
        "</ x>",
        "</note x>",
        "</b >",
        "<note >",
        "<" + "n" * 41 + ">",
        "<" + "n" * 40 + ">",
        "<>",
    ]
)


@st.composite
def texts(draw, pool):
    """Texts made of a few spans, drawn again and again (repeats are what the dedupe acts on)."""
    pieces = draw(
        st.lists(st.one_of(st.sampled_from(pool), st.sampled_from(pool), noise, st.text(max_size=3)), max_size=8)
    )
    return "".join(pieces)


@st.composite
def block_lists(draw):
    pool = draw(st.lists(span, min_size=1, max_size=4))
    return draw(
        st.lists(
            st.lists(st.builds(lambda t: {"type": "text", "text": t}, texts(pool)), max_size=6), min_size=1, max_size=12
        )
    )


@st.composite
def message_lists(draw):
    pool = draw(st.lists(span, min_size=1, max_size=4))
    text = texts(pool)
    one = st.one_of(
        st.builds(lambda t: {"role": "user", "content": t}, text),
        st.builds(
            lambda t: {
                "role": "toolResult",
                "toolCallId": "c",
                "toolName": "read",
                "content": [{"type": "text", "text": t}],
            },
            text,
        ),
        st.builds(lambda t: {"role": "assistant", "content": [{"type": "text", "text": t}]}, text),
    )
    return draw(st.lists(st.lists(one, max_size=8), min_size=1, max_size=8))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=block_lists())
def test_the_dist_payload_matches_the_oracle_and_is_prefix_stable(node, batch):
    prefixes = [b[:k] for b in batch for k in range(len(b) + 1)]
    outputs = node("payload", batch + prefixes)
    full, rest = outputs[: len(batch)], iter(outputs[len(batch) :])
    for case, out in zip(batch, full, strict=True):
        assert out == oracle_blocks(case)
        for k in range(len(case) + 1):
            assert next(rest) == out[:k]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=message_lists())
def test_the_extension_matches_the_oracle_and_is_prefix_stable(node, batch):
    for case, result in zip(batch, node("extension", batch), strict=True):
        assert result["whole"] == oracle_messages(case)
        assert result["again"] == result["whole"]
        for k, prefix in enumerate(result["prefixes"]):
            assert prefix == result["whole"][: k + 1]


def boundary_cases() -> list[list[dict]]:
    def spans(name: str, attr: str, body: str, copies: int = 2) -> list[dict]:
        return [{"type": "text", "text": f"<{name}{attr}>{body}</{name}>"}] * copies

    w = "w" * 47  # <note> + 47 + </note> = 60 bytes = MIN_BYTES
    return [
        spans("note", "", w),
        spans("note", "", w[1:]),  # 60 bytes: collapsed; 59: not
        # 60 / 59 bytes in 58 UTF-16 units (a marker is 57: still worth it)
        spans("note", "", "ü" * 2 + "w" * 43),
        spans("note", "", "ü" + "w" * 44),
        spans("N" * 40, "", "x" * 100),
        spans("N" * 41, "", "x" * 100),  # the longest name; one more
        spans("note", " " + "a" * 999, "x"),
        spans("note", " " + "a" * 1000, "x"),  # longest attributes
        spans("note", " x/", "y" * 80),
        spans("note", "\r", "y" * 80),
        [{"type": "text", "text": "<note>" + "a" * 60 + "<b>" + "b" * 60 + "</note>" + "c" * 60 + "</b>"}] * 2,
        [{"type": "text", "text": "<note>" + "a" * 60 + "</note x>" + "</note>"}] * 2,
    ]


def test_the_grammar_and_size_boundaries_match_the_oracle(node):
    cases = boundary_cases()
    outputs = node("payload", cases)
    assert outputs == [oracle_blocks(case) for case in cases]
    collapsed = [out[1]["text"] != case[1]["text"] for case, out in zip(cases, outputs, strict=True)]
    assert collapsed == [True, False, True, False, True, False, True, False, False, True, False, True]


def test_attributes_sizes_and_known_tags(node):
    big = '<note kind="x">' + "n" * 600 + "</note>"  # 622 bytes, of an unknown name
    small = "<tip>" + "t" * 100 + "</tip>"  # 111 bytes: below 512, stays
    known = "<omo-senpi-ulw-execute>" + "e" * 100 + "</omo-senpi-ulw-execute>"  # known: any size
    reminder = "<omo-ultrawork-reminder>" + "r" * 120 + "</omo-ultrawork-reminder>"  # short: stays
    case = [{"type": "text", "text": big + small + known + reminder}] * 3
    config = Config().with_patch("directive-dedupe", tags="auto")  # min_bytes = 512
    payload = PATCH.render_payload(config)
    script = payload + "\nconsole.log(JSON.stringify(__senpiGuardDedupe(" + json.dumps(case) + ")));"
    out = json.loads(subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout)
    later = PATCH.marker("note") + small + PATCH.marker("omo-senpi-ulw-execute") + reminder
    assert [b["text"] for b in out] == [case[0]["text"], later, later]


def test_a_list_of_tags_renders_as_before():
    """min_bytes and the known list reach the rendered code only with "auto": a list config's code
    (and so every patched install and live prefix) is what it was."""
    slot = PATCH.rendered(Config().with_patch("directive-dedupe", min_bytes=100))
    assert set(slot) == {"tags"} and isinstance(slot["tags"], list)
    assert PATCH.config_digest(Config()) == PATCH.config_digest(Config().with_patch("directive-dedupe", min_bytes=100))
    assert PATCH.config_digest(Config()) != PATCH.config_digest(CONFIG)


def test_hostile_texts_stay_linear():
    """Found by a hostile review, both once quadratic: 40,000 nested distinct names under a large
    min_bytes (each span's UTF-8 size was counted unit by unit: 92 s), and 10,000 marker tails after
    one "[" through upstream's wrapper (each looked back to that "[": 17 s). The bounds are generous
    for a busy machine and far below those; a list config takes the second path too."""
    config = Config().with_patch("directive-dedupe", tags="auto", min_bytes=3_000_000)
    script = (
        PATCH.render_payload(config)
        + r"""
        let open = "", close = "";
        for (let i = 0; i < 40000; i++) { open += `<n${i}>` + "x".repeat(30); close = `</n${i}>` + close; }
        let t = Date.now();
        __senpiGuardDedupe([{ type: "text", text: open + close }]);
        const nested = Date.now() - t;
        const text = "[" + "note: unchanged, see the earlier copy; it still applies]\n".repeat(10000);
        t = Date.now();
        const found = __senpiGuardMarkersIn([{ type: "text", text }]);
        console.log(JSON.stringify([nested, Date.now() - t, found.length]));
    """
    )
    out = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True, timeout=HANG_S)
    nested_ms, markers_ms, found = json.loads(out.stdout)
    assert nested_ms < 15_000 and markers_ms < 3_000
    assert found == 1  # (only the one right after "[" is a marker of a valid name)
