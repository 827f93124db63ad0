from __future__ import annotations

import time

from senpi_guard import edit, engine, state
from senpi_guard.commands import common
from senpi_guard.errors import FatalError


def verify_install(install, patch, config) -> engine.Outcome:
    insp = engine.inspect(install, patch, config)
    outcome = engine.Outcome.of(insp)
    if insp.state in (engine.UNSUPPORTED, engine.ERROR):
        return outcome
    started = time.monotonic()
    try:
        pairs = engine.module_pairs(insp, patch, config)
        report = engine.replay(install, patch, config, pairs)
    except FatalError as exc:
        outcome.detail = str(exc)
        return outcome
    outcome.report = report
    outcome.millis = int((time.monotonic() - started) * 1000)
    installed = insp.state == state.PATCHED
    if installed:
        engine.record_verification(install, patch, config, report,
                                   {tf.rel: edit.sha256(tf.snapshot.data) for tf in insp.files})
    what = "the installed patch" if installed else "the patch apply would write (not installed)"
    if report.ok:
        outcome.detail = f"{what}: {report.checks_run} checks passed (node {report.node_version})"
        for name in ("incident-3", "incident-21", "incident-70"):
            stats = report.stats.get(name)
            if stats:
                outcome.detail += (f"; {name}: {stats['originalBytes']:,} -> "
                                   f"{stats['patchedBytes']:,} bytes")
    else:
        outcome.detail = f"{what}: " + "; ".join(str(f) for f in report.failures[:3])
    outcome.ok = report.ok and installed
    return outcome


def run(args) -> int:
    patch, config = common.load()
    outcomes = [verify_install(i, patch, config) for i in common.installs(args)]
    common.print_outcomes(outcomes, args.json)
    return 0 if all(o.ok for o in outcomes) else 1
