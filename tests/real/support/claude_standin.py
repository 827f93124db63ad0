#!/usr/bin/env python3
"""A stand-in for the Claude Code executable, for tests of senpi's claude-sdk-oauth provider (the
model and Claude Code cannot run here; this is the one part mocked, and it is this project's code).

It speaks the SDK's stream-json protocol on stdio: every `control_request` gets a success
`control_response`; each user line gets `system/init` (once), the same user message replayed
(`isReplay`, same uuid: senpi claims the turn on it), one assistant message and a `result`. It keeps
a Claude Code-style transcript (`<config>/projects/<cwd with non-alphanumerics as ->/<id>.jsonl`),
so that senpi can resume (`--resume=`, `--resume-session-at=`, `--fork-session`). A user text that
whose last text block (the new message) holds $STANDIN_CLAUDE_COMPACT makes it report a compaction
of its own session (`system/compact_boundary`) before answering. Every start and every user message it receives is
logged to $STANDIN_CLAUDE_LOG (one JSON line each): this is what the provider really sent.
"""

import json
import os
import re
import sys
import time
import uuid


def option(argv, name):
    for index, arg in enumerate(argv):
        if arg == name and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def log(kind, **data):
    path = os.environ.get("STANDIN_CLAUDE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"kind": kind, "pid": os.getpid(), **data}) + "\n")


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


def text_of(content):
    if isinstance(content, str):
        return [content]
    return [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]


class Transcript:
    def __init__(self, argv):
        resume = option(argv, "--resume")
        at = option(argv, "--resume-session-at")
        fork = "--fork-session" in argv
        self.session = option(argv, "--session-id") or (str(uuid.uuid4()) if fork or not resume else resume)
        config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
        folder = os.path.join(config, "projects", re.sub(r"[^a-zA-Z0-9]", "-", os.getcwd()))
        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, self.session + ".jsonl")
        self.last = None
        if resume:
            source = os.path.join(folder, resume + ".jsonl")
            entries = []
            if os.path.exists(source):
                with open(source, encoding="utf-8") as handle:
                    entries = [json.loads(line) for line in handle if line.strip()]
            if at:
                cut = next((i for i, e in enumerate(entries) if e.get("uuid") == at), len(entries) - 1)
                entries = entries[: cut + 1]
            if self.session != resume:
                with open(self.path, "w", encoding="utf-8") as handle:
                    for entry in entries:
                        handle.write(json.dumps({**entry, "sessionId": self.session}) + "\n")
            self.last = entries[-1]["uuid"] if entries else None
        log("start", argv=argv, session=self.session, resume=resume, resume_at=at, fork=fork)

    def add(self, kind, entry_uuid, message):
        entry = {
            "type": kind,
            "uuid": entry_uuid,
            "parentUuid": self.last,
            "isSidechain": False,
            "cwd": os.getcwd(),
            "sessionId": self.session,
            "timestamp": now(),
            "message": message,
        }
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
        self.last = entry_uuid


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


USAGE = {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def answer(transcript, msg, model, started):
    texts = text_of(msg["message"]["content"])
    log("user", session=transcript.session, texts=texts, bytes=sum(len(t.encode()) for t in texts))
    if not started:
        emit(
            {
                "type": "system",
                "subtype": "init",
                "session_id": transcript.session,
                "uuid": str(uuid.uuid4()),
                "cwd": os.getcwd(),
                "model": model,
                "tools": [],
                "mcp_servers": [],
                "permissionMode": "default",
                "apiKeySource": "none",
                "slash_commands": [],
                "output_style": "default",
            }
        )
    user_uuid = msg.get("uuid") or str(uuid.uuid4())
    emit({**msg, "uuid": user_uuid, "session_id": transcript.session, "isReplay": True})
    transcript.add("user", user_uuid, msg["message"])
    mark = os.environ.get("STANDIN_CLAUDE_COMPACT")
    if mark and texts and mark in texts[-1]:
        emit(
            {
                "type": "system",
                "subtype": "compact_boundary",
                "session_id": transcript.session,
                "uuid": str(uuid.uuid4()),
                "compact_metadata": {"trigger": "auto", "pre_tokens": 1000},
            }
        )
        log("compact", session=transcript.session)
    reply_uuid = str(uuid.uuid4())
    reply = {
        "id": "msg_" + uuid.uuid4().hex[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": USAGE,
    }
    emit(
        {
            "type": "assistant",
            "message": reply,
            "parent_tool_use_id": None,
            "session_id": transcript.session,
            "uuid": reply_uuid,
        }
    )
    transcript.add("assistant", reply_uuid, reply)
    emit(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "duration_ms": 1,
            "duration_api_ms": 1,
            "num_turns": 1,
            "result": "ok",
            "session_id": transcript.session,
            "total_cost_usd": 0,
            "uuid": str(uuid.uuid4()),
            "usage": USAGE,
            "modelUsage": {},
            "permission_denials": [],
        }
    )


def main():
    argv = sys.argv[1:]
    transcript = Transcript(argv)
    model = option(argv, "--model") or "claude"
    started = False
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("type") == "control_request":
            emit(
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": msg.get("request_id"), "response": {}},
                }
            )
        elif msg.get("type") == "user":
            answer(transcript, msg, model, started)
            started = True


if __name__ == "__main__":
    main()
