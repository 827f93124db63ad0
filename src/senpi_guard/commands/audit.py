"""`senpi-guard audit`: per-turn prompt bytes of real sessions, with and without the patch."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from senpi_guard import audit, discover, session, ui
from senpi_guard.commands import common
from senpi_guard.errors import FatalError, UsageError

SUMMARY = "per-turn prompt bytes of senpi sessions, with and without the patch"
EXAMPLE = "senpi-guard audit --latest\n  senpi-guard audit ~/.senpi/agent/sessions/x.jsonl --json --plot turns.png"
EXITS = "0 audited; 1 no such session, not a session file, or node could not run senpi's code"
WIDTH = 100  # the table fits this many columns unless -v


def configure(parser) -> None:
    parser.add_argument("session", nargs="?", help="a session .jsonl file")
    parser.add_argument("--latest", action="store_true", help="the newest session")
    parser.add_argument("--all", action="store_true", help="every session")
    parser.add_argument("--plot", metavar="FILE", help="draw bytes per turn to a .png or .svg")
    common.add_install_options(parser)
    common.add_foreign_root(parser)


def _sessions(args) -> list[Path]:
    chosen = sum(bool(x) for x in (args.session, args.latest, args.all))
    if chosen != 1:
        raise UsageError("give one of: SESSION.jsonl, --latest, --all")
    if args.session:
        path = Path(args.session)
        if path.is_dir():
            raise FatalError(f"{path} is a directory; pass one session .jsonl file from it, or use "
                             "--latest or --all")
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
    _say(f"serialised by {serializer}")
    print(f"{'turn':>5} {'entry':<9}{'unpatched':>10}{'patched':>10}{'saved':>6}{'~tokens':>9}"
          f"{'~patched':>9}{'billed':>12}  collapsed")


def _print_row(row: dict[str, Any]) -> None:
    saved = 1 - row["patched_bytes"] / row["unpatched_bytes"] if row["unpatched_bytes"] else 0
    usage = row["usage"] or {}
    billed_tokens = sum(usage.get(k) or 0 for k in ("input", "cacheRead", "cacheWrite"))
    billed = f"{billed_tokens:,}" if usage else "-"
    collapsed = ", ".join(f"{tag}×{n}" for tag, n in row["collapsed"].items())
    line = (f"{row['index']:>5} {row['entry_id'][:8]:<9}{_k(row['unpatched_bytes']):>10}"
            f"{_k(row['patched_bytes']):>10}{saved:>6.0%}{row['est_tokens_unpatched']:>9,}"
            f"{row['est_tokens_patched']:>9,}{billed:>12}  {collapsed}")
    if len(line) > WIDTH and not ui.verbose():
        line = line[:WIDTH - 1] + "…"
    print(line.rstrip())


def _say(text: str) -> None:
    """A summary sentence, wrapped to the table's width unless -v."""
    print(text if ui.verbose() else textwrap.fill(text, WIDTH, subsequent_indent="  "))


def _print_summary(report: dict[str, Any]) -> None:
    s = report["summary"]
    _say(f"total re-sent: {s['total_unpatched_bytes']:,} bytes unpatched, "
          f"{s['total_patched_bytes']:,} patched; saved {s['saved_bytes']:,} ({s['saved_percent']}%)")
    if s["largest_turn"]:
        big = s["largest_turn"]
        _say(f"largest turn: #{big['index']}, {big['unpatched_bytes']:,} bytes "
              f"({big['patched_bytes']:,} patched)")
    losing, most = s["turns_losing_a_directive"], s["most_directives_lost_in_one_turn"]
    _say(f"distinct directives dropped from the prompt: without the patch in {losing['unpatched']} "
          f"turns (at most {most['unpatched']} in one), with it in {losing['patched']} turns")
    if s["context_window_tokens"]:
        over = s["first_turn_over_window_unpatched"]
        line = f"context window {s['context_window_tokens']:,} tokens: "
        line += ("never exceeded without the patch" if over is None else
                 f"first exceeded at turn #{over} without the patch; with it that turn "
                 + ("still exceeds" if s["that_turn_over_window_patched"] else "fits"))
        _say(line)
    else:
        _say("context window: unknown model, not compared")
    _say("tokens are estimates (UTF-8 bytes / 4); 'billed' is senpi's recorded usage")
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
    found = discover.explicit(args.root) if args.root else discover.discover()
    stream = JsonStream(len(files) > 1) if args.json else None
    last = None
    with audit.serializer(found.installs, patch, config, args.allow_foreign_root) as server:
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
