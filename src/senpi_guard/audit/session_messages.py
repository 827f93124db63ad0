"""What a session entry contributes to a provider call: its message as senpi's convertToLlm gives
it, senpi's continuity record of the call, and the usage senpi recorded."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from senpi_guard.io.visible import visible

COMPACTION_TEXT = (
    "The conversation history before this point was compacted into the following "
    "summary:\n\n<summary>\n{summary}\n</summary>"
)
# (senpi closes a branch summary with no newline before </summary>, unlike a compaction's)
BRANCH_TEXT = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n{summary}</summary>"
)


@dataclass(frozen=True)
class Call:
    """What senpi recorded about how one assistant turn's request went out."""

    continuity: str | None  # bootstrap, delta, fork, flatten, disabled; None when not recorded
    reason: str | None
    delta_messages: int | None
    payload_bytes: int | None
    provider: str | None


def to_message(raw: dict[str, Any]) -> dict[str, Any] | None:
    """The message an entry contributes to the context, as senpi's convertToLlm gives it to the
    provider; None when it contributes nothing."""
    kind = raw.get("type")
    if kind == "message":
        message = raw["message"]
        role = message.get("role")
        if role == "bashExecution":
            return bash_execution_text(message)
        if role not in ("user", "assistant", "toolResult"):
            return None  # senpi drops a role it does not know
        return message if message.get("content") is not None else {**message, "content": []}
    if kind == "compaction":
        return {
            "role": "user",
            "content": [{"type": "text", "text": COMPACTION_TEXT.format(summary=raw.get("summary", ""))}],
        }
    if kind == "branch_summary":
        summary = raw.get("summary")
        if not isinstance(summary, str) or not summary:  # senpi adds no empty branch summary
            return None
        return {"role": "user", "content": [{"type": "text", "text": BRANCH_TEXT.format(summary=summary)}]}
    if kind == "custom_message":
        content = raw.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        return {"role": "user", "content": parts if parts is not None else []}
    return None


CONTINUITY = "claude_sdk_oauth_session_continuity"


def call_of(raw: dict[str, Any]) -> Call:
    """The last continuity record of an assistant entry (the one that describes its call)."""
    message = raw.get("message") if isinstance(raw.get("message"), dict) else {}
    diagnostics = message.get("diagnostics") or raw.get("diagnostics") or []
    details: dict[str, Any] = {}
    for item in diagnostics if isinstance(diagnostics, list) else ():
        if isinstance(item, dict) and item.get("type") == CONTINUITY and isinstance(item.get("details"), dict):
            details = item["details"]

    def number(key: str) -> int | None:
        value = details.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    def text(value: Any) -> str | None:  # (a user's session: shown escaped in every view)
        return visible(value) if isinstance(value, str) else None

    return Call(
        text(details.get("kind")),
        text(details.get("reason")),
        number("deltaMessages"),
        number("payloadBytes"),
        text(message.get("provider")),
    )


def bash_execution_text(message: dict[str, Any]) -> dict[str, Any] | None:
    """A user's `!cmd` as senpi sends it: user text; `!!cmd` (excludeFromContext) sends nothing."""
    if message.get("excludeFromContext"):
        return None
    output = message.get("output")
    text = f"Ran `{message.get('command', '')}`\n"
    text += f"```\n{output}\n```" if output else "(no output)"
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif message.get("exitCode") not in (None, 0):
        text += f"\n\nCommand exited with code {message.get('exitCode')}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def usage_of(raw: dict[str, Any]) -> dict[str, Any] | None:
    usage = raw.get("message", {}).get("usage")
    if not isinstance(usage, dict):
        return None

    def number(value: Any) -> int | float | None:  # (NaN, a string, a negative count: not recorded)
        ok = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value) and value >= 0
        return value if ok else None

    return {k: number(usage.get(k)) for k in ("input", "cacheRead", "cacheWrite", "totalTokens")}


def context_window(model: str | None) -> int | None:
    """Tokens, for the Claude models senpi's provider uses; None when unknown."""
    if not model:
        return None
    name = model.lower()
    if "claude" not in name and not re.search(r"opus|sonnet|haiku", name):
        return None
    return 1_000_000 if re.search(r"1m\b|\[1m\]|-1m", name) else 200_000
