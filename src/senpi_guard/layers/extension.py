"""The extension layer: one senpi extension file in <agent dir>/extensions/, rendered from the patch
(same tags, same marker), proven by replaying fixture sessions through it before it is written
(layers/extension_replay), and found again by its header line (never by folder contents: every
other file there is the user's).

States: `installed` (what this senpi-guard renders), `stale` (ours, from another version or
config), `modified` (ours, edited since: its content no longer matches the sha256 in its header),
`absent`, `foreign` (a file of that name that is not ours: never touched), and `package` (the
agent dir's settings list our extension as a senpi package, layers/package: it is that agent dir's
extension layer; apply never writes the file beside it, revert leaves the package to the user)."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

from senpi_guard.core.patch import reshape
from senpi_guard.core.patch.apply import header_of
from senpi_guard.core.patch.definition import Patch
from senpi_guard.core.states import State
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError, fix_of
from senpi_guard.io import write
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.io.visible import visible
from senpi_guard.io.write import os_error
from senpi_guard.layers import package
from senpi_guard.layers.change import Change, Step, Want
from senpi_guard.layers.execute import Done, Ready, execute
from senpi_guard.layers.extension_replay import replay
from senpi_guard.layers.extension_state import LayerOutcome, LayerStatus
from senpi_guard.prove.verify import VerifyReport


def target_path(patch: Patch, agent_dir: Path) -> Path:
    return agent_dir / "extensions" / patch.extension.file_name


def inspect(patch: Patch, config: Config, agent_dir: Path) -> LayerStatus:
    """What serves as the extension layer in the agent dir: a package of ours its settings list,
    else our file (or what stands in its place)."""
    found = package.package_in(patch, config, agent_dir)
    if found is None:
        return inspect_file(patch, config, agent_dir)
    shown = visible(found.path)  # (a folder a user named: a settings entry's, shown escaped)
    if found.off:  # (senpi loads none of it: senpi-guard's own file is this agent dir's layer)
        status = inspect_file(patch, config, agent_dir)
        note = (
            f"the senpi package {shown} is listed, but {visible(found.off)}; senpi-guard's own file is the layer here"
        )
        status.detail = f"{status.detail}; {note}" if status.detail else note
        return status
    detail = f"the senpi package {shown} ({found.settings.name} lists {visible(repr(found.source))})"
    if not found.current:
        detail += f"; {visible(found.differs)}: run `senpi-guard export {shown}`"
    loose = inspect_file(patch, config, agent_dir)
    beside = loose.path if loose.state in ("installed", "stale", "modified") else None
    if beside is not None:
        detail += f"; senpi-guard's own {beside} is there too, and senpi loads both"
    return LayerStatus("package", found.path, detail, package=found, current=found.current, beside=beside)


def inspect_file(patch: Patch, config: Config, agent_dir: Path) -> LayerStatus:
    """senpi-guard's own extension file in the agent dir's extensions/."""
    path = target_path(patch, agent_dir)
    try:
        if path.is_symlink():
            return LayerStatus("foreign", path, "a symbolic link, not senpi-guard's file")
        data = write.read_in(path.parent, path.name)
    except OSError as exc:
        raise os_error(exc, "read", path, "fix the permissions of the extensions folder") from exc
    if data is None:
        return LayerStatus("absent", path)
    header = header_of(data)
    if header is None or header.get("layer") != "extension" or header["name"] != patch.name:
        return LayerStatus("foreign", path, "it has no senpi-guard header: it is not senpi-guard's", data)
    body = data[data.index(b"\n") + 1 :]
    if hashlib.sha256(body).hexdigest() != header.get("content-sha256"):
        return LayerStatus("modified", path, "edited since senpi-guard wrote it", data)
    if data != patch.render_extension(config).encode("utf-8"):
        what = reshape.change(patch, reshape.slot_in(data), config)
        cost = f"; {reshape.cost('extension', what)}" if what else ""
        return LayerStatus(
            "stale",
            path,
            f"written by {patch.name} v{header['version']} with config "
            f"{header.get('config-sha256')}; apply renders v{patch.version} "
            f"{patch.config_digest(config, extension=True)}{cost}",
            data,
            reshapes=what or "",
        )
    off = package.switched_off(agent_dir, path)
    return LayerStatus("installed", path, f"installed, but {off}" if off else "", data, off=off)


WRITTEN = "extension_written"  # (the records' list of every agent dir an extension file was written to)


def remember_written(store: Store, agent_dir: Path, keep: bool = True) -> None:
    """Keep (or drop) an agent dir in the records' list of those an extension file was written
    to: `revert` and `uninstall` take it out of each, whether or not an install found now uses it
    (an agent dir given by SENPI_CODING_AGENT_DIR to that apply alone, a senpi removed since)."""
    if (agent_dir in store.agent_dirs(WRITTEN)) != keep:
        store.remember_agent_dir(agent_dir, keep=keep, key=WRITTEN)


def verify(
    patch: Patch,
    config: Config,
    installs: list[Install],
    store: Store,
    agent_dir: Path,
    allow_foreign_root: bool = False,
    cancel: threading.Event | None = None,
    fresh: bool = False,
) -> LayerOutcome:
    """A replay of what apply writes here (`fresh`: run with node even when the identical replay
    passed before), beside the state of the file there (ok: it is there as apply writes it, and the
    replay passes)."""
    status = None
    try:
        status = inspect(patch, config, agent_dir)
        report = replay(
            patch,
            config,
            patch.render_extension(config),
            installs,
            store,
            allow_foreign_root,
            reuse=not fresh,
            cancel=cancel,
        )
    except FatalError as exc:  # (the state is what inspection found; the replay's refusal is the detail)
        state = status.state if status is not None else "error"
        return LayerOutcome(target_path(patch, agent_dir), state, state, False, str(exc), fix=fix_of(exc))
    what = "not installed" if status.state == "absent" else "not as apply writes it"
    what = "the installed extension" if status.state == "installed" else f"{what}; the extension apply would write"
    what = f"{status.detail}; the extension" if status.off else what
    if status.state == "package":
        own = "its extension" if status.current else "the extension apply would write"
        what = f"{status.detail}; {own}"
    detail = (
        f"{what} passed {report.checks_run} checks through {host_text(report)}"
        if report.ok
        else f"{what} FAILED its replay: " + "; ".join(str(f) for f in report.failures[:3])
    )
    installed = status.state == "installed" and not status.off
    settled = installed or (status.state == "package" and status.current and not status.beside)
    return LayerOutcome(status.path, status.state, status.state, report.ok and settled, detail, report)


RUNNER_NOT_FOUND = (
    "no one file under dist/ defines and exports `class ExtensionRunner` beside one exporting "
    "loadExtensions and createExtensionRuntime"
)


def host_text(report: VerifyReport) -> str:
    host = "senpi's own extension runner" if report.stats.get("host") == "senpi" else "a minimal host"
    if report.stats.get("host_unavailable"):
        host += f" (senpi's own runner did not import: {report.stats['host_unavailable']})"
    elif report.stats.get("host_missing"):
        host += f" (senpi's own runner was not found: {RUNNER_NOT_FOUND})"
    if report.reused_from is not None:
        host += time.strftime("; the identical replay passed at %Y-%m-%d %H:%M", time.localtime(report.reused_from))
    return f"{host} (node {report.node_version})"


def _not_proven(path: Path, status: LayerStatus, report: VerifyReport) -> LayerOutcome:
    first = report.failures[0] if report.failures else "no checks ran"
    return LayerOutcome(
        path,
        status.state,
        status.state,
        False,
        f"verification failed, nothing was written: {first} ({len(report.failures)} failed of {report.checks_run})",
        report,
    )


def install(
    patch: Patch,
    config: Config,
    installs: list[Install],
    store: Store,
    agent_dir: Path,
    dry_run: bool = False,
    allow_foreign_root: bool = False,
    cancel: threading.Event | None = None,
) -> LayerOutcome:
    try:
        status = inspect(patch, config, agent_dir)
    except FatalError as exc:  # (an unreadable extensions folder: one line, the installs still done)
        return LayerOutcome(target_path(patch, agent_dir), "error", "error", False, str(exc))
    path = status.path
    if (settled := _settled(patch, config, store, agent_dir, status, dry_run)) is not None:
        return settled
    rendered = patch.render_extension(config)
    try:
        report = replay(patch, config, rendered, installs, store, allow_foreign_root, cancel=cancel)
    except FatalError as exc:
        return LayerOutcome(
            path, status.state, status.state, False, str(exc), fix=fix_of(exc), passing=write.passes(exc)
        )
    if not report.ok:
        return _not_proven(path, status, report)
    cost = f"; {reshape.cost('extension', status.reshapes)}" if status.reshapes else ""
    if dry_run:
        return LayerOutcome(
            path,
            status.state,
            status.state,
            True,
            f"dry run: verified: {report.checks_run} checks passed through {host_text(report)}; "
            f"would write {path}{cost}",
            report,
            would_write=True,
        )
    ready = Ready(_change(patch, status, Want.WRITE), rendered.encode("utf-8"), found=status.data)
    try:
        remember_written(store, agent_dir)  # (before the write: a file written is never one no record names)
        done = execute([ready], store, cancel or threading.Event())
    except FatalError as exc:  # (the record could not be written: nothing was)
        done = Done(error=exc)
    if (error := done.error) is not None:
        return LayerOutcome(path, status.state, status.state, False, str(error), report, passing=write.passes(error))
    off = package.switched_off(agent_dir, path)
    return LayerOutcome(
        path,
        status.state,
        "installed",
        not off,
        f"verified: {report.checks_run} checks passed through {host_text(report)}{cost}"
        + (f"; written, but {off}" if off else ""),
        report,
        done.kept,
        step=Step.SWITCH_ON if off else Step.NONE,
        pruned=done.pruned,
    )


def _settled(
    patch: Patch, config: Config, store: Store, agent_dir: Path, status: LayerStatus, dry_run: bool
) -> LayerOutcome | None:
    """What install says without a replay: a package's extension there, a file not ours, or ours
    already installed; None when the extension is to be rendered, proven and written."""
    path = status.path
    if status.state == "package":
        return beside_package(patch, config, store, agent_dir, status, "; nothing installed beside it", dry_run=dry_run)
    if status.state == "foreign":
        return LayerOutcome(
            path,
            "foreign",
            "foreign",
            False,
            f"{path} is there and {status.detail}; senpi-guard never changes it: rename it, then run apply again",
        )
    if status.state != "installed":
        return None
    if not dry_run:
        remember_written(store, agent_dir)
    if status.off:
        return LayerOutcome(path, "installed", "installed", False, status.detail, step=Step.SWITCH_ON)
    return LayerOutcome(path, "installed", "installed", True, "already installed")


def remove(patch: Patch, config: Config, store: Store, agent_dir: Path) -> LayerOutcome:
    """revert: our file out of the agent dir; a package of ours there is the user's (`senpi
    install`): left alone, and said so."""
    try:
        status = inspect(patch, config, agent_dir)
    except FatalError as exc:
        return LayerOutcome(target_path(patch, agent_dir), "error", "error", False, str(exc))
    if status.state == "package":
        return beside_package(
            patch,
            config,
            store,
            agent_dir,
            status,
            f"; you installed it, so it is left alone (`senpi remove {package.remove_name(status.package)}` "
            "takes it out)",
            ok=True,
        )
    return _remove_file(patch, config, store, agent_dir)


def _remove_file(patch: Patch, config: Config, store: Store, agent_dir: Path) -> LayerOutcome:
    try:
        status = inspect_file(patch, config, agent_dir)
    except FatalError as exc:
        return LayerOutcome(target_path(patch, agent_dir), "error", "error", False, str(exc))
    path = status.path
    if status.state in ("absent", "foreign"):
        note = "not installed" if status.state == "absent" else f"{status.detail}; left alone"
        return LayerOutcome(path, status.state, status.state, True, note)
    done = execute([Ready(_change(patch, status, Want.REMOVE), None, found=status.data)], store, threading.Event())
    if done.error is not None:
        return LayerOutcome(path, status.state, status.state, False, str(done.error))
    if done.kept:
        note = f"removed; it had been edited, so it was kept at {done.kept[0]}"
        return LayerOutcome(path, "modified", "absent", True, note, kept=done.kept, pruned=done.pruned)
    return LayerOutcome(path, status.state, "absent", True, "removed")


def _change(patch: Patch, status: LayerStatus, want: Want) -> Change:
    """The executor's change for senpi-guard's own file in an agent dir (an edited one kept aside first)."""
    modified = status.state == "modified"
    return Change("extension", patch.name, status.path, State(status.state), None, want=want, keep_aside=modified)


def beside_package(
    patch: Patch,
    config: Config,
    store: Store,
    agent_dir: Path,
    status: LayerStatus,
    what: str,
    ok: bool | None = None,
    dry_run: bool = False,
) -> LayerOutcome:
    """The package is the extension layer of this agent dir: senpi-guard's own file beside it is
    taken out (both would run the dedupe on every call; a dry run says so). `ok` None: as wanted
    when it is current."""
    step, where = (Step.NONE, "") if status.current else (Step.EXPORT, visible(status.path))
    ok = status.current if ok is None else ok
    if dry_run:
        note = f"; dry run: would take out senpi-guard's own {status.beside.name} beside it" if status.beside else ""
        detail = f"{status.detail}{what}{note}"
        return LayerOutcome(
            status.path, "package", "package", ok, detail, step=step, step_detail=where, would_write=bool(status.beside)
        )
    removed = _remove_file(patch, config, store, agent_dir)
    if not removed.ok:
        return removed
    note = "" if removed.before == "absent" else f"; senpi-guard's own {removed.path.name} beside it was taken out"
    return LayerOutcome(
        status.path,
        "package",
        "package",
        ok,
        f"{status.detail}{what}{note}",
        kept=removed.kept,
        pruned=removed.pruned,
        step=step,
        step_detail=where,
        took_out=removed.before != "absent",
    )


def refuse(
    patch: Patch, config: Config, store: Store, agent_dir: Path, reason: str, ok: bool = False, dry_run: bool = False
) -> LayerOutcome:
    """The extension must not be in this agent dir: not installed, and ours taken away if it is
    there (a dry run says it would be). `ok`: the config asked for that (nothing failed)."""
    try:
        status = inspect(patch, config, agent_dir)
    except FatalError as exc:
        return LayerOutcome(target_path(patch, agent_dir), "error", "error", False, str(exc))
    if status.state == "package":
        return beside_package(patch, config, store, agent_dir, status, f"; {reason}", ok=ok, dry_run=dry_run)
    if status.state not in ("installed", "stale", "modified"):
        return LayerOutcome(status.path, status.state, status.state, ok, reason)
    if dry_run:
        detail = f"{reason}; dry run: would take senpi-guard's extension out of it"
        return LayerOutcome(status.path, status.state, status.state, ok, detail, would_write=True)
    removed = remove(patch, config, store, agent_dir)
    detail = f"{reason}; senpi-guard's extension was taken out of it" if removed.ok else removed.detail
    return LayerOutcome(
        status.path, status.state, removed.after, ok and removed.ok, detail, kept=removed.kept, pruned=removed.pruned
    )
