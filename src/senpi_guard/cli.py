"""senpi-guard's command line: parse, dispatch, turn one error type into one clean line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from senpi_guard import __version__
from senpi_guard.errors import FatalError, UsageError

COMMANDS = ("apply", "status", "verify", "revert", "watch", "daemon", "audit", "demo")


def _common(parser: argparse.ArgumentParser, json_flag: bool = True) -> None:
    parser.add_argument("--root", action="append", type=Path, default=[], metavar="PKG_DIR",
                        help="a senpi package dir (repeatable); skips discovery")
    if json_flag:
        parser.add_argument("--json", action="store_true", help="machine-readable output")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="senpi-guard",
        description="Dedupe repeated directive blocks in senpi's Claude prompt, verified by replay.")
    parser.add_argument("--version", action="version", version=f"senpi-guard {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    apply = sub.add_parser("apply", help="patch every senpi install (verified before writing)")
    _common(apply)
    apply.add_argument("--dry-run", action="store_true", help="verify and show the diff; write nothing")
    status = sub.add_parser("status", help="show each install's state")
    _common(status)
    check = sub.add_parser("verify", help="replay fixture contexts through the installed code")
    _common(check)
    revert = sub.add_parser("revert", help="restore the original bytes")
    _common(revert)
    revert.add_argument("--from-edit", action="store_true",
                        help="ignore backups; restore by removing the edit")
    watch = sub.add_parser("watch", help="keep every install patched (foreground; the daemon runs this)")
    _common(watch, json_flag=False)
    watch.add_argument("--rescan-interval", type=float, metavar="SECONDS",
                       help="rescan even without file events (default: config, 60)")
    watch.add_argument("--quiet-period", type=float, metavar="SECONDS",
                       help="how long an install must be quiet before it is patched")
    watch.add_argument("--quiet", action="store_true", help="log to the log file only")
    daemon = sub.add_parser("daemon", help="run the watcher as a user service")
    daemon.add_argument("action", choices=("install", "uninstall", "status"))
    audit = sub.add_parser("audit", help="per-turn prompt bytes of senpi sessions, with and without the patch")
    audit.add_argument("session", nargs="?", help="a session .jsonl file")
    audit.add_argument("--latest", action="store_true", help="the newest session")
    audit.add_argument("--all", action="store_true", help="every session")
    audit.add_argument("--plot", metavar="FILE", help="draw bytes per turn to a .png or .svg")
    _common(audit)
    demo = sub.add_parser("demo", help="try senpi-guard on a throw-away sample install")
    demo.add_argument("--keep", action="store_true", help="keep the temp prefix for inspection")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        module = __import__(f"senpi_guard.commands.{args.command}", fromlist=["run"])
        return module.run(args)
    except UsageError as exc:
        print(f"senpi-guard: {exc}", file=sys.stderr)
        return 2
    except FatalError as exc:
        print(f"senpi-guard: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("senpi-guard: interrupted", file=sys.stderr)
        return 130
