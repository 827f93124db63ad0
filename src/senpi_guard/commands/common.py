"""Shared by the subcommands: which installs, the patch and config, printing."""

from __future__ import annotations

import json
from typing import Any

from senpi_guard import config as config_mod
from senpi_guard import install, patchset
from senpi_guard.engine import Outcome
from senpi_guard.errors import FatalError


def installs(args) -> list[install.Install]:
    found = install.explicit(args.root) if args.root else install.discover()
    if not found.installs:
        places = "\n".join(f"  - {place}" for place in found.searched)
        raise FatalError("no senpi install found (install @code-yeongyu/senpi, or pass --root "
                         f"PKG_DIR). Searched:\n{places}")
    return found.installs


def load() -> tuple[patchset.Patch, config_mod.Config]:
    patch = patchset.load()
    config = config_mod.load()
    patch.check_tags(config.tags)
    return patch, config


def outcome_json(outcome: Outcome) -> dict[str, Any]:
    report = outcome.report
    return {
        "package_dir": str(outcome.install.package_dir),
        "version": outcome.install.version,
        "manager": outcome.install.manager,
        "target": outcome.target,
        "state_before": outcome.before,
        "state": outcome.after,
        "ok": outcome.ok,
        "changed": outcome.changed,
        "upstream_dedupe": outcome.upstream_present,
        "detail": outcome.detail,
        "verification": None if report is None else {
            "ok": report.ok, "checks": report.checks_run, "node": report.node_version,
            "failures": [str(f) for f in report.failures]},
        "millis": outcome.millis,
    }


def print_outcomes(outcomes: list[Outcome], as_json: bool) -> None:
    if as_json:
        print(json.dumps({"installs": [outcome_json(o) for o in outcomes]}, indent=2))
        return
    for o in outcomes:
        print(f"senpi {o.install.version} ({o.install.manager})  {o.install.package_dir}")
        if o.target:
            print(f"  target   {o.target}")
        mark = "ok" if o.ok else "FAILED"
        print(f"  state    {o.before} -> {o.after}  ({mark}, {o.millis} ms)")
        if o.changed:
            print(f"  wrote    {', '.join(o.changed)}")
        if o.detail:
            print(f"  {'detail ' if o.ok else 'error: '}  {o.detail}")
        if o.diff:
            print(o.diff, end="")
