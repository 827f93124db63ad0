"""`senpi-guard verify`: replay the fixtures through the installed code, change nothing."""

from __future__ import annotations

from senpi_guard import ui
from senpi_guard.commands import common
from senpi_guard.layers.dist import Reconciler

SUMMARY = "replay the fixture contexts through each install's code with node; change nothing"
EXAMPLE = "senpi-guard verify --json"
EXITS = "0 every install is patched and passes every check; 1 anything else"


def configure(parser) -> None:
    common.add_install_options(parser)
    common.add_foreign_root(parser)


def run(args) -> int:
    patch, config = common.load()
    reconciler = Reconciler(patch, config, allow_foreign_root=args.allow_foreign_root,
                            reuse_stored_replays=False)  # a fresh proof, unless two installs are identical
    outcomes = []
    for install in common.installs(args):
        ui.progress(f"senpi {install.version} ({install.manager}): replaying the fixtures with node…")
        outcomes.append(reconciler.verify(install))
    common.print_outcomes(outcomes, args.json, next_steps=True)
    return 0 if all(o.ok for o in outcomes) else 1
