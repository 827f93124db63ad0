from __future__ import annotations

from senpi_guard import engine, lock
from senpi_guard.commands import common


def run(args) -> int:
    patch, config = common.load()
    found = common.installs(args)
    with lock.write_lock():
        outcomes = [engine.revert(i, patch, config, from_edit=args.from_edit) for i in found]
    common.print_outcomes(outcomes, args.json)
    return 0 if all(o.ok for o in outcomes) else 1
