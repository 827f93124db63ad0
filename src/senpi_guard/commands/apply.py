"""`senpi-guard apply`: every layer of every patch on every install, verified by replay before
anything is written."""

from __future__ import annotations

from senpi_guard.commands import common, results_view
from senpi_guard.layers import pipeline

SUMMARY = "patch every senpi install (verified with node before writing)"
EXAMPLE = (
    "senpi-guard apply            # every install found\n"
    "  senpi-guard apply --dry-run  # verify and show the diff, write nothing"
)
EXITS = (
    "0 every install ended patched (or left to upstream by config) and the extension layer is "
    "installed (unless `layers` leaves one out); 1 anything else"
)


def configure(parser) -> None:
    common.add_install_options(parser)
    common.add_foreign_root(parser)
    parser.add_argument("--dry-run", action="store_true", help="verify and show the diff; write nothing")
    parser.add_argument(
        "--here",
        action="store_true",
        help="also put the extension in the agent dir senpi uses from this folder (a project's "
        ".senpi/agent), and keep it there from now on",
    )


def run(args) -> int:
    patches, config = common.load()
    found = common.installs(args)
    flow = pipeline.build(patches, config, allow_foreign_root=args.allow_foreign_root)
    with flow.store.lock():
        flow.run(
            "apply",
            found,
            pipeline.Run(dry_run=args.dry_run, here=args.here, allow_foreign_root=args.allow_foreign_root),
        )
    results_view.print_results(flow, args.json)
    return 0 if flow.ok else 1
