"""The footer status on claude-sdk-oauth's delta lane, through the real senpi 2026.8.22-2 in RPC mode
and the stand-in `claude` (the one mock: Claude Code cannot run here). After the bootstrap each call
sends only its new messages; the status counts, per call, only what those messages did not carry:
exactly what the stand-in received without the extension minus what it received with it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import kb
from realsenpi import SUPPORT, RealSenpi
from test_real_inside import PATCH, PROMPTS, Rpc

from senpi_guard.io.config import Config

pytestmark = pytest.mark.real

MODEL = "claude-sdk-oauth/claude-sonnet-4-5"
RULES = (f"rule {i:03d}: work until the task is verified end to end; report evidence." for i in range(400))
DIRECTIVE = "<ultrawork-mode>\n" + "\n".join(RULES) + "\n</ultrawork-mode>"


def sent(user: RealSenpi) -> list[dict]:
    return [e for e in user.claude_log() if e["kind"] == "user"]


def session(full_senpi, tmp_path: Path, name: str, extensions: list[Path]) -> tuple[RealSenpi, Rpc]:
    user = RealSenpi(full_senpi, tmp_path / name, Path(os.environ["SENPI_CODING_AGENT_DIR"]), tmp_path / "work")
    rpc = Rpc(user, [SUPPORT / "directive_prepend.js", *extensions], model=MODEL)
    for text in PROMPTS:
        rpc.prompt(text)
    rpc.close()
    return user, rpc


def test_the_status_counts_only_what_the_delta_lane_sent(full_senpi, tmp_path):
    extension = tmp_path / "ext.js"
    extension.write_text(PATCH.render_extension(Config()), "utf-8")
    plain, _ = session(full_senpi, tmp_path, "plain", [])
    user, rpc = session(full_senpi, tmp_path, "ext", [extension])
    lanes = [record and record["kind"] for record in user.continuity()]
    assert lanes == ["bootstrap"] + ["delta"] * (len(PROMPTS) - 1)
    without, received = sent(plain), sent(user)
    assert len(without) == len(received) == len(PROMPTS)
    expected, saved, repeats = ["senpi-guard: on, no repeats yet"], 0, 0
    for before, after in zip(without, received, strict=True):
        saved += before["bytes"] - after["bytes"]
        repeats += sum(t.count(DIRECTIVE) for t in before["texts"]) - sum(t.count(DIRECTIVE) for t in after["texts"])
        expected.append(
            f"senpi-guard: {repeats} repeat{'s' * (repeats > 1)}, {kb(saved)} not re-sent"
            if repeats
            else "senpi-guard: on, no repeats yet"
        )
    # the delta lane sends each 'ulw' prompt's own copy once: one repeat per later 'ulw' prompt, not
    # the whole history's copies as a full re-send would carry
    assert repeats == 3 and 3 * 28_000 < saved < 3 * 29_000
    assert rpc.statuses() == expected
    print(
        f"\ndelta lane: {expected[-1]!r}; sent without the extension {sum(c['bytes'] for c in without):,} bytes, "
        f"with it {sum(c['bytes'] for c in received):,}"
    )
