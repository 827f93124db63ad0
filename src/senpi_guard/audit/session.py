"""senpi session JSONL -> the context of every assistant turn, streamed in bounded memory.

One pass indexes the file (id -> byte offset, parent, type); a turn's context is then rebuilt from
its parent chain by reading just those lines. Only the current path's messages are ever parsed and
held, so memory follows the context window, not the file size.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from senpi_guard.audit.session_io import (  # (the file helpers, re-exported: callers use session.*)
    header_of,
    open_session,
)
from senpi_guard.audit.session_io import (
    not_a_file as not_a_file,
)
from senpi_guard.audit.session_io import (
    read_header as read_header,
)
from senpi_guard.audit.session_io import (
    session_files as session_files,
)
from senpi_guard.errors import FatalError

CONTEXT_TYPES = {"message", "compaction", "branch_summary", "custom_message"}
KNOWN_TYPES = CONTEXT_TYPES | {"custom", "model_change", "thinking_level_change", "label", "session_info"}
COMPACTION_TEXT = (
    "The conversation history before this point was compacted into the following "
    "summary:\n\n<summary>\n{summary}\n</summary>"
)
# (senpi closes a branch summary with no newline before </summary>, unlike a compaction's)
BRANCH_TEXT = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n{summary}</summary>"
)


@dataclass(frozen=True)
class Entry:
    id: str
    parent: str | None
    kind: str
    offset: int
    length: int
    line: int  # its line number in the file (1 is the header)
    role: str | None = None
    first_kept: str | None = None
    plain: bool = False  # a user/assistant/toolResult message with content: sent as it is stored
    custom_type: str | None = None  # (a custom entry's customType)
    summary_call: bool = False  # a compaction or branch summary senpi made with a provider call
    from_id: str | None = None  # (a branch summary: the leaf of the branch it summarises)


@dataclass
class Turn:
    """One provider call an entry implies: an assistant message's call ("turn"), or the summary
    request behind a compaction ("compaction") or a branch summary ("branch_summary")."""

    index: int
    entry_id: str
    path: list[str]  # context entry ids, oldest first (compaction entry first when present)
    chain: list[str]  # every entry from the first one the context needs to the leaf, in file order
    leaf: str | None
    model: str | None
    kind: str = "turn"
    after: str | None = None  # (a branch summary) the messages of this entry's context are not sent


@dataclass(frozen=True)
class Call:
    """What senpi recorded about how one assistant turn's request went out."""

    continuity: str | None  # bootstrap, delta, fork, flatten, disabled; None when not recorded
    reason: str | None
    delta_messages: int | None
    payload_bytes: int | None
    provider: str | None


@dataclass
class SessionIndex:
    path: Path
    header: dict[str, Any]
    entries: dict[str, Entry] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    warnings: Counter = field(default_factory=Counter)
    warning_lines: dict[str, int] = field(default_factory=dict)  # each warning -> the first line it is about
    models: dict[str, str] = field(default_factory=dict)  # assistant id -> model id
    tools: set[str] = field(default_factory=set)  # every tool name called or answered

    def warn(self, what: str, line: int) -> None:
        self.warnings[what] += 1
        self.warning_lines.setdefault(what, line)


def index(path: Path) -> SessionIndex:
    with open_session(path) as handle:
        first = handle.readline()
        found = SessionIndex(path, header_of(path, first))
        model = None
        offset = len(first)
        for line, raw in enumerate(iter(handle.readline, b""), start=2):
            at, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            entry = _parse(raw)
            if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
                found.warn("malformed line" if raw.endswith(b"\n") else "truncated last line", line)
                continue
            model = _add(found, entry, at, len(raw), line, model)
    return found


