"""`senpi-guard watch`: keep every install patched, in the foreground (the daemon runs this)."""

from __future__ import annotations

import logging
from pathlib import Path

from senpi_guard.commands import common
from senpi_guard.errors import FatalError, UsageError
from senpi_guard.io import config as config_mod
from senpi_guard.io import locks

SUMMARY = "keep every install patched across `senpi update` (foreground; the daemon runs this)"
EXAMPLE = "senpi-guard watch --rescan-interval 30"
EXITS = (
    "0 stopped by SIGTERM/SIGINT (SIGHUP reloads the config); 1 a bad config, or another "
    "watcher already runs for this state dir"
)


def configure(parser) -> None:
    common.add_root(parser)
    parser.add_argument(
        "--rescan-interval", type=float, metavar="SECONDS", help="rescan even without file events (default: config, 60)"
    )
    parser.add_argument(
        "--quiet-period", type=float, metavar="SECONDS", help="how long an install must be quiet before it is patched"
    )


def run(args) -> int:
    from senpi_guard.keep import (
        notify,
        watcher,  # watchdog is loaded only by the command that watches
    )

    overrides = {
        k: v
        for k, v in (("rescan_interval", args.rescan_interval), ("quiet_period", args.quiet_period))
        if v is not None
    }
    for key, value in overrides.items():  # the config file's ranges: no busy loop on 0, no nan
        problem = config_mod.number_problem(key, value)
        if problem:
            raise UsageError(problem.replace(f"'{key}'", f"--{key.replace('_', '-')}"))
    locks.lock_timeout()  # (a bad SENPI_GUARD_LOCK_TIMEOUT: one line now, not a failure every round)
    # -q/--quiet: the log file only; -v: each round's start and end too
    logfile = notify.setup_logging(verbose=args.verbosity >= 0, rounds=args.verbosity > 0)
    try:
        patches, config = common.load()
    except FatalError as exc:  # (in the log too: a service's watcher is read there; stderr: cli's line)
        notify.to_log_file(logging.ERROR, f"not started: {exc}")
        raise
    roots = [Path(r).absolute() for r in args.root]
    guard = watcher.Watcher(patches, config, roots, overrides)
    guard.install_signal_handlers()
    return guard.run(logfile)
