"""`senpi-guard apply`: patch every install, verified by replay before anything is written."""

from __future__ import annotations

from senpi_guard import ui
from senpi_guard.commands import common
from senpi_guard.layers import extension_plan
from senpi_guard.layers.dist import Reconciler

SUMMARY = "patch every senpi install (verified with node before writing)"
EXAMPLE = ("senpi-guard apply            # every install found\n"
           "  senpi-guard apply --dry-run  # verify and show the diff, write nothing")
EXITS = ("0 every install ended patched (or left to upstream by config) and the extension layer is "
         "installed (unless `layers` leaves one out); 1 anything else")


def configure(parser) -> None:
    common.add_install_options(parser)
    common.add_foreign_root(parser)
    parser.add_argument("--dry-run", action="store_true", help="verify and show the diff; write nothing")
    parser.add_argument("--here", action="store_true",
                        help="also put the extension in the agent dir senpi uses from this folder (a project's "
                             ".senpi/agent), and keep it there from now on")


def run(args) -> int:
    patch, config = common.load()
    found = common.installs(args)
    reconciler = Reconciler(patch, config, allow_foreign_root=args.allow_foreign_root)
    outcomes, layers = [], []
    with reconciler.store.lock():
        for install in found if "dist" in config.layers else []:
            ui.progress(f"senpi {install.version} ({install.manager}): locating, patching and "
                        "replaying the fixtures with node…")
            if not args.dry_run:  # an apply by hand lifts the hold a revert left
                reconciler.store.clear_hold(install.package_dir)
            outcomes.append(reconciler.reconcile(install, dry_run=args.dry_run))
            record = reconciler.store.install_record(install.package_dir)
            if not args.dry_run and record.get("backoff"):  # a hand-run apply lifts the watcher's back-off
                reconciler.store.update_install(install.package_dir, backoff=None)
        if "extension" in config.layers and patch.extension is not None:
            ui.progress("extension layer: replaying the fixture sessions through it with node…")
            upstream = {o.install.package_dir: o.upstream_present for o in outcomes}

            def upstream_of(install) -> bool:
                if install.package_dir not in upstream:
                    upstream[install.package_dir] = reconciler.inspect(install).upstream_present
                return upstream[install.package_dir]

            layers = extension_plan.install_all(patch, config, reconciler.store, found, upstream_of,
                                                args.dry_run, args.allow_foreign_root, args.here)
    common.print_outcomes(outcomes, args.json, layers=layers)
    return 0 if all(o.ok for o in outcomes) and all(layer.ok for layer in layers) else 1