def _add(found: SessionIndex, entry: dict[str, Any], at: int, length: int, line: int, model: str | None) -> str | None:
    """Index one entry (or count why it is skipped); returns the model in force after it. A field of
    the wrong type is never guessed at: the entry is skipped, or the field treated as absent."""
    kind = entry.get("type")
    if not isinstance(kind, str):
        found.warn("entry whose type is not a string", line)
        return model
    if kind not in KNOWN_TYPES:
        found.warn(f"unknown entry type {kind[:40]!r}", line)
        return model
    if kind == "model_change":
        named = entry.get("modelId") or entry.get("model")
        if named is not None and not isinstance(named, str):
            found.warn("model_change whose model is not a string (ignored)", line)
        model = named if isinstance(named, str) and named else model
    role = None
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict) or "role" not in message:
            found.warn("message without a role", line)
            return model
        role = message["role"]
        if not isinstance(role, str):
            found.warn("message whose role is not a string", line)
            return model
        if role == "assistant":
            own = message.get("model")
            if own is not None and not isinstance(own, str):
                found.warn("assistant model that is not a string (ignored)", line)
            found.models[entry["id"]] = own if isinstance(own, str) and own else model
        _note_tools(found.tools, message)
    first_kept = entry.get("firstKeptEntryId")
    if kind == "compaction" and first_kept is not None and not isinstance(first_kept, str):
        found.warn("compaction whose firstKeptEntryId is not a string (keeps nothing before it)", line)
    parent = entry.get("parentId")
    plain = role in ("user", "assistant", "toolResult") and entry["message"].get("content") is not None
    custom_type = entry.get("customType") if kind == "custom" and isinstance(entry.get("customType"), str) else None
    # (fromHook says nothing here: senpi 2026.8.22-2's own compaction is a built-in extension and sets
    # it; an empty summary is no request)
    summary_call = kind in ("compaction", "branch_summary")
    summary_call = summary_call and isinstance(entry.get("summary"), str) and bool(entry["summary"])
    from_id = entry.get("fromId") if kind == "branch_summary" and isinstance(entry.get("fromId"), str) else None
    found.entries[entry["id"]] = Entry(
        entry["id"],
        parent if isinstance(parent, str) else None,
        kind,
        at,
        length,
        line,
        role,
        first_kept if isinstance(first_kept, str) else None,
        plain,
        custom_type,
        summary_call,
        from_id,
    )
    found.order.append(entry["id"])
    return model


def _note_tools(tools: set[str], message: dict[str, Any]) -> None:
    if message.get("role") == "toolResult" and isinstance(message.get("toolName"), str):
        tools.add(message["toolName"])
    content = message.get("content")
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict) and part.get("type") == "toolCall" and isinstance(part.get("name"), str):
            tools.add(part["name"])


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: absurdly deep JSON
        return None


def turns(found: SessionIndex) -> Iterator[Turn]:
    """Every provider call the entries imply, in file order, with the ids of its context: each
    assistant entry's, and the summary request of each compaction and branch summary senpi made."""
    number = 0
    model = None
    for entry_id in found.order:
        entry = found.entries[entry_id]
        if entry.kind == "message" and entry.role == "assistant":
            model = found.models.get(entry_id)
            walked = context_ids(found, entry.parent, entry.line)
            turn = None if walked is None else Turn(number, entry_id, *walked, entry.parent, model)
        elif entry.summary_call:
            turn = _summary_turn(found, entry, number, model)
        else:
            continue
        if turn is not None:
            yield turn
            number += 1


def _summary_turn(found: SessionIndex, entry: Entry, number: int, model: str | None) -> Turn | None:
    """A compaction's summary request carries the context before it up to its firstKeptEntryId; a
    branch summary's, the branch it left (from its fromId back to where it meets this entry's own)."""
    if entry.kind == "compaction":
        walked = context_ids(found, entry.parent, entry.line)
        kept = found.entries.get(entry.first_kept or "")
        if walked is None or kept is None:
            return None
        if kept.kind == "compaction" or kept.id not in walked[1]:  # (it keeps nothing: all of it is summarised)
            return Turn(number, entry.id, walked[0], walked[1], entry.parent, model, "compaction")
        # (the kept entry may be one that is not in the context, e.g. a custom entry)
        before = set(walked[1][: walked[1].index(kept.id)])
        path = [i for i in walked[0] if i in before]
        return Turn(number, entry.id, path, walked[1], kept.parent, model, "compaction")
    if entry.from_id not in found.entries:
        return None
    left = context_ids(found, entry.from_id, entry.line)
    if left is None:
        return None
    common = set(_ancestors(found, entry.parent))
    meet = next((i for i in _ancestors(found, entry.from_id) if i in common), None)
    path = [i for i in left[0] if i not in common]
    if not path:  # (nothing left behind that the file holds: no request to count)
        return None
    return Turn(number, entry.id, path, left[1], entry.from_id, model, "branch_summary", meet)


