"""`senpi-guard check SPEC|TARBALL|DIR`: a pre-flight before `senpi update`. Every patch is
dry-applied and replayed with node on a senpi release that is not installed: an npm spec is fetched
with `npm pack --ignore-scripts` (the package's scripts never run), a tarball is unpacked, a folder
is read as it is. Nothing is installed, nothing of the release is written. As root, none of it is
unpacked or run as root (commands/release.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from senpi_guard import discover, ui
from senpi_guard.commands import common, release
from senpi_guard.core.patch.classify import State
from senpi_guard.errors import FatalError
from senpi_guard.io.store import Store
from senpi_guard.io.unpack import Caps
from senpi_guard.layers import pipeline
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


def _patch_row(patch_name: str, results: list[pipeline.Result]) -> dict[str, Any]:
    """One patch's line of the check, from what its layers' `check` step found."""
    dist = next((r for r in results if r.layer == "dist"), None)
    ext = next((r for r in results if r.layer == "extension"), None)
    report = dist.report if dist else None
    row = {
        "patch": patch_name,
        "shape": (dist.shape or None) if dist else None,
        "state": dist.before if dist else None,
        "ok": all(r.ok for r in results),
        "dist_ok": dist.ok if dist else True,
        "would_write": dist.would_write if dist else [],
        "detail": dist.detail if dist else "",
        "checks": report.checks_run if report else 0,
        "extension": None,
    }
    if ext is not None:
        found = ext.report
        row["extension"] = {
            "ok": ext.ok,
            "checks": found.checks_run if found else 0,
            "host": found.stats.get("host") if found else None,
            "failures": [str(f) for f in found.failures[:3]] if found else [ext.detail],
        }
    return row


# how the extension's proof ran (a dist-only release has none of senpi's dependencies, so its own
# loader and runner do not import: the checks then run through a stand-in host)
HOSTS = {"senpi": " through senpi's own extension runner", "minimal": " through a minimal host, not senpi's runner"}


def _line(version: str, row: dict[str, Any]) -> str:
    shape = f"shape {row['shape']}, " if row["shape"] else ""
    ext = row["extension"]
    ext_text = (
        ""
        if ext is None
        else (
            f"; extension {ext['checks']} checks passed{HOSTS.get(ext['host'], '')}"
            if ext["ok"]
            else f"; the extension FAILS: {'; '.join(ext['failures'])}"
        )
    )
    if not row["dist_ok"]:
        return f"senpi {version} [{row['patch']}]: {ui.paint('BREAKS', 'bad')}: {row['detail']}{ext_text}"
    if row["state"] == State.CLEAN:
        return f"senpi {version} [{row['patch']}]: nothing to repair"
    what = "patchable" if row["would_write"] else str(row["state"] or "the dist layer is off")
    return f"senpi {version} [{row['patch']}]: {shape}{what}, {row['checks']} checks passed{ext_text}"


def run(args) -> int:
    patches, config = common.load()
    with sandbox.check_scratch() as scratch:
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
        flow = pipeline.build(patches, config, store, fresh_proofs=True)
        results = flow.run("check", [install], pipeline.Run(dry_run=True))
        rows = [_patch_row(p.name, [r for r in results if r.patch == p.name]) for p in patches]
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
