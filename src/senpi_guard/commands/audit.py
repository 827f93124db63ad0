"""`senpi-guard audit`: per-call prompt bytes of real sessions, as senpi sent them, with and
without the patch."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from senpi_guard import discover, ui
from senpi_guard.audit import plot, session
from senpi_guard.audit import replay as audit
from senpi_guard.commands import audit_brief as brief
from senpi_guard.commands import audit_view as view
from senpi_guard.commands import common, metrics
from senpi_guard.core import agentdir
from senpi_guard.errors import FatalError, UsageError
from senpi_guard.io import logs
from senpi_guard.layers import pipeline

SUMMARY = "per-call prompt bytes of senpi sessions, as sent, with and without the patch"
EXAMPLE = (
    "senpi-guard audit --latest\n  senpi-guard audit ~/.senpi/agent/sessions/x.jsonl --json --plot turns.png\n"
    "  senpi-guard audit --all --textfile /var/lib/node_exporter/textfile_collector"
)
EXITS = (
    "0 audited; 1 no such session, not a session file, node could not run senpi's code, or "
    "(with --all) some session could not be audited (each named on stderr, the others audited)"
)
DESCRIPTION = """Per-call prompt bytes of senpi sessions, as sent (full re-send or delta, from senpi's own
records), with and without the patch and the extension layer.
It leads with one headline per session (calls; cache-write tokens, bytes and list-price dollars saved
or more) and a few lines; -v adds the per-call table and the whole summary.
--json prints one object {"sessions": [...]}: per session its turns, summary and warnings (with the
first line each is about), or {"session", "error"} for one that could not be audited; a run that
stops adds its "error".
--format prometheus prints per provider the calls, bytes, tokens and dollars over the sessions
audited (docs/metrics.md); --textfile DIR writes them to DIR/senpi_guard.prom."""


def configure(parser) -> None:
    parser.add_argument("session", nargs="?", help="a session .jsonl file")
    parser.add_argument("--latest", action="store_true", help="the newest session")
    parser.add_argument("--all", action="store_true", help="every session")
    parser.add_argument(
        "--plot", metavar="FILE", help="draw bytes per call to a .png or .svg (with --all: one file per session)"
    )
    parser.add_argument(
        "--reconstruction",
        choices=("auto", "senpi", "python"),
        default="auto",
        help="rebuild contexts with senpi's own buildSessionContext/convertToLlm "
        "(senpi), senpi-guard's (python), or senpi's when they import (auto)",
    )
    parser.add_argument(
        "--sample",
        action="store_true",
        help="with no usable senpi install, count with a sample senpi of senpi-guard's own (the output says so)",
    )
    common.add_install_options(parser)
    common.add_foreign_root(parser)
    metrics.add_options(parser)


def _agent_dirs(installs) -> list[Path]:
    """Where the installs keep their sessions: each one's own agent dir (else the default one)."""
    places = [pipeline.placement(i) for i in installs]
    return list(dict.fromkeys(p.user.path for p in places if p.user is not None)) or [agentdir.default_agent_dir()]


def _sessions(args, agent_dirs: list[Path]) -> list[Path]:
    chosen = sum(bool(x) for x in (args.session, args.latest, args.all))
    if chosen != 1:
        raise UsageError("give one of: SESSION.jsonl, --latest, --all")
    if args.session:
        return [_named(Path(args.session), agent_dirs[0])]
    files = session.session_files(agent_dirs)
    if not files:
        where = ", ".join(str(d / "sessions") for d in agent_dirs)
        raise FatalError(
            f"no session files under {where}; set SENPI_CODING_AGENT_DIR if senpi keeps "
            "them elsewhere, or pass a session file"
        )
    return files[-1:] if args.latest else files


