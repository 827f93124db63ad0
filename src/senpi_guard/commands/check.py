"""`senpi-guard check SPEC|TARBALL|DIR`: a pre-flight before `senpi update`. Every patch is
dry-applied and replayed with node on a senpi release that is not installed: an npm spec is fetched
with `npm pack --ignore-scripts` (the package's scripts never run), a tarball is unpacked, a folder
is read as it is. Nothing is installed, nothing of the release is written. As root, none of it is
unpacked or run as root (commands/release.py)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from senpi_guard import discover, ui
from senpi_guard.commands import common, release
from senpi_guard.core.patch.classify import State
from senpi_guard.errors import FatalError
from senpi_guard.io.store import Store
from senpi_guard.io.unpack import Caps
from senpi_guard.layers import extension
from senpi_guard.layers.dist import Reconciler
from senpi_guard.prove import sandbox

SUMMARY = "pre-flight a senpi release (npm spec, tarball or folder): would every patch apply? installs nothing"
EXAMPLE = (
    "senpi-guard check @code-yeongyu/senpi@latest   # before `senpi update`\n"
    "  senpi-guard check ./senpi-2026.8.22-2.tgz --json"
)
EXITS = "0 every patch applies (or has nothing to repair) and its replay passes; 1 anything else"


def configure(parser) -> None:
    parser.add_argument(
        "release",
        metavar="SPEC|TARBALL|DIR",
        help="an npm spec (@code-yeongyu/senpi@VERSION), a .tgz, or an unpacked package folder",
    )
    common.add_json(parser)


def _patch_row(patch, config, install, store: Store) -> dict[str, Any]:
    reconciler = Reconciler(patch, config, store, reuse_stored_replays=False)
    shape = reconciler.inspect(install).shape
    outcome = reconciler.reconcile(install, dry_run=True)
    report = outcome.report
    row = {
        "patch": patch.name,
        "shape": shape.range if shape else None,
        "state": outcome.before,
        "ok": outcome.ok,
        "dist_ok": outcome.ok,
        "would_write": outcome.would_write,
        "detail": outcome.detail,
        "checks": report.checks_run if report else 0,
        "extension": None,
    }
    if patch.extension is not None and outcome.before not in (State.UNSUPPORTED, State.ERROR):
        try:
            ext = extension.replay(patch, config, patch.render_extension(config), [install], store, reuse=False)
            row["extension"] = {
                "ok": ext.ok,
                "checks": ext.checks_run,
                "host": ext.stats.get("host"),
                "failures": [str(f) for f in ext.failures[:3]],
            }
            row["ok"] = row["ok"] and ext.ok
        except FatalError as exc:
            row["extension"] = {"ok": False, "checks": 0, "host": None, "failures": [str(exc)]}
            row["ok"] = False
    return row


def _line(version: str, row: dict[str, Any]) -> str:
    shape = f"shape {row['shape']}, " if row["shape"] else ""
    ext = row["extension"]
    ext_text = (
        ""
        if ext is None
        else (
            f"; extension {ext['checks']} checks passed"
            if ext["ok"]
            else f"; the extension FAILS: {'; '.join(ext['failures'])}"
        )
    )
    if not row["dist_ok"]:
        return f"senpi {version} [{row['patch']}]: {ui.paint('BREAKS', 'bad')}: {row['detail']}{ext_text}"
    if row["state"] == State.CLEAN:
        return f"senpi {version} [{row['patch']}]: nothing to repair"
    what = "patchable" if row["would_write"] else str(row["state"])
    return f"senpi {version} [{row['patch']}]: {shape}{what}, {row['checks']} checks passed{ext_text}"


def run(args) -> int:
    patches, config = common.load()
    # (named with the pid: sandbox.sweep removes what a killed check left)
    with tempfile.TemporaryDirectory(prefix=f"{sandbox.CHECK_PREFIX}{os.getpid()}-") as scratch:
        caps = Caps(int(config.check_max_bytes), int(config.check_max_entries))
        package_dir = release.release_dir(args.release, Path(scratch), caps)
        install = discover.describe(package_dir, "check")
        if install is None:
            raise FatalError(
                f"{args.release}: not a {discover.PACKAGE_NAME} package (its package.json names "
                "another package, or is missing)"
            )
        # a store of its own: records, backups and remembered replays of a release never installed
        # must not mix with the real installs' ones
        store = Store(Path(scratch) / "data", Path(scratch) / "state")
        rows = [_patch_row(patch, config, install, store) for patch in patches]
    if args.json:
        print(
            json.dumps(
                {
                    "release": args.release,
                    "version": install.version,
                    "patches": rows,
                    "ok": all(r["ok"] for r in rows),
                },
                indent=2,
            )
        )
    else:
        for row in rows:
            print(_line(install.version, row))
    return 0 if all(row["ok"] for row in rows) else 1
