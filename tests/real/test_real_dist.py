"""The dist layer on every dist-only real senpi build (shapes 1, 2, 3), installed with the real npm,
verified with node 20 (this machine's) and node 24 (senpi's own engine): status, apply, verify,
idempotence, what the patched module really does (collapse, variants kept, per-call prefix; through
upstream's keep-last where the build has it), and a byte-exact revert."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess

import pytest
from conftest import HANG_S, field, tree_digest
from realsenpi import DIST_ONLY, SHAPES, machine_node_bin, node24_bin, senpi_guard

pytestmark = pytest.mark.real

BRIDGE = {
    1: "dist/core/extensions/builtin/claude-agent-sdk/prompt-bridge.js",
    2: "dist/core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js",
    3: "dist/core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js",
}
UPSTREAM = "dist/core/extensions/builtin/claude-sdk-oauth/prompt-directive-dedupe.js"
SUPPORT = os.path.join(os.path.dirname(__file__), "support")


def directive(seed: str, lines: int = 300) -> str:
    body = "\n".join(f"{seed} {i}: keep going until it is verified" for i in range(lines))
    return f"<ultrawork-mode>\n{body}\n</ultrawork-mode>"


FIRST, VARIANT = directive("main"), directive("variant", 310)
REMINDER = "<system-reminder>\n" + "todo: 3 open items, keep the list current\n" * 20 + "</system-reminder>"


def growing_contexts() -> list[dict]:
    """A conversation that grows call by call: the directive on every user message, a variant in
    the middle, a reminder in every tool result."""
    messages, contexts = [], []
    for n in range(6):
        text = f"{VARIANT if n == 3 else FIRST}\n\nstep {n}"
        messages.append({"role": "user", "content": [{"type": "text", "text": text}]})
        contexts.append({"messages": list(messages)})
        messages += [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"on it {n}"},
                    {"type": "toolCall", "id": f"c{n}", "name": "bash", "arguments": {"command": "ls"}},
                ],
            },
            {
                "role": "toolResult",
                "toolCallId": f"c{n}",
                "toolName": "bash",
                "isError": False,
                "content": [{"type": "text", "text": f"out {n}\n{REMINDER}"}],
            },
            {"role": "assistant", "content": [{"type": "text", "text": f"done {n}"}]},
        ]
    return contexts


def serialise(pkg, shape: int, node: str) -> list[str]:
    job = {
        "bridge": str(pkg / BRIDGE[shape]),
        "upstream": str(pkg / UPSTREAM) if shape == 3 else None,
        "contexts": growing_contexts(),
    }
    out = subprocess.run(
        [node, os.path.join(SUPPORT, "behaviour.mjs")],
        input=json.dumps(job),
        text=True,
        capture_output=True,
        check=True,
        timeout=HANG_S,
    ).stdout
    return ["".join(json.loads(line)["texts"]) for line in out.splitlines()]


def common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def prefix_kept(calls: list[str]) -> bool:
    """From the call where the first copy is history on, everything up to the end of that first
    copy is sent again byte for byte by every later call (what a prompt cache reuses)."""
    for before, after in itertools.pairwise(calls[1:]):
        end = before.find(FIRST)
        if end == -1 or common_prefix(before, after) < end + len(FIRST):
            return False
    return True


NODES = {"node20": machine_node_bin, "node24": node24_bin}


@pytest.mark.parametrize("node_name", sorted(NODES))
@pytest.mark.parametrize("version", sorted(DIST_ONLY))
def test_dist_patch_on_a_real_build(dist_only, version, node_name, monkeypatch):
    node = str(NODES[node_name]() / "node")
    major = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout
    assert major.startswith("v20." if node_name == "node20" else "v24."), major
    monkeypatch.setenv("SENPI_GUARD_NODE", node)
    shape = SHAPES[version]
    pkg = dist_only(version)
    pristine = tree_digest(pkg)
    before = serialise(pkg, shape, node)

    status = senpi_guard("status", "--root", pkg, "--json")
    row = json.loads(status.stdout)["installs"][0]
    assert (status.returncode, row["state"], row["version"]) == (1, "unpatched", version)
    assert ("upstream" in row["targets"]) == (shape == 3) and row["node"]["path"] == node

    applied = senpi_guard("apply", "--root", pkg, "--json")
    result = json.loads(applied.stdout)["installs"][0]
    assert applied.returncode == 0, applied.stderr + applied.stdout
    assert result["state"] == "patched" and result["verification"]["ok"]
    assert result["verification"]["node"] == major.strip()
    assert tree_digest(pkg) != pristine

    verified = senpi_guard("verify", "--root", pkg, "--json")
    assert verified.returncode == 0 and json.loads(verified.stdout)["installs"][0]["verification"]["ok"]
    again = senpi_guard("apply", "--root", pkg, "--json")
    patched_digest = tree_digest(pkg)
    assert again.returncode == 0 and json.loads(again.stdout)["installs"][0]["changed"] == []
    assert tree_digest(pkg) == patched_digest

    after = serialise(pkg, shape, node)
    last = after[-1]
    assert last.count(FIRST) == 1 and last.count(VARIANT) == 1  # one copy each, the variant kept
    assert last.count(REMINDER) == 5  # (an event tag, not a default one: every copy is sent)
    assert "[ultrawork-mode: unchanged, see the earlier copy; it still applies]" in last
    if shape != 3:  # (on shape 3 senpi as installed keeps one directive of the two: it is smaller)
        assert len(last.encode()) < len(before[-1].encode()) * 0.6
    assert prefix_kept(after)
    if shape == 3:  # upstream's own keep-last drops the variant's forerunner and breaks the prefix
        assert not prefix_kept(before) and before[-1].count(FIRST) + before[-1].count(VARIANT) == 1
    else:
        assert before[-1].count(FIRST) == 5 and prefix_kept(before)

    reverted = senpi_guard("revert", "--root", pkg, "--json")
    assert reverted.returncode == 0, reverted.stdout
    assert tree_digest(pkg) == pristine


BYTES = r"\d{1,3}(,\d{3})+ bytes"  # (a raw byte count)


@pytest.mark.parametrize("version", ["2026.8.1", "2026.8.9"])
def test_status_apply_and_verify_say_what_the_patch_changes_on_this_senpi(dist_only, version):
    pkg = dist_only(version)
    keep_last = SHAPES[version] == 3
    saves = field(senpi_guard("status", "--root", pkg).stdout, "saves")
    # never verified: the figures the patch ships for this shape, with their basis and source
    if keep_last:  # (a dist-only build bundles no model registry: unpriced)
        assert re.search(r"^Claude: [\d,]+ -> [\d,]+ cache-write tokens a call \(-\d+%\), 71 calls ", saves), saves
        assert saves.endswith("unpriced, full re-sends; measured on 2026.8.22-2")
    else:
        assert saves.startswith("Claude: 1,790,855 -> 70,478 bytes (-96%) a full re-send other providers: ")
        assert saves.endswith("a sample session, one full re-send; measured on 2026.8.1")
    for said in (senpi_guard("apply", "-v", "--root", pkg), senpi_guard("verify", "-v", "--root", pkg)):
        assert said.returncode == 0, said.stdout + said.stderr
        line = field(said.stdout, "changes")
        assert not re.search(BYTES, field(said.stdout, "detail"))  # a byte count is said only with its why
        if keep_last:  # cache writes lead; the larger re-send comes last, with why it is larger
            assert line.index("cache-write tokens") < re.search(BYTES, line).start()
            assert "an estimate on a sample session of each shape" in line
            assert "upstream's keep-last rewrites every earlier copy" in line and "because every distinct" in line
            assert 'upstream\'s keep-last is cheaper for this shape: set upstream_dedupe = "defer"' in line
            assert "unpriced: no model registry" in line  # (a dist-only build bundles no pi-ai)
        else:
            assert re.search(r"incident-70: 1,790,855 -> 70,478 bytes", line)
            assert "as installed every copy is re-sent" in line and "tokens" not in line
    after = field(senpi_guard("status", "-v", "--root", pkg).stdout, "changes")
    assert after == f"{line} (by your last verify)"  # recorded, not replayed
    saves = field(senpi_guard("status", "--root", pkg).stdout, "saves")  # (without -v: the figures alone)
    assert saves.endswith("; by your last verify") and "Why" not in saves and "re-sent on each" not in saves
    if keep_last:
        assert re.search(r"^Claude: [\d,]+ -> [\d,]+ cache-write tokens a call \(-\d+%\), 71 calls ", saves), saves
    else:
        assert saves.startswith("Claude: 1,790,855 -> 70,478 bytes (-96%) a full re-send")


def test_verify_on_the_full_package_prices_per_call_at_its_registry(unpacked):
    said = senpi_guard("verify", "--root", unpacked["2026.8.22-2"], "--json")  # (read-only: nothing installed)
    install = next(i for i in json.loads(said.stdout)["installs"] if i["patch"] == "directive-dedupe")
    changes = install["changes"]
    assert changes["prices"].endswith("pi-ai/dist/providers/data/anthropic.json")
    long, short = changes["per_call"]["incident-70"], changes["per_call"]["incident-3"]
    assert long["patched"]["usd"] < long["installed"]["usd"] / 3  # the 70-copy session: cheaper patched
    assert short["patched"]["usd"] > short["installed"]["usd"]  # the 4-call one: keep-last is cheaper
    assert re.search(
        r"incident-70 \(71 calls\): [\d,]+ -> [\d,]+ cache-write tokens, "
        r"[\d,]+ -> [\d,]+ prompt tokens, \$[\d.]+ -> \$[\d.]+",
        changes["text"],
    )
    assert "claude-opus-4-5 at the list price in senpi's model registry" in changes["text"]