def _named(path: Path, agent_dir: Path) -> Path:
    """The session file named by hand, refused for what it is when it is not one (a stat, never an
    open: a FIFO would block)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise FatalError(
            f"session {path} does not exist; pass a .jsonl file from {agent_dir / 'sessions'}, or use --latest"
        ) from None
    except OSError as exc:
        raise FatalError(
            f"cannot look at session {path}: {exc.strerror}; check the path and its folders' permissions"
        ) from exc
    problem = session.not_a_file(path, mode)
    if problem is not None:
        raise FatalError(problem)
    return path


def _plot_path(base: Path, path: Path, many: bool) -> Path:
    return base.with_name(f"{base.stem}-{path.stem}{base.suffix}") if many else base


class JsonStream:
    """Writes the JSON report as it is produced (rows are never all held in memory). It is opened
    once node is ready (an error before that is the cli's own one document), and every way out
    closes it: a session that fails part-way with its error, a run that stops with the document's."""

    def __init__(self) -> None:
        self.sessions = 0
        self.rows = 0
        self.in_session = False
        sys.stdout.write('{"sessions": [')

    def start(self, path: Path, server: audit.Serializer) -> None:
        sys.stdout.write(
            f'{", " if self.sessions else ""}{{"session": {json.dumps(str(path))}, '
            f'"serializer": {json.dumps(server.label)}, "sample": {json.dumps(server.sample)}, '
            f'"reconstruction": {json.dumps(server.reconstruction)}, "fallback": {json.dumps(server.fallback)}, '
            '"turns": [\n'
        )
        self.sessions += 1
        self.rows = 0
        self.in_session = True

    def row(self, row: dict[str, Any]) -> None:
        sys.stdout.write(("," if self.rows else "") + json.dumps(row) + "\n")
        self.rows += 1

    def end(self, report: dict[str, Any]) -> None:
        sys.stdout.write(
            f'], "summary": {json.dumps(report["summary"])}, '
            f'"warnings": {json.dumps(report["warnings"])}, '
            f'"warning_lines": {json.dumps(report["warning_lines"])}}}'
        )
        self.in_session = False

    def fail(self, path: Path, error: str) -> None:
        if self.in_session:
            sys.stdout.write(f'], "error": {json.dumps(error)}}}')
            self.in_session = False
            return
        sys.stdout.write(f"{', ' if self.sessions else ''}" + json.dumps({"session": str(path), "error": error}))
        self.sessions += 1

    def close(self, error: str | None = None) -> None:
        if self.in_session:
            self.fail(Path(), error or "stopped")
        sys.stdout.write("]" + (f', "error": {json.dumps(error)}' if error else "") + "}\n")
        sys.stdout.flush()


Stream = JsonStream | metrics.AuditMetrics  # (metrics take the same rows and reports as --json)


def _audit_one(path: Path, server: audit.Serializer, stream: Stream | None, args, many: bool) -> None:
    session.read_header(path)
    if stream:
        stream.start(path, server)
        report = audit.audit_session(path, server, stream.row)
    else:
        report = _print_text(path, server)
    if args.plot:
        out = _plot_path(Path(args.plot), path, many)
        plot.draw(report, out)
        if not stream:
            print(f"plot written to:\n{ui.visible(out)}")  # (the path on a line of its own)
    if stream:
        stream.end(report)
        if not args.json and report["warnings"]:  # (--json carries them in its document)
            view.print_warnings(report)


def _print_text(path: Path, server: audit.Serializer) -> dict[str, Any]:
    """The headline first, then (by verbosity) the path alone, a few lines, or -v's table (its rows
    wait for the headline in a file) and whole summary."""
    with view.table() as table:
        report = audit.audit_session(path, server, table.row if table else None)
        brief.print_headline(report)
        if table:
            view.print_header(path, server)
            table.print()
            view.print_summary(report)
            return report
    if ui.quiet():
        print(ui.visible(path))
    else:
        brief.print_brief(report)
    if report["warnings"]:
        view.print_warnings(report)
    return report


def _audit_each(files: list[Path], server: audit.Serializer, stream: Stream | None, args) -> int:
    """Every session, each failure its own (one bad file does not end --all); the exit code."""
    code = 0
    for path in files:
        try:
            _audit_one(path, server, stream, args, len(files) > 1)
            continue
        except FatalError as exc:
            message, failed = str(exc), 1
        except BrokenPipeError:  # the reader went away (`| head`): the cli says nothing more
            raise
        except Exception as exc:  # one session's surprise is that session's error
            message, failed = logs.unexpected(exc), 3
        code = max(code, failed)
        print(f"senpi-guard: could not audit {path}: {message}", file=sys.stderr)
        if stream:
            stream.fail(path, message)
    return code


def run(args) -> int:
    fmt = metrics.chosen(args)
    patches, config = common.load()  # (first: the config's caps hold for every file read, a session's too)
    found = discover.explicit(args.root) if args.root else discover.discover()
    files = _sessions(args, _agent_dirs(found.installs) if not args.session else [agentdir.default_agent_dir()])
    if args.session:
        session.read_header(files[0])  # a bad file named by hand is refused before anything runs
    if args.plot:
        plot.check(Path(args.plot))
    patch = next((p for p in patches if p.audit), None)
    if patch is None:
        raise FatalError("no installed patch says how to audit a session; reinstall senpi-guard")
    stream: Stream | None = None
    try:
        with audit.serializer(
            found.installs, patch, config, args.allow_foreign_root, args.reconstruction, sample_ok=args.sample
        ) as server:
            stream = JsonStream() if args.json else metrics.AuditMetrics(args) if fmt == "prometheus" else None
            code = _audit_each(files, server, stream, args)
    except KeyboardInterrupt:
        if stream:
            stream.close("interrupted")
        raise
    except BrokenPipeError:
        raise
    except Exception as exc:
        if stream is None:  # nothing written yet: the cli's one line (and one document)
            raise
        message = f"error: {exc}" if isinstance(exc, FatalError) else logs.unexpected(exc)
        print(f"senpi-guard: {message}", file=sys.stderr)
        stream.close(message)
        return 1 if isinstance(exc, FatalError) else 3
    if stream:
        stream.close()
    return code
