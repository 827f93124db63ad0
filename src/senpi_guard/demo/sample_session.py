"""Write senpi-shaped session files (JSONL) for the demo, the tests and the benchmarks.

A session is a chain of entries; with `lanes`, each assistant entry carries the continuity record
senpi writes for its call (bootstrap, delta, fork, flatten, disabled; from 2026.8.3) and, with
`payload_from`, the `payloadBytes` of each resident flatten/bootstrap as a sample senpi package's
own functions serialise it (from 2026.8.4-2). The sample senpi's JavaScript does that counting, not
senpi-guard's audit code.
"""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

from senpi_guard.errors import FatalError

STAMP = "2026-11-20T10:00:00.000Z"
CONTINUITY = "claude_sdk_oauth_session_continuity"
BOUNDARY = "claude_sdk_oauth_compact_boundary"


class _Writer:
    """Writes entries, each chained to the previous one by parentId, and the continuity record of
    each call (how many sent messages it added since the last one)."""

    def __init__(self, out, model: str, provider: str, lanes: bool) -> None:
        self.out = out
        self.model = model
        self.provider = provider
        self.lanes = lanes
        self.counter = iter(range(1, 10**9))
        self.parent: str | None = None
        self.unsent = 0
        self.next_call: tuple[str, str] | None = ("bootstrap", "first_call")
        self.boundary = False

    def raw(self, line: str) -> None:
        self.out.write(line)

    def emit(self, entry: dict, chain: bool = True, sent: bool = False) -> str:
        entry = {
            "type": entry["type"],
            "id": f"{next(self.counter):08x}",
            "parentId": self.parent,
            "timestamp": STAMP,
        } | entry
        self.out.write(json.dumps(entry, separators=(",", ":")) + "\n")
        if chain:
            self.parent = entry["id"]
        self.unsent += sent
        return entry["id"]

    def message(self, message: dict) -> str:
        sent = message["role"] in ("user", "toolResult") or (
            message["role"] == "bashExecution" and not message.get("excludeFromContext")
        )
        return self.emit({"type": "message", "message": message}, sent=sent)

    def _diagnostics(self) -> list[dict[str, Any]]:
        kind, reason = self.next_call or ("delta", "prefix_matched")
        self.next_call = None
        items = [{"type": "claude_sdk_oauth_resume_fallback", "timestamp": STAMP, "details": {}}]
        items.append(
            {
                "type": CONTINUITY,
                "timestamp": STAMP,
                "details": {"kind": kind, "reason": reason, "deltaMessages": self.unsent},
            }
        )
        if self.boundary:
            items.append(
                {
                    "type": BOUNDARY,
                    "timestamp": STAMP,
                    "details": {"boundary": {"trigger": "auto", "preTokens": 180_000}},
                }
            )
            self.boundary = False
        return items

    def assistant(self, content: list, usage: dict) -> str:
        message = {
            "role": "assistant",
            "provider": self.provider,
            "model": self.model,
            "content": content,
            "usage": usage,
        }
        if self.lanes:
            message["diagnostics"] = self._diagnostics()
        self.unsent = 0
        return self.message(message)

    def step(self, turn: int, user_text: str, tool_text: str, tool: str = "bash") -> list[str]:
        """One user message, a tool call, its result and the closing assistant message."""
        call = f"toolu_{turn:04d}"
        ids = [self.message({"role": "user", "content": [{"type": "text", "text": user_text}]})]
        ids.append(
            self.assistant(
                [
                    {"type": "text", "text": f"Running the tests for step {turn}."},
                    {"type": "toolCall", "id": call, "name": tool, "arguments": {"command": "pytest -q"}},
                ],
                {
                    "input": 900 + turn,
                    "output": 120,
                    "cacheRead": 6000 * turn,
                    "cacheWrite": 7000,
                    "totalTokens": 7000 + 6000 * turn,
                },
            )
        )
        ids.append(
            self.message(
                {
                    "role": "toolResult",
                    "toolCallId": call,
                    "toolName": tool,
                    "content": [{"type": "text", "text": tool_text}],
                    "isError": False,
                }
            )
        )
        ids.append(
            self.assistant(
                [{"type": "text", "text": f"Step {turn} is green."}],
                {
                    "input": 40,
                    "output": 30,
                    "cacheRead": 6000 * turn + 900,
                    "cacheWrite": 300,
                    "totalTokens": 6000 * turn + 1300,
                },
            )
        )
        return ids

    def other_entries(self, about: str) -> None:
        """A custom message, custom state, a label, branch summaries (one empty) and a user's
        shell commands (one `!!cmd`, sent to nobody)."""
        self.emit(
            {
                "type": "custom_message",
                "customType": "omo",
                "display": True,
                "content": "<omo-senpi-task>\nfinish the migration\n</omo-senpi-task>",
            },
            sent=True,
        )
        self.emit({"type": "custom", "customType": "ui-state", "data": {"collapsed": True}})
        self.emit({"type": "label", "targetId": about, "label": "checkpoint"})
        self.emit({"type": "branch_summary", "fromId": about, "summary": "Tried a rewrite; reverted."}, sent=True)
        self.emit({"type": "branch_summary", "fromId": about, "summary": ""})
        self.message(
            {
                "role": "bashExecution",
                "command": "git status --short",
                "output": " M app.py",
                "exitCode": 0,
                "cancelled": False,
                "truncated": False,
            }
        )
        self.message(
            {
                "role": "bashExecution",
                "command": "make lint",
                "output": "",
                "exitCode": 2,
                "cancelled": False,
                "truncated": True,
                "fullOutputPath": "/tmp/lint.log",
            }
        )
        self.message(
            {"role": "bashExecution", "command": "ls", "output": "a b", "exitCode": 0, "excludeFromContext": True}
        )

    def damage(self) -> None:
        """What a real file can hold: a broken line, an unknown entry, an orphan, a cut last line."""
        self.raw("{this line is not json}\n")
        self.emit({"type": "future_entry_kind"})
        self.emit(
            {
                "type": "message",
                "parentId": "no-such-parent",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "orphan"}]},
            }
        )
        self.raw('{"type":"message","id":"trunc')


