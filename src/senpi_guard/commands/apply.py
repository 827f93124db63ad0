from __future__ import annotations

from senpi_guard import engine, lock, state
from senpi_guard.commands import common


def run(args) -> int:
    patch, config = common.load()
    found = common.installs(args)
    with lock.write_lock():
        outcomes = [engine.reconcile(i, patch, config, dry_run=args.dry_run) for i in found]
        if not args.dry_run:
            for install in found:  # a hand-run apply lifts the watcher's back-off
                if state.install_record(install.package_dir).get("backoff"):
                    state.update_install_record(install.package_dir, backoff=None)
    common.print_outcomes(outcomes, args.json)
    return 0 if all(o.ok for o in outcomes) else 1
