from __future__ import annotations

from pathlib import Path

from senpi_guard import watcher
from senpi_guard.commands import common


def run(args) -> int:
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
