"""`senpi-guard revert`: give every install its original bytes back."""

from __future__ import annotations

from senpi_guard.commands import common
from senpi_guard.layers import extension_plan
from senpi_guard.layers.dist import Reconciler

SUMMARY = "restore the original bytes of every patched install and remove the extension layer"
EXAMPLE = "senpi-guard revert\n  senpi-guard revert --from-edit   # ignore backups, remove the edit"
EXITS = "0 every install is back to its original bytes (or was never patched); 1 anything else"


def configure(parser) -> None:
    common.add_install_options(parser)
    parser.add_argument("--from-edit", action="store_true",
                        help="ignore backups; restore by removing the edit")


def run(args) -> int:
    patch, config = common.load()
    found = common.installs(args)
    reconciler = Reconciler(patch, config)
    with reconciler.store.lock():
        outcomes = [reconciler.revert(i, from_edit=args.from_edit) for i in found]
        layers = extension_plan.remove_all(patch, config, reconciler.store, found) if patch.extension else []
    common.print_outcomes(outcomes, args.json, layers=layers)
    return 0 if all(o.ok for o in outcomes) and all(layer.ok for layer in layers) else 1
