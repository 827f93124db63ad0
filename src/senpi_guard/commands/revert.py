"""`senpi-guard revert`: give every install its original bytes back and take the extension away;
both are held there (the watcher leaves them alone until `apply`)."""

from __future__ import annotations

from senpi_guard.commands import common
from senpi_guard.errors import FatalError
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
    found = common.installs(args, store_copies=True)
    # every layer there may be (an earlier config may have put one in place); the last applied comes off first
    unknown = [name for name in args.patch if name not in {p.name for p in patches}]
    if unknown:
        raise FatalError(
            f"revert --patch {unknown[0]}: no such patch (known: {', '.join(p.name for p in patches)}); "
            "nothing was changed"
        )
    flow = pipeline.build(patches, config, all_layers=True, only=tuple(args.patch))
    with flow.store.lock():
        flow.run("revert", found, pipeline.Run(from_edit=args.from_edit, alone=bool(args.patch)))
    common.print_results(flow, args.json)
    return 0 if flow.ok else 1
