"""`senpi-guard audit`: per-call prompt bytes of real sessions, as senpi sent them, with and
without the patch."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from senpi_guard import discover
from senpi_guard.audit import plot, session
from senpi_guard.audit import replay as audit
from senpi_guard.commands import audit_view as view
from senpi_guard.commands import common
from senpi_guard.core import agentdir
from senpi_guard.errors import FatalError, UsageError
from senpi_guard.layers import extension_plan

SUMMARY = "per-call prompt bytes of senpi sessions, as sent, with and without the patch"
EXAMPLE = "senpi-guard audit --latest\n  senpi-guard audit ~/.senpi/agent/sessions/x.jsonl --json --plot turns.png"
EXITS = ("0 audited; 1 no such session, not a session file, node could not run senpi's code, or "
         "(with --all) some session could not be audited (each named on stderr, the others audited)")
DESCRIPTION = """Per-call prompt bytes of senpi sessions, as sent (full re-send or delta, from senpi's own
records), with and without the patch and the extension layer.
--json prints one object {"sessions": [...]}: per session its turns, summary and warnings, or
{"session", "error"} for one that could not be audited."""


def configure(parser) -> None:
    parser.add_argument("session", nargs="?", help="a session .jsonl file")
    parser.add_argument("--latest", action="store_true", help="the newest session")
    parser.add_argument("--all", action="store_true", help="every session")
    parser.add_argument("--plot", metavar="FILE",
                        help="draw bytes per call to a .png or .svg (with --all: one file per session)")
    parser.add_argument("--reconstruction", choices=("auto", "senpi", "python"), default="auto",
                        help="rebuild contexts with senpi's own buildSessionContext/convertToLlm "
                             "(senpi), senpi-guard's (python), or senpi's when they import (auto)")
    common.add_install_options(parser)
    common.add_foreign_root(parser)


def _agent_dirs(installs) -> list[Path]:
    """Where the installs keep their sessions: each one's own agent dir (else the default one)."""
    places = [extension_plan.placement(i) for i in installs]
    return list(dict.fromkeys(p.user.path for p in places if p.user is not None)) or [agentdir.default_agent_dir()]


def _sessions(args, agent_dirs: list[Path]) -> list[Path]:
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
                             f"{agent_dirs[0] / 'sessions'}, or use --latest")
        return [path]
    files = session.session_files(agent_dirs)
    if not files:
        where = ", ".join(str(d / "sessions") for d in agent_dirs)
        raise FatalError(f"no session files under {where}; set SENPI_CODING_AGENT_DIR if senpi keeps "
                         "them elsewhere, or pass a session file")
    return files[-1:] if args.latest else files


def _plot_path(base: Path, path: Path, many: bool) -> Path:
    return base.with_name(f"{base.stem}-{path.stem}{base.suffix}") if many else base


class JsonStream:
    """Writes the JSON report as it is produced (rows are never all held in memory); a session that
    fails part-way is closed with its error, so the output is always valid JSON."""

    def __init__(self) -> None:
        self.sessions = 0
        self.rows = 0
        sys.stdout.write('{"sessions": [')

    def start(self, path: Path, server: audit.Serializer) -> None:
        sys.stdout.write(f'{", " if self.sessions else ""}{{"session": {json.dumps(str(path))}, '
                         f'"serializer": {json.dumps(server.label)}, '
                         f'"reconstruction": {json.dumps(server.reconstruction)}, "turns": [\n')
        self.sessions += 1
        self.rows = 0

    def row(self, row: dict[str, Any]) -> None:
        sys.stdout.write(("," if self.rows else "") + json.dumps(row) + "\n")
        self.rows += 1

    def end(self, report: dict[str, Any]) -> None:
        sys.stdout.write(f'], "summary": {json.dumps(report["summary"])}, '
                         f'"warnings": {json.dumps(report["warnings"])}}}')

    def fail(self, path: Path, error: str, started: bool) -> None:
        if started:
            sys.stdout.write(f'], "error": {json.dumps(error)}}}')
            return
        sys.stdout.write(f'{", " if self.sessions else ""}'
                         + json.dumps({"session": str(path), "error": error}))
        self.sessions += 1

    def close(self) -> None:
        sys.stdout.write("]}\n")


def run(args) -> int:
    found = discover.explicit(args.root) if args.root else discover.discover()
    files = _sessions(args, _agent_dirs(found.installs) if not args.session else [agentdir.default_agent_dir()])
    if args.session:
        session.read_header(files[0])  # a bad file named by hand is refused before anything runs
    if args.plot:
        plot.check(Path(args.plot))
    patch, config = common.load()
    stream = JsonStream() if args.json else None
    failed = 0
    with audit.serializer(found.installs, patch, config, args.allow_foreign_root,
                          args.reconstruction) as server:
        for path in files:
            started = False
            try:
                session.read_header(path)
                if stream:
                    stream.start(path, server)
                    started = True
                    report = audit.audit_session(path, server, stream.row)
                    stream.end(report)
                else:
                    view.print_header(path, server)
                    report = audit.audit_session(path, server, view.print_row)
                    view.print_summary(report)
            except FatalError as exc:
                failed += 1
                print(f"senpi-guard: could not audit {path}: {exc}", file=sys.stderr)
                if stream:
                    stream.fail(path, str(exc), started)
                continue
            if args.plot:
                out = _plot_path(Path(args.plot), path, len(files) > 1)
                plot.draw(report, out)
                if not args.json:
                    print(f"plot written to {out}")
    if stream:
        stream.close()
    return 1 if failed else 0
