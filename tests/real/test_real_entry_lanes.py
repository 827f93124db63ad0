"""The extension's per-call entry (`senpi-guard.sent`) changes no lane of senpi's Claude provider, on
the real senpi 2026.8.22-2 with the stand-in `claude` (the one mock: Claude Code cannot run here).
The same session (bootstrap, delta, restarts that resume, a compaction of Claude Code's own session,
resume off) runs with both layers, with the entry on and with it off: every call goes out on the
same lane with the same bytes, restarts still resume. The same entry appended on the reply instead
(message_end) is measured too: senpi's restart binding then refuses it, and a restart re-sends all."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import write_user_config
from realsenpi import RealSenpi, read_jsonl, senpi_guard
from test_real_claude import COMPACT, MODEL, STEPS, received

pytestmark = [pytest.mark.real, pytest.mark.slow]

ENTRY = "senpi-guard.sent"
OURS = "senpi-guard-directive-dedupe.js"


def run(full_senpi, root: Path, extension: Path | None = None) -> RealSenpi:
    user = RealSenpi(full_senpi, root, Path(os.environ["SENPI_CODING_AGENT_DIR"]), root.parent / "work")
    plugins = ("directive_prepend.js", *((str(extension),) if extension else ()))
    for env, prompts in STEPS:
        user.extra_env = {"STANDIN_CLAUDE_COMPACT": COMPACT, **env}
        user.prompt(*prompts, model=MODEL, plugins=plugins)
    return user


def ours(user: RealSenpi) -> list[dict]:
    return [e for e in read_jsonl(user.session_file()) if e.get("customType") == ENTRY]


def lanes(user: RealSenpi) -> list[str]:
    return [f"{c['kind']}:{c['reason']}" for c in user.continuity()]


def test_the_entry_changes_no_lane_and_a_restart_still_resumes(full_senpi, isolated_dirs, monkeypatch, tmp_path):
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    pkg, agent = full_senpi.package_dir, Path(os.environ["SENPI_CODING_AGENT_DIR"])
    runs = {}
    try:
        for name, setting in (("on", ""), ("off", '\n[patches.directive-dedupe]\nrecord_calls = "off"\n')):
            write_user_config(isolated_dirs, 'layers = ["dist", "extension"]\n' + setting)
            result = senpi_guard("apply", "--root", pkg, "--json")
            assert result.returncode == 0, result.stdout + result.stderr
            if name == "on":  # the same file, its entry appended on the reply instead (loaded with -e)
                text = (agent / "extensions" / OURS).read_text("utf-8")
                moved = tmp_path / "on-reply.js"
                handler = "            __senpiGuardRecord(pi, ctx, __senpiGuardLast);\n"
                assert text.count(handler) == 1
                moved.write_text(
                    text.replace(handler, "").replace(
                        '    pi.on("context", (event, ctx) => {',
                        '    pi.on("message_end", (event) => { if (event.message.role === "assistant") '
                        "pi.appendEntry(__senpiGuardEntryType, { v: 1, patch: __senpiGuardPatch.version, "
                        'settings: "", dist: null, messages: 0, in: 0, out: 0 }); });\n'
                        '    pi.on("context", (event, ctx) => {',
                        1,
                    ),
                    "utf-8",
                )
            runs[name] = run(full_senpi, tmp_path / name)
        (agent / "extensions" / OURS).unlink()  # (the dist layer stays; the moved copy alone)
        runs["on-reply"] = run(full_senpi, tmp_path / "on-reply", moved)
    finally:
        assert senpi_guard("revert", "--root", pkg).returncode == 0
    kinds = {name: lanes(user) for name, user in runs.items()}
    sent = {name: [(c["bytes"], c["texts"]) for c in received(user)] for name, user in runs.items()}
    print(json.dumps(kinds, indent=1))

    assert len(ours(runs["on"])) == len(kinds["on"]) and not ours(runs["off"])
    # every lane is exercised, and a restart resumes: a later process's first call is a delta or a fork
    assert {k.split(":")[0] for k in kinds["on"]} >= {"bootstrap", "delta", "fork", "flatten", "disabled"}
    assert kinds["on"] == kinds["off"] and sent["on"] == sent["off"]
    assert "flatten:sent_stream_diverged" not in kinds["on"]
    # on the reply, the entry sits where senpi's binding check admits only its own entries: restarts
    # that resumed re-send the whole history
    assert kinds["on-reply"] != kinds["on"]
    lost = [k for k, o in zip(kinds["on-reply"], kinds["on"], strict=True) if k != o and k.startswith("flatten")]
    assert len(lost) >= 3 and set(lost) == {"flatten:registry_miss"}, kinds["on-reply"]
