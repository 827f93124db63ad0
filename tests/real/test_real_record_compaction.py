"""The extension's per-call record (`senpi-guard.sent`) never changes what senpi does, on the real
senpi 2026.8.22-2 driven through its session API as an embedder drives it (tests/real/support/
session_api.mjs: an `AgentSession` over a new session file, so no model_change entry comes first,
as `senpi -p` and createAgentSession write one). A first prompt overflowing a small window
(tests/real/support/overflow_provider.js) is compacted and retried, and a later prompt is sent
small, the same with the extension installed as without it. (Measured before: the record was
appended before senpi stored the prompt, as the session's first entry; senpi's compaction then
found nothing to compact, and every later prompt reached the provider with the overflowing one.)"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import write_user_config
from realsenpi import SUPPORT, read_jsonl, senpi_guard

pytestmark = [pytest.mark.real, pytest.mark.slow]

OURS = "senpi-guard-directive-dedupe.js"
ENTRY = "senpi-guard.sent"
WINDOW = 8000  # tokens: senpi's system prompt is ~4,200 of them
# senpi compacts at window - reserveTokens, keeping keepRecentTokens of the latest messages
SETTINGS = {"compaction": {"enabled": True, "reserveTokens": 1000, "keepRecentTokens": 1000}}
PROMPTS = ("word " * 5000, "second prompt", "third prompt")


def drive(full_senpi, root: Path, extension: Path | None) -> tuple[dict, list[dict]]:
    """One session of PROMPTS with an agent dir of its own (the extension in it or not): what the
    driver printed and what the provider received, call by call."""
    agent, cwd = root / "agent", root / "work"
    cwd.mkdir(parents=True)
    (agent / "extensions").mkdir(parents=True)
    (agent / "settings.json").write_text(json.dumps(SETTINGS))
    if extension is not None:
        shutil.copyfile(extension, agent / "extensions" / OURS)
    env = {key: os.environ[key] for key in ("LANG", "TMPDIR") if key in os.environ}
    env.update(
        HOME=str(root / "home"),
        PATH=os.pathsep.join([str(full_senpi.node_bin), "/usr/bin", "/bin"]),
        PI_OFFLINE="1",
        PI_SKIP_VERSION_CHECK="1",
        PI_RULES_DISABLED="1",  # (senpi's rules extension would write the session's first entry)
        SENPI_CODING_AGENT_DIR=str(agent),
        SENPI_GUARD_OVF_LOG=str(root / "calls.jsonl"),
        SENPI_GUARD_OVF_WINDOW=str(WINDOW),
    )
    argv = [str(full_senpi.node_bin / "node"), str(SUPPORT / "session_api.mjs"), str(full_senpi.package_dir)]
    argv += [str(agent), str(cwd), str(SUPPORT / "overflow_provider.js"), *PROMPTS]
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["model"] == "ovf/ovf-1", report
    calls = read_jsonl(root / "calls.jsonl")
    for call in calls:  # (the one difference the two runs' folders make)
        call["system"] = call["system"].replace(str(cwd), "<cwd>")
    return report, calls


def test_a_first_prompt_over_the_window_is_compacted_and_retried_as_without_the_extension(
    full_senpi, isolated_dirs, monkeypatch, tmp_path
):
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    pkg = full_senpi.package_dir
    write_user_config(isolated_dirs, 'layers = ["dist", "extension"]\n')
    try:
        result = senpi_guard("apply", "--root", pkg, "--json")
        assert result.returncode == 0, result.stdout + result.stderr
        installed = Path(os.environ["SENPI_CODING_AGENT_DIR"]) / "extensions" / OURS
        runs = {name: drive(full_senpi, tmp_path / name, ext) for name, ext in (("none", None), ("ours", installed))}
    finally:
        assert senpi_guard("revert", "--root", pkg).returncode == 0
    (without, sent_without), (with_ours, sent_with) = runs["none"], runs["ours"]
    print(json.dumps({name: report["events"] for name, (report, _) in runs.items()}, indent=1))

    # without the extension senpi compacts the overflowing first prompt and retries it; the later
    # prompts are sent small
    compacted = {"type": "compaction_end", "reason": "overflow", "error": None}
    assert compacted in without["events"] and any(e["type"] == "compaction" for e in without["entries"])
    assert [c["kind"] for c in sent_without][-2:] == ["call", "call"]
    # with it: the same events, the same calls, each byte the same
    assert with_ours["events"] == without["events"]
    assert sent_with == sent_without
    # and each call a reply answers is recorded, after the messages the call was made with
    kinds = [e["customType"] or e["role"] or e["type"] for e in with_ours["entries"]]
    assert kinds[:3] == ["user", ENTRY, "assistant"], kinds
    answered = [k for k, n in itertools.pairwise(kinds) if k == ENTRY and n == "assistant"]
    assert len(answered) == sum(1 for e in with_ours["events"] if e["type"] == "reply")
