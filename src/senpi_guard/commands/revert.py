"""`senpi-guard revert`: give every install its original bytes back and take the extension away;
both are held there (the watcher leaves them alone until `apply`)."""

from __future__ import annotations

import argparse

from senpi_guard.commands import common, results_view
from senpi_guard.errors import FatalError
from senpi_guard.io.store import Store
from senpi_guard.layers import pipeline

SUMMARY = "restore the original bytes of every patched install and remove the extension layer"
EXAMPLE = (
    "senpi-guard revert\n  senpi-guard revert --from-edit   # ignore backups, remove the edit\n"
    "  senpi-guard revert --patch hand-fix-hooks   # that patch only"
)
EXITS = "0 every install is back to its original bytes (or was never patched); 1 anything else"


def configure(parser) -> None:
    common.add_install_options(parser)
    parser.add_argument("--from-edit", action="store_true", help="ignore backups; restore by removing the edit")
    parser.add_argument(
        "--patch",
        action="append",
        metavar="NAME",
        default=[],
        help="take off only this patch (repeatable): a file other patches share is rebuilt from its "
        "original without it; held until the next `apply`, which puts it back",
    )


def run(args) -> int:
    patches, config = common.load()
    try:
        found = common.installs(args, store_copies=True)
    except common.NoInstallFound:  # (an extension may still be in an agent dir it was written to)
        if args.root or not pipeline.extension_written(Store()):
            raise
        found = []
    # every layer there may be (an earlier config may have put one in place); the last applied comes off first
    unknown = [name for name in args.patch if name not in {p.name for p in patches}]
    if unknown:
        raise FatalError(
            f"revert --patch {unknown[0]}: no such patch (known: {', '.join(p.name for p in patches)}); "
            "nothing was changed"
        )
    flow = pipeline.build(patches, config, all_layers=True, only=tuple(args.patch))
    with flow.store.lock():
        asked = pipeline.Run(
            from_edit=args.from_edit, alone=bool(args.patch), everywhere=not args.root, others=_others(args, found)
        )
        flow.run("revert", found, asked)
    results_view.print_results(flow, args.json)
    return 0 if flow.ok else 1


def _others(args, named: list) -> tuple:
    """With --root: every other install found that no revert holds (an agent dir one of them uses
    keeps its extension; once each is reverted, the last revert takes it out)."""
    if not args.root:
        return ()
    try:
        everything = common.installs(argparse.Namespace(root=[]), store_copies=True)
    except common.NoInstallFound:
        return ()
    asked, store = {i.real_dir for i in named}, Store()
    return tuple(i for i in everything if i.real_dir not in asked and store.hold(i.package_dir) is None)
