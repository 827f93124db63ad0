"""`senpi-guard audit`: per-turn prompt bytes of real sessions, with and without the patch."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from senpi_guard import audit, install, session
from senpi_guard.commands import common
from senpi_guard.errors import FatalError, UsageError


def _sessions(args) -> list[Path]:
    chosen = sum(bool(x) for x in (args.session, args.latest, args.all))
    if chosen != 1:
        raise UsageError("give one of: SESSION.jsonl, --latest, --all")
    if args.session:
        path = Path(args.session)
        if not path.is_file():
            raise FatalError(f"session {path} does not exist; pass a .jsonl file from "
                             f"{session.agent_dir() / 'sessions'}, or use --latest")
        return [path]
    files = session.session_files()
    if not files:
        raise FatalError(f"no session files under {session.agent_dir() / 'sessions'}; set "
                         "SENPI_CODING_AGENT_DIR if senpi keeps them elsewhere")
    return files[-1:] if args.latest else files


def _k(n: int) -> str:
    return f"{n / 1024:,.1f}K" if n >= 1024 else str(n)


def _print_header(path: Path, serializer: str) -> None:
    print(f"session   {path}")
    print(f"serialised by {serializer}")
    print(f"{'turn':>5} {'entry':<10}{'unpatched':>11}{'patched':>10}{'saved':>7}"
          f"{'~tokens unpatched':>19}{'~patched':>10}  {'billed in+cache':>16}  collapsed")


def _print_row(row: dict[str, Any]) -> None:
    saved = 1 - row["patched_bytes"] / row["unpatched_bytes"] if row["unpatched_bytes"] else 0
    usage = row["usage"] or {}
    billed_tokens = sum(usage.get(k) or 0 for k in ("input", "cacheRead", "cacheWrite"))
    billed = f"{billed_tokens:,}" if usage else "-"
    collapsed = ", ".join(f"{tag}×{n}" for tag, n in row["collapsed"].items())
    print(f"{row['index']:>5} {row['entry_id'][:8]:<10}{_k(row['unpatched_bytes']):>11}"
          f"{_k(row['patched_bytes']):>10}{saved:>7.0%}{row['est_tokens_unpatched']:>19,}"
          f"{row['est_tokens_patched']:>10,}  {billed:>16}  {collapsed}")


def _print_summary(report: dict[str, Any]) -> None:
    s = report["summary"]
    print(f"total re-sent: {s['total_unpatched_bytes']:,} bytes unpatched, "
          f"{s['total_patched_bytes']:,} patched; saved {s['saved_bytes']:,} ({s['saved_percent']}%)")
    if s["largest_turn"]:
        big = s["largest_turn"]
        print(f"largest turn: #{big['index']}, {big['unpatched_bytes']:,} bytes "
              f"({big['patched_bytes']:,} patched)")
    losing, most = s["turns_losing_a_directive"], s["most_directives_lost_in_one_turn"]
    print(f"distinct directives dropped from the prompt: without the patch in {losing['unpatched']} "
          f"turns (at most {most['unpatched']} in one), with it in {losing['patched']} turns")
    if s["context_window_tokens"]:
        over = s["first_turn_over_window_unpatched"]
        line = f"context window {s['context_window_tokens']:,} tokens: "
        line += ("never exceeded without the patch" if over is None else
                 f"first exceeded at turn #{over} without the patch; with it that turn "
                 + ("still exceeds" if s["that_turn_over_window_patched"] else "fits"))
        print(line)
    else:
        print("context window: unknown model, not compared")
    print("tokens are estimates (UTF-8 bytes / 4); 'billed' is senpi's recorded usage")
    if report["warnings"]:
        skipped = ", ".join(f"{n} {what}" for what, n in sorted(report["warnings"].items()))
        print(f"warnings: skipped {skipped}", file=sys.stderr)


class JsonStream:
    """Writes the JSON report as it is produced: rows are never all held in memory."""

    def __init__(self, many: bool) -> None:
        self.many = many
        self.sessions = 0
        self.rows = 0
        if many:
            sys.stdout.write('{"sessions": [')

    def start(self, path: Path, serializer: str) -> None:
        sep = ", " if self.sessions else ""
        sys.stdout.write(f'{sep}{{"session": {json.dumps(str(path))}, '
                         f'"serializer": {json.dumps(serializer)}, "turns": [\n')
        self.sessions += 1
        self.rows = 0

    def row(self, row: dict[str, Any]) -> None:
        sys.stdout.write(("," if self.rows else "") + json.dumps(row) + "\n")
        self.rows += 1

    def end(self, report: dict[str, Any]) -> None:
        sys.stdout.write(f'], "summary": {json.dumps(report["summary"])}, '
                         f'"warnings": {json.dumps(report["warnings"])}}}')

    def close(self) -> None:
        sys.stdout.write("]}\n" if self.many else "\n")


def run(args) -> int:
    files = _sessions(args)
    for path in files:  # every bad file is refused before any output starts
        session.read_header(path)
    patch, config = common.load()
    found = install.explicit(args.root) if args.root else install.discover()
    stream = JsonStream(len(files) > 1) if args.json else None
    last = None
    with audit.serializer(found.installs, patch, config) as server:
        for path in files:
            if stream:
                stream.start(path, server.label)
                last = audit.audit_session(path, server, stream.row)
                stream.end(last)
            else:
                _print_header(path, server.label)
                last = audit.audit_session(path, server, _print_row)
                _print_summary(last)
    if stream:
        stream.close()
    if args.plot and last is not None:
        from senpi_guard.plot import draw
        draw(last, Path(args.plot))
        if not args.json:
            print(f"plot written to {args.plot}")
    return 0
