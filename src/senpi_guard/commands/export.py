"""`senpi-guard export PACKAGE_DIR`: the extension layer as a senpi package, for `senpi install`."""

from __future__ import annotations

import json
from pathlib import Path

from senpi_guard.commands import common
from senpi_guard.errors import FatalError
from senpi_guard.layers import pipeline

SUMMARY = "write the extension layer as a senpi package (for `senpi install PACKAGE_DIR`)"
EXAMPLE = (
    "senpi-guard export ~/senpi-guard-package && senpi install ~/senpi-guard-package\n"
    "  senpi-guard export ~/senpi-guard-package --json   # again: the earlier export is replaced"
)
EXITS = (
    "0 written (or already as it would be written); 1 the folder is not empty and not an earlier "
    "export, or cannot be written (nothing changed)"
)


def configure(parser) -> None:
    parser.add_argument(
        "package_dir", type=Path, metavar="PACKAGE_DIR", help="a new or empty folder, or an earlier export"
    )
    parser.add_argument(
        "--patch",
        metavar="NAME",
        default=None,
        help="the patch whose extension layer to export (default: the one that has one)",
    )
    common.add_json(parser)


def _patch(patches, name: str | None):
    having = [p for p in patches if p.extension is not None]
    if name is None:
        if not having:
            raise FatalError("no patch has an extension layer: there is nothing to export")
        return having[0]
    for patch in having:
        if patch.name == name:
            return patch
    known = ", ".join(p.name for p in having) or "none"
    raise FatalError(
        f"export --patch {name}: no such patch with an extension layer (known: {known}); nothing was written"
    )


def run(args) -> int:
    patches, config = common.load()
    patch = _patch(patches, args.patch)
    folder, changed = pipeline.export_package(patch, config, args.package_dir)
    if args.json:
        print(
            json.dumps({"package_dir": str(folder), "patch": patch.name, "version": patch.version, "changed": changed})
        )
        return 0
    what = "written" if changed else "already as export writes it"
    print(f"{patch.name} v{patch.version} as a senpi package: {folder} ({what})")
    print(f"install it: senpi install {folder}   (remove: senpi remove {folder})")
    return 0
