"""`senpi-guard revert`: give every install its original bytes back."""

from __future__ import annotations

from senpi_guard import extension
from senpi_guard.commands import common
from senpi_guard.reconcile import Reconciler

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
        layer = extension.remove(patch, config, reconciler.store) if patch.extension else None
    common.print_outcomes(outcomes, args.json, layer=layer)
    return 0 if all(o.ok for o in outcomes) and (layer is None or layer.ok) else 1
