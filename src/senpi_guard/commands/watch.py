"""`senpi-guard watch`: keep every install patched, in the foreground (the daemon runs this)."""

from __future__ import annotations

from pathlib import Path

from senpi_guard.commands import common

SUMMARY = "keep every install patched across `senpi update` (foreground; the daemon runs this)"
EXAMPLE = "senpi-guard watch --rescan-interval 30"
EXITS = "0 stopped by SIGTERM/SIGINT; 1 a bad config or setting"


def configure(parser) -> None:
    common.add_root(parser)
    parser.add_argument("--rescan-interval", type=float, metavar="SECONDS",
                        help="rescan even without file events (default: config, 60)")
    parser.add_argument("--quiet-period", type=float, metavar="SECONDS",
                        help="how long an install must be quiet before it is patched")
    parser.add_argument("--quiet", action="store_true", help="log to the log file only")


def run(args) -> int:
    from senpi_guard import watcher  # watchdog is loaded only by the command that watches

    patch, config = common.load()
    overrides = {k: v for k, v in (("rescan_interval", args.rescan_interval),
                                   ("quiet_period", args.quiet_period)) if v is not None}
    roots = [Path(r).absolute() for r in args.root]
    logfile = watcher.setup_logging(verbose=not args.quiet)
    guard = watcher.Watcher(patch, config, roots, overrides)
    watcher.log.info("watching (rescan every %gs, quiet period %gs, log %s)",
                     guard.config.rescan_interval, guard.config.quiet_period, logfile)
    guard.install_signal_handlers()
    return guard.run()