def context_ids(found: SessionIndex, start: str | None, line: int = 0) -> tuple[list[str], list[str]] | None:
    """The context's entry ids, oldest first, and the chain of entries they came from, walking back
    from `start` only as far as needed: the first compaction met is the latest, and nothing before
    its firstKeptEntryId is read. Like senpi, other compactions are skipped when looking for that
    entry (one that names an older compaction keeps nothing before itself). None (counted) when a
    parent is missing."""
    walked: list[str] = []  # context entries, newest first
    chain: list[str] = []
    seen: set[str] = set()
    compaction: Entry | None = None
    after_compaction = 0
    met_kept = False
    current = start
    while current is not None:
        entry = found.entries.get(current)
        if entry is None or current in seen:
            line = found.entries[chain[-1]].line if chain else line  # (the entry whose parent it is)
            found.warn("entry with a missing parent" if entry is None else "parent cycle", line)
            return None
        seen.add(current)
        chain.append(current)
        if entry.kind == "compaction":
            if compaction is None:
                compaction, after_compaction = entry, len(walked)
                if not _can_keep(found, entry.first_kept):
                    break  # nothing before this compaction can be kept: stop walking here
        elif entry.kind in CONTEXT_TYPES:
            walked.append(current)
            if compaction is not None and current == compaction.first_kept:
                met_kept = True
                break
        current = entry.parent
    if compaction is not None and not met_kept:
        kept = found.entries.get(compaction.first_kept or "")
        if kept is None or kept.kind != "compaction":
            found.warn("compaction keeps an entry that is not on the path", compaction.line)
        walked = walked[:after_compaction]
    walked.reverse()
    chain.reverse()
    return (walked if compaction is None else [compaction.id, *walked]), chain


def _ancestors(found: SessionIndex, start: str | None) -> list[str]:
    """`start` and every entry above it, nearest first (stopping at a missing parent or a cycle)."""
    out: list[str] = []
    seen: set[str] = set()
    while start is not None and start in found.entries and start not in seen:
        seen.add(start)
        out.append(start)
        start = found.entries[start].parent
    return out


def _can_keep(found: SessionIndex, first_kept: str | None) -> bool:
    """Whether a compaction's firstKeptEntryId can be met walking back: senpi skips compactions
    when looking for it, and an id that is in no entry is never met."""
    kept = found.entries.get(first_kept or "")
    return kept is not None and kept.kind != "compaction"


def read_raw(handle: BinaryIO, entry: Entry, path: Path) -> bytes:
    """An entry's JSON text as it is in the file (still the complete object that was indexed)."""
    handle.seek(entry.offset)
    raw = handle.read(entry.length)
    text = raw.strip()
    if len(raw) != entry.length or not (text.startswith(b"{") and text.endswith(b"}")):
        raise _changed(path, entry)
    return text


def read_entry(handle: BinaryIO, entry: Entry, path: Path) -> dict[str, Any]:
    handle.seek(entry.offset)
    raw = handle.read(entry.length)
    parsed = _parse(raw) if len(raw) == entry.length else None
    if not isinstance(parsed, dict) or parsed.get("id") != entry.id:
        raise _changed(path, entry)
    return parsed


def _changed(path: Path, entry: Entry) -> FatalError:
    return FatalError(
        f"{path} changed while it was being read (line {entry.line}, entry {entry.id[:40]!r}, "
        "is no longer what was indexed); audit it again once senpi has stopped writing it"
    )


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

    kind = details.get("kind")
    provider = message.get("provider")
    return Call(
        kind if isinstance(kind, str) else None,
        details.get("reason") if isinstance(details.get("reason"), str) else None,
        number("deltaMessages"),
        number("payloadBytes"),
        provider if isinstance(provider, str) else None,
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
