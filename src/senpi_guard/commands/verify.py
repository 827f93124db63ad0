"""`senpi-guard verify`: replay the fixtures through what is installed (both layers), change nothing."""

from __future__ import annotations

from senpi_guard.commands import common
from senpi_guard.layers import pipeline

SUMMARY = "replay the fixtures through each install's code and the extension with node; change nothing"
EXAMPLE = "senpi-guard verify --json"
EXITS = "0 every install is patched, the extension is installed, and every check passes; 1 anything else"


def configure(parser) -> None:
    common.add_install_options(parser)
    common.add_foreign_root(parser)


def run(args) -> int:
    patches, config = common.load()
    found = common.installs(args)
    flow = pipeline.build(patches, config, allow_foreign_root=args.allow_foreign_root)
    flow.run("verify", found, pipeline.Run(allow_foreign_root=args.allow_foreign_root))
    common.print_results(flow, args.json, next_steps=True)
    return 0 if flow.ok else 1
