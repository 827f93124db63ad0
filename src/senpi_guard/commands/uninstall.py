"""`senpi-guard uninstall`: take away everything senpi-guard put on this machine. Every install is
reverted and every extension taken out (as `revert`), the user service removed (as `daemon
uninstall`), then senpi-guard's state, data and cache folders, and the folders it made elsewhere
that are empty again (io/made), all but the hand-edited files kept aside in the data folder (the
user's: --purge removes them). It refuses, changing nothing, while anything could not be given its
original bytes."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import Any

from senpi_guard.commands import common
from senpi_guard.commands import daemon as daemon_cmd
from senpi_guard.commands.uninstall_view import Left, Why, report
from senpi_guard.errors import FatalError
from senpi_guard.io import config as config_mod
from senpi_guard.io import made, write
from senpi_guard.io.folders import opened
from senpi_guard.io.store import Store
from senpi_guard.keep import service
from senpi_guard.layers import pipeline

SUMMARY = "revert every install, remove the extension, the service and senpi-guard's own folders"
EXAMPLE = (
    "senpi-guard uninstall --dry-run   # say what it would do, change nothing\n"
    "  senpi-guard uninstall && pipx uninstall senpi-guard"
)
EXITS = "0 everything senpi-guard made is gone (--dry-run: it would be); 1 refused (nothing changed) or failed"
DESCRIPTION = (
    "Revert every install senpi-guard patched and take its extension out of every agent dir it put "
    "one in (a project's from `apply --here` too), remove the user service, then remove senpi-guard's "
    "state, data and cache folders and the folders it made elsewhere, when they are empty "
    "(a folder you or senpi made stays). config.toml and the hand-edited files senpi-guard kept aside "
    "(a patched file or the extension you edited: apply, revert and the watcher keep them) are yours: "
    "kept unless --purge. It refuses, naming them and changing nothing, while an install or an "
    "extension cannot be reverted (not writable, no original to give back), or a watcher runs "
    "outside the service."
)
WATCHER_STOP_WAIT = 15.0  # seconds for the service's watcher to exit once the service is stopped


def configure(parser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="say what it would do; change nothing")
    parser.add_argument(
        "--purge", action="store_true", help="also remove your config.toml and the hand-edited files kept aside"
    )
    common.add_json(parser)


def _installs(store: Store) -> tuple[list, set[str]]:
    """Every install found (the recorded ones included), and the package dirs the records name."""
    recorded = {str(p.resolve()) for p in store.recorded_installs()}
    try:
        found = common.installs(argparse.Namespace(root=[]), store_copies=True)
    except common.NoInstallFound:
        found = []
    return found, recorded


def _revert_rows(flow: pipeline.Pipeline, found: list, recorded: set[str]) -> tuple[list, list[pipeline.Change]]:
    """The installs to revert and the plan that gives everything its original, layer by layer. An
    install senpi-guard cannot read as a package (unsupported), or cannot inspect and never
    recorded, was never patched by it: left out."""
    changes = flow.revert_plan(found)
    skipped = {
        str(c.installs[0].resolve())
        for c in changes
        if c.layer == "dist"
        and c.installs
        and (c.found == "unsupported" or (c.found == "error" and str(c.installs[0].resolve()) not in recorded))
    }
    kept = [i for i in found if str(i.package_dir.resolve()) not in skipped]
    return kept, (flow.revert_plan(kept) if skipped else changes)


def _service_place() -> Path | None:
    if sys.platform == "darwin":
        return service.launchd_plist_path()
    return service.systemd_unit_path() if sys.platform.startswith("linux") else None


def _blockers(changes: list[pipeline.Change], store: Store, unit: Path | None) -> list[str]:
    found = [c.detail for c in changes if not c.executable]
    watcher = store.running_watcher()
    if watcher and not (unit is not None and unit.exists() and _service_manager_works()):
        found.append(
            f"a watcher runs outside the service (pid {watcher['pid']}) and would patch again: stop it "
            f"(kill {watcher['pid']}), then retry"
        )
    return found


def _service_manager_works() -> bool:
    return service.no_user_manager() is None


def _own_folders(store: Store) -> list[Path]:
    own = [store.state_dir, store.data_dir, *made.own_folders()]
    return list(dict.fromkeys(Path(os.path.abspath(p)) for p in own))


def _config_plan(purge: bool) -> tuple[Path | None, Path]:
    """The config file to remove (--purge, if it is there) and the one kept (else)."""
    path = config_mod.config_path()
    return (path if purge and path.is_file() else None), path


def _plan(store: Store, unit: Path | None, purge: bool) -> dict[str, Any]:
    refused: list[str] = []  # (as root: one of its folders another user could change: not read, not removed)
    own = [p for p in _own_folders(store) if os.path.lexists(p)]
    for folder in own:
        if (problem := made.foreign(folder)) is not None:
            refused.append(made.foreign_text(folder, problem))
    own = [p for p in own if made.foreign(p) is None]
    gone, config = _config_plan(purge)
    recorded = sorted(made.recorded(), key=lambda p: len(p.parts), reverse=True)
    if purge and gone is not None and config.parent == config_mod.config_dir():
        recorded.append(config.parent)  # (senpi-guard's own config folder, once config.toml is gone)
    return {
        "service": str(unit) if unit is not None and unit.exists() else None,
        "own": own,
        "data_dir": store.data_dir,
        "edits": [] if purge else [Path(os.path.abspath(p)) for p in store.kept_copies()],
        "made": [p for p in recorded if p not in own and not any(p.is_relative_to(o) for o in own)],
        "config_removed": gone,
        "config_kept": None if gone is not None or not config.is_file() else config,
        "refused": refused,
    }


def _remove_service(store: Store) -> list[str]:
    """`daemon uninstall` (what it removed, for the report); then waits for its watcher to exit."""
    removed = daemon_cmd.remove()
    deadline = time.monotonic() + WATCHER_STOP_WAIT
    while (watcher := store.running_watcher()) and time.monotonic() < deadline:
        time.sleep(0.1)
    if watcher:
        raise FatalError(
            f"the service is removed but its watcher (pid {watcher['pid']}) still runs; every install "
            f"is reverted and senpi-guard's folders are kept: stop it (kill {watcher['pid']}), then "
            "run `senpi-guard uninstall` again"
        )
    return [str(path) for path in removed]


def _remove_folders(plan: dict[str, Any]) -> tuple[list[str], list[Left]]:
    """senpi-guard's own folders whole; each folder it made only when empty. (removed, left) The
    folders it made that hold none of its own go first: the list of them lives in its state folder,
    and a run stopped after that folder is gone would not know them again."""
    removed: list[str] = []
    left: list[Left] = []
    goes_first = [*plan["own"], *filter(None, [plan["config_removed"]])]
    above = [f for f in plan["made"] if any(o.is_relative_to(f) for o in goes_first)]
    _remove_empty([f for f in plan["made"] if f not in above], removed, left)
    if plan["edits"]:  # (the folders made above the kept files stay, recorded where those files are)
        holding = [f for f in above if any(edit.is_relative_to(f) for edit in plan["edits"])]
        made.keep_for_data(holding)
        plan = {**plan, "edits": [*plan["edits"], Path(os.path.abspath(made.data_record_file()))]}
        above = [f for f in above if f not in holding]
    for folder in plan["own"]:
        try:
            if folder.is_symlink() or not folder.is_dir():
                folder.unlink()
            elif any(edit.is_relative_to(folder) for edit in plan["edits"]):
                _remove_all_but(folder, set(plan["edits"]))
                continue  # (not removed: the kept lines name what stays)
            else:
                shutil.rmtree(folder)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise FatalError(
                f"cannot remove {folder}: {exc.strerror}; fix its permissions, then run `senpi-guard uninstall` again"
            ) from exc
        removed.append(str(folder))
    if plan["config_removed"] is not None:
        plan["config_removed"].unlink(missing_ok=True)
        removed.append(str(plan["config_removed"]))
    _remove_empty(above, removed, left)
    return removed, left


def _remove_all_but(folder: Path, keep: set[Path]) -> None:
    """Everything under `folder` but the files in `keep` and the folders that hold them. Each entry
    is removed relative to its opened folder (os.fwalk, no link followed), as shutil.rmtree does: a
    folder swapped for a link meanwhile never steers a removal elsewhere (root over a user's folder)."""
    kept = {p.relative_to(folder) for p in keep if p.is_relative_to(folder)}
    for top, folders, files, top_fd in os.fwalk(folder, topdown=False, follow_symlinks=False):
        here = Path(top).relative_to(folder)
        for name in files:
            if here / name not in kept:
                os.unlink(name, dir_fd=top_fd)
        for name in folders:
            if stat.S_ISLNK(os.stat(name, dir_fd=top_fd, follow_symlinks=False).st_mode):
                os.unlink(name, dir_fd=top_fd)
            else:
                with contextlib.suppress(OSError):  # (not empty: it holds a kept file)
                    os.rmdir(name, dir_fd=top_fd)


def _remove_empty(folders: list[Path], removed: list[str], left: list[Left]) -> None:
    """Each folder, when it is empty, removed relative to its parent opened as io/folders opens one
    (as root no other user's link is followed on the way, and the folder itself is never a link
    followed): a user who swaps ~/.senpi for a link meanwhile steers no removal to where it points."""
    for folder in folders:
        try:
            with opened(folder.parent) as parent:
                if parent is not None:
                    _remove_if_empty(parent, folder, removed, left)
        except FatalError as exc:
            left.append(Left(folder, Why.FAILED, str(exc)))
        except OSError as exc:
            left.append(Left(folder, Why.FAILED, str(exc.strerror)))


def _remove_if_empty(parent: int, folder: Path, removed: list[str], left: list[Left]) -> None:
    try:
        if not stat.S_ISDIR(os.stat(folder.name, dir_fd=parent, follow_symlinks=False).st_mode):
            return
    except FileNotFoundError:
        return
    if write.hands_off(os.fstat(parent).st_mode):  # (its owner's "hands off", respected even as root)
        left.append(Left(folder, Why.HANDS_OFF))
        return
    try:
        os.rmdir(folder.name, dir_fd=parent)
    except OSError as exc:
        full = exc.errno in (errno.ENOTEMPTY, errno.EEXIST)
        left.append(Left(folder, Why.NOT_EMPTY) if full else Left(folder, Why.FAILED, str(exc.strerror)))
        return
    removed.append(str(folder))


def run(args) -> int:
    patches, config = common.load()
    store = Store()
    flow = pipeline.build(patches, config, store, all_layers=True)
    unit = _service_place()
    # (checked before the lock too: taking it makes the state folder, and a refusal changes nothing)
    kept, rows = _checked(flow, store, unit)
    if args.dry_run:
        report(args, rows, _plan(store, unit, args.purge), [], [], dry_run=True, installs=tuple(kept))
        return 0
    before = _plan(store, unit, args.purge)  # (taking the lock makes the state folder: not a change of ours)
    existed = {str(p) for p in [*before["own"], *before["made"], before["config_removed"]] if p and p.exists()}
    with store.lock():
        kept, rows = _checked(flow, store, unit)  # (again: a watcher may have written meanwhile)
        plan = _plan(store, unit, args.purge)
        flow.run("revert", kept, pipeline.Run())
        if not flow.ok:
            failed = [
                f"{getattr(r, 'path', None) or r.install.package_dir}: {r.detail}" for r in flow.results if not r.ok
            ]
            raise FatalError(
                f"revert failed, so nothing else was removed (your backups are kept): {'; '.join(failed)}; "
                "fix that, then run `senpi-guard uninstall` again"
            )
        said = _remove_service(store) if plan["service"] else []
        plan = _plan(store, unit, args.purge)  # (again: the revert's holds may have made the data folder)
    removed, left = _remove_folders(plan)
    removed = [path for path in removed if path in existed]
    report(args, rows, plan, said + removed, left, dry_run=False, flow=flow, installs=tuple(kept))
    return 0


def _checked(flow: pipeline.Pipeline, store: Store, unit: Path | None) -> tuple[list, list[pipeline.Change]]:
    """The installs to revert and the plan, after refusing (FatalError) while anything blocks it."""
    found, recorded = _installs(store)
    kept, rows = _revert_rows(flow, found, recorded)
    _refuse(_blockers(rows, store, unit))
    return kept, rows


def _refuse(blockers: list[str]) -> None:
    if blockers:
        raise FatalError(
            f"uninstall refused, nothing was changed: {len(blockers)} thing(s) cannot be reverted: "
            + "; ".join(blockers)
        )
