"""`senpi-guard verify`: replay the fixtures through what is installed (both layers), change nothing.

A replay identical, by everything its result depends on, to one that passed before is not run again
(each line says when it passed); `--fresh` runs every replay with node."""

from __future__ import annotations

import contextlib
import sys

from senpi_guard.commands import common, results_view
from senpi_guard.errors import FatalError
from senpi_guard.layers import pipeline
from senpi_guard.prove import engines, nodes

SUMMARY = "replay the fixtures through each install's code and the extension with node; change nothing"
EXAMPLE = "senpi-guard verify --json"
EXITS = (
    "0 every install is patched and the extension installed (or held by `senpi-guard revert`, what apply "
    "would write passing), and every check passes; 1 anything else"
)


def configure(parser) -> None:
    common.add_install_options(parser)
    common.add_foreign_root(parser)
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="run every replay with node (default: a replay identical to one that passed before, by the bytes,"
        " node and checks it depends on, is not run again)",
    )


def run(args) -> int:
    patches, config = common.load()
    found = common.installs(args)
    flow = pipeline.build(patches, config, allow_foreign_root=args.allow_foreign_root, fresh_proofs=args.fresh)
    flow.run("verify", found, pipeline.Run(allow_foreign_root=args.allow_foreign_root))
    results_view.print_results(flow, args.json, next_steps=True)
    for install in found:  # (after the results: the node they were proven with is not one senpi runs on)
        with contextlib.suppress(FatalError):  # (no node: the results said so)
            problem = engines.node_problem(install.package_dir, nodes.node_for(install.package_dir))
            if problem:
                print(f"node     {problem}", file=sys.stderr if args.json else sys.stdout)
    return 0 if flow.ok else 1
