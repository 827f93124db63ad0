"""senpi session JSONL -> the context of every assistant turn, streamed in bounded memory.

One pass indexes the file (id -> byte offset, parent, type); a turn's context is then rebuilt from
its parent chain by reading just those lines. Only the current path's messages are ever parsed and
held, so memory follows the context window, not the file size.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
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
from senpi_guard.audit.session_messages import (  # (re-exported)
    BRANCH_TEXT as BRANCH_TEXT,
)
from senpi_guard.audit.session_messages import (
    COMPACTION_TEXT as COMPACTION_TEXT,
)
from senpi_guard.audit.session_messages import (
    Call as Call,
)
from senpi_guard.audit.session_messages import (
    bash_execution_text as bash_execution_text,
)
from senpi_guard.audit.session_messages import (
    call_of as call_of,
)
from senpi_guard.audit.session_messages import (
    context_window as context_window,
)
from senpi_guard.audit.session_messages import (
    to_message as to_message,
)
from senpi_guard.audit.session_messages import (
    usage_of as usage_of,
)
from senpi_guard.errors import FatalError
from senpi_guard.io import reader
from senpi_guard.io.visible import visible

SPLIT_TURN = "\n\n---\n\n**Turn Context (split turn):**\n\n"
CONTEXT_TYPES = {"message", "compaction", "branch_summary", "custom_message"}
KNOWN_TYPES = CONTEXT_TYPES | {"custom", "model_change", "thinking_level_change", "label", "session_info"}


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
    requests: int = 1  # provider requests behind a summary (a compaction that split a turn makes two)
    copied: bool = False  # copied from the session this one was forked from (its call was made there)


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
    requests: int = 1  # (a compaction that split a turn: its history's request and its turn prefix's)


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
    forked_at: datetime | None = None  # (a fork's or a branch's: its header's time; None for others)

    def warn(self, what: str, line: int) -> None:
        self.warnings[what] += 1
        self.warning_lines.setdefault(what, line)


def index(path: Path) -> SessionIndex:
    with open_session(path) as handle:
        rows = reader.lines(handle, path, reader.SESSION)  # (each under session_line_max_bytes)
        first = next(rows, b"")
        found = SessionIndex(path, header_of(path, first))
        if found.header.get("parentSession"):
            found.forked_at = _time(found.header.get("timestamp"))
        model = None
        offset = len(first)
        for line, raw in enumerate(rows, start=2):
            at, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            entry = _parse(raw)
            if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
                found.warn("malformed line" if raw.endswith(b"\n") else "truncated last line", line)
                continue
            model = _add(found, entry, at, len(raw), line, model)
    return found


def _message_role(found: SessionIndex, entry: dict[str, Any], line: int, model: str | None) -> str | None:
    """A message entry's role (None, and a warning, when it has none that can be read); an
    assistant's model and every message's tools are noted on the way."""
    message = entry.get("message")
    if not isinstance(message, dict) or "role" not in message:
        found.warn("message without a role", line)
        return None
    role = message["role"]
    if not isinstance(role, str):
        found.warn("message whose role is not a string", line)
        return None
    if role == "assistant":
        own = message.get("model")
        if own is not None and not isinstance(own, str):
            found.warn("assistant model that is not a string (ignored)", line)
        found.models[entry["id"]] = visible(own) if isinstance(own, str) and own else model
    _note_tools(found.tools, message)
    return role


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
        model = visible(named) if isinstance(named, str) and named else model  # (shown escaped in every view)
    role = None
    if kind == "message":
        role = _message_role(found, entry, line, model)
        if role is None:
            return model
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
    # (a branch summary an extension's session_before_tree wrote is stored with fromHook: no request)
    summary_call = summary_call and not (kind == "branch_summary" and entry.get("fromHook") is True)
    # (senpi's compact() joins the two summaries of a split turn with this line)
    split = kind == "compaction" and summary_call and SPLIT_TURN in entry["summary"]
    # (senpi's fork and branch copy the entries they start from, ids and times kept, after a header
    # of the moment they were made: what was made before it was called from the other session)
    made = _time(entry.get("timestamp")) if found.forked_at is not None else None
    copied = made is not None and made < found.forked_at
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
        2 if split else 1,
        copied,
    )
    found.order.append(entry["id"])
    return model


def _time(value: Any) -> datetime | None:
    """An entry's or a header's ISO time (aware); None when it is not one."""
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return moment if moment is None or moment.tzinfo is not None else moment.replace(tzinfo=UTC)


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
        if entry.copied and (entry.role == "assistant" or entry.summary_call):
            found.warn("calls copied from the session this one was forked from (counted there, not here)", entry.line)
            model = found.models.get(entry_id, model)
            continue
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
    branch summary's, the branch it left."""
    if entry.kind == "compaction":
        walked = context_ids(found, entry.parent, entry.line)
        kept = found.entries.get(entry.first_kept or "")
        if walked is None or kept is None:
            return None
        if kept.kind == "compaction" or kept.id not in walked[1]:  # (it keeps nothing: all of it is summarised)
            return Turn(number, entry.id, walked[0], walked[1], entry.parent, model, "compaction", entry.requests)
        # (the kept entry may be one that is not in the context, e.g. a custom entry)
        before = set(walked[1][: walked[1].index(kept.id)])
        path = [i for i in walked[0] if i in before]
        return Turn(number, entry.id, path, walked[1], kept.parent, model, "compaction", entry.requests)
    return _branch_turn(found, entry, number, model)


def _branch_turn(found: SessionIndex, entry: Entry, number: int, model: str | None) -> Turn | None:
    """senpi stores a branch summary at the place navigated to (its parentId, and its fromId too),
    after summarising the branch left behind: the entries from the old leaf (the last one appended
    before the summary) back to where that branch meets the new place. None when nothing was left."""
    position = found.order.index(entry.id)
    old_leaf = found.order[position - 1] if position > 0 else None
    common = set(_ancestors(found, entry.parent))
    left = []
    for entry_id in _ancestors(found, old_leaf):
        if entry_id in common:
            break
        left.append(entry_id)
    if not left:
        return None
    left.reverse()
    return Turn(number, entry.id, left, left, old_leaf, model, "branch_summary")


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
        else:
            if entry.kind in CONTEXT_TYPES:
                walked.append(current)
            # (the entry kept first may be one that sends nothing itself: a hook's custom entry)
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
