"""The budget on the real senpi 2026.8.22-2 measures what the call carries, as the provider counts it.

A recording provider that reports the input it received the way a provider without a known
tokenizer counts it (UTF-8 bytes of the system prompt and the messages, 4 a token), a 100,000-token
context window set in the agent dir's models.json as a user sets it, and a plugin that prepends the
~28 kB directive to every prompt. senpi's own `ctx.getContextUsage()` inside a `context` handler
counts the new prompt's directive in full (it is taken before the handlers run), so it is about 7
points above what is sent: a budget on it warned at 25% on calls the provider counted at 22%. Each
prompt is one print-mode process, so each call past warn_at warns on its own stderr."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
from conftest import HANG_S
from realsenpi import SUPPORT, RealSenpi, read_jsonl

from senpi_guard.core.patch import definition
from senpi_guard.io.config import Config

pytestmark = pytest.mark.real

PATCH = definition.load("directive-dedupe")
WINDOW = 100_000
AT = 0.25
FILLER = 10_000  # bytes of plain text in each prompt besides the directive (the context grows by it)
PROMPTS = [f"ulw step {i}\n" + f"note {i}: the build output of step {i} is fine.\n" * (FILLER // 44) for i in range(7)]
# Logs what senpi itself estimates for the call inside a `context` handler (before the rewrite).
PROBE = """import { appendFileSync } from "node:fs";
export default function probe(pi) {
    pi.on("context", (_event, ctx) => { appendFileSync(process.env.SG_PROBE_LOG,
        JSON.stringify({ usage: ctx.getContextUsage() ?? null }) + "\\n"); });
}
"""


def session(full_senpi, tmp_path: Path, name: str, **budget: float) -> tuple[RealSenpi, list[str], list[dict]]:
    """One session of PROMPTS, one print-mode process each, until a call is stopped; each process's
    senpi-guard lines on stderr, and the provider's log."""
    agent = tmp_path / name / "agent"
    agent.mkdir(parents=True)
    overrides = {"rec": {"modelOverrides": {"rec-1": {"contextWindow": WINDOW}}}}
    (agent / "models.json").write_text(json.dumps({"providers": overrides}), "utf-8")
    extension = tmp_path / f"{name}.js"
    extension.write_text(PATCH.render_extension(Config().with_patch("directive-dedupe", **budget)), "utf-8")
    probe = tmp_path / "probe.js"
    probe.write_text(PROBE, "utf-8")
    user = RealSenpi(
        full_senpi,
        tmp_path / name,
        agent,
        tmp_path / "work",
        extra_env={"SENPI_GUARD_REC_COUNT": "1", "SG_PROBE_LOG": str(tmp_path / name / "probe.jsonl")},
    )
    user.home.mkdir(parents=True, exist_ok=True)
    user.cwd.mkdir(parents=True, exist_ok=True)
    told = []
    for index, text in enumerate(PROMPTS):
        argv = [str(full_senpi.senpi), "-p", "--model", "rec/rec-1", "--session-dir", str(user.sessions)]
        argv += ["--continue"] if index else []
        for plugin in (SUPPORT / "recording_provider.js", SUPPORT / "directive_prepend.js", extension, probe):
            argv += ["-e", str(plugin)]
        done = subprocess.run(
            [*argv, text], cwd=user.cwd, env=user.env(), capture_output=True, text=True, timeout=HANG_S, check=False
        )
        lines = [x for x in done.stderr.splitlines() if x.startswith("senpi-guard:")]
        told.append(lines[0] if lines else "")
        if "stopped this call" in told[-1]:
            assert done.returncode != 0
            break
        assert done.returncode == 0, done.stderr[-800:]
    return user, told, user.recorded_calls()


def share_text(tokens: int) -> str:
    return f"≈{tokens:,} tokens, {tokens * 100 // WINDOW}% of rec-1's {WINDOW:,}-token context window"


def test_budget_counts_what_the_provider_received(full_senpi, tmp_path):
    user, told, calls = session(full_senpi, tmp_path, "warn", **{"budget.warn_at": AT})
    assert len(calls) == len(PROMPTS)
    # the provider counted what it received: the system prompt and every text, 4 bytes a token
    for call in calls:
        sent = call["system"] + sum(len(t.encode()) for m in call["messages"] for t in m["texts"])
        assert call["input"] == math.ceil(sent / 4) and call["system"] > 0
    # the case of the bug is here: calls senpi's own figure puts past warn_at, the provider below it
    senpi = [p["usage"]["tokens"] for p in read_jsonl(user.root / "probe.jsonl")][: len(calls)]
    early = [i for i, c in enumerate(calls) if c["input"] < (AT - 0.01) * WINDOW and senpi[i] >= AT * WINDOW]
    assert early, (senpi, [c["input"] for c in calls])
    for index, call in enumerate(calls):
        if call["input"] < (AT - 0.01) * WINDOW:
            assert told[index] == "", (index, call["input"], told[index])  # never more than a point early
        elif call["input"] >= AT * WINDOW:  # and each warning gives the figures that were sent
            assert told[index] == (
                f"senpi-guard: this call carries {share_text(call['input'])} (budget.warn_at = {AT}). "
                "Run /compact to shrink the context before it fills up (told once per session)."
            )
    assert any(told)
    figures = {"told": told, "senpi": senpi, "sent": [c["input"] for c in calls]}
    (tmp_path / "budget.txt").write_text(json.dumps(figures), "utf-8")

    # block_at: the calls below it reach the provider; the first past it is stopped, with its own figures
    _, stopped, received = session(full_senpi, tmp_path, "block", **{"budget.block_at": AT})
    first = next(i for i, c in enumerate(calls) if c["input"] >= AT * WINDOW)
    assert len(received) == first and [c["input"] for c in received] == [c["input"] for c in calls[:first]]
    assert stopped[:first] == [""] * first
    assert stopped[first] == (
        f"senpi-guard: stopped this call before it was sent: it would carry {share_text(calls[first]['input'])} "
        f"(budget.block_at = {AT}). Run /compact to shrink the context, then send the prompt again."
    )