# The calls of a recorded session that are not plain deltas: step -> (kind, reason)
SPECIAL_CALLS = {
    5: ("fork", "idle_ttl"),
    9: ("flatten", "account_changed"),
    11: ("disabled", "resume_mode_off"),
    18: ("flatten", "thinking_level_changed"),
}


def _compaction(writer: _Writer, turn: int, number: int, last: str | None, since: list[str]) -> str:
    """A compaction entry; every other one names the previous compaction as its first kept entry
    (senpi then keeps nothing from before it)."""
    kept = last if number % 2 == 0 else since[-4]
    entry = {
        "type": "compaction",
        "summary": f"Steps up to {turn} are done.",
        "firstKeptEntryId": kept,
        "tokensBefore": 150000,
    }
    compaction = writer.emit(entry, sent=True)
    writer.next_call = ("flatten", "compaction")
    return compaction


def write_sample_session(
    path: Path,
    turns: int = 30,
    directive_bytes: int = 25_000,
    compact_every: int = 0,
    model: str = "claude-opus-4-5",
    extras: bool = True,
    lanes: bool = False,
    provider: str = "claude-sdk-oauth",
    payload_from: Path | None = None,
    broken_lines: bool = True,
) -> Path:
    """A senpi-shaped session JSONL (version 3 header): an ultrawork directive re-injected into
    every user message, tool calls (one to a custom tool) and results, a variant now and then,
    optional compactions (each later one keeping from the one before it, as senpi allows), and
    (with extras) the entry types a real file can hold and, unless `broken_lines` is False, the
    damage it can hold (lines audit skips and warns about)."""
    from senpi_guard.core.patch.fixture_formats.context_template import directive_text

    path.parent.mkdir(parents=True, exist_ok=True)
    directive = directive_text("ultrawork-mode", directive_bytes, "session")
    variant = directive_text("ultrawork-mode", directive_bytes, "session-variant")
    reminder = directive_text("system-reminder", 600, "todo")
    with path.open("w", encoding="utf-8") as out:
        writer = _Writer(out, model, provider, lanes)
        writer.raw(
            json.dumps(
                {"type": "session", "version": 3, "id": "s-0001", "timestamp": STAMP, "cwd": "/work/app"},
                separators=(",", ":"),
            )
            + "\n"
        )
        writer.emit({"type": "model_change", "provider": provider, "modelId": model})
        since_compaction: list[str] = []
        compactions = 0
        last_compaction: str | None = None
        for turn in range(turns):
            writer.next_call = SPECIAL_CALLS.get(turn, writer.next_call)
            text = variant if turn and turn % 7 == 0 else directive
            tool = "web_search" if turn % 4 == 0 else "bash"
            ids = writer.step(turn, f"{text}\n\nstep {turn}: continue the work", f"{reminder}\n{turn} passed", tool)
            since_compaction += ids
            if extras and turn == 2:
                writer.other_entries(ids[0])
            if turn == 6:
                writer.boundary = True  # Claude Code compacted its own resident session here
            if compact_every and turn and turn % compact_every == 0:
                compactions += 1
                last_compaction = _compaction(writer, turn, compactions, last_compaction, since_compaction)
                since_compaction = since_compaction[-4:]
        if extras and broken_lines:
            writer.damage()
    if payload_from is not None:
        record_payload_bytes(path, payload_from)
    return path


def record_payload_bytes(path: Path, package_dir: Path) -> None:
    """Add `payloadBytes` to each flatten/bootstrap record, as the sample senpi at `package_dir`
    serialises that call (its own session, conversion, prompt and dedupe functions)."""
    script = Path(str(resources.files("senpi_guard.demo").joinpath("record_payload.mjs")))
    result = subprocess.run(
        ["node", str(script), str(package_dir), str(path)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise FatalError(f"recording payloadBytes in {path} failed: {result.stderr.strip()[-300:]}")
