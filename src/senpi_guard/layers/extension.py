"""The extension layer: one senpi extension file in <agent dir>/extensions/, rendered from the patch
(same tags, same marker), proven by replaying fixture sessions through it before it is written
(layers/extension_replay), and found again by its header line (never by folder contents: every
other file there is the user's).

States: `installed` (what this senpi-guard renders), `stale` (ours, from another version or
config), `modified` (ours, edited since: its content no longer matches the sha256 in its header),
`absent`, and `foreign` (a file of that name that is not ours: never touched)."""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from senpi_guard.core.patch import reshape
from senpi_guard.core.patch.apply import header_of
from senpi_guard.core.patch.classify import State
from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io import write
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.io.write import os_error, write_private
from senpi_guard.layers.extension_replay import replay
from senpi_guard.prove.verify import VerifyReport


@dataclass
class LayerStatus:
    state: str  # installed, stale, modified, absent, foreign
    path: Path
    detail: str = ""
    data: bytes | None = None  # what the file held when it was read
    reshapes: str = ""  # (stale) how the config changes what sent messages look like, in words


@dataclass
class LayerOutcome:
    """The extension layer's result in one agent dir (the dist layer's is findings.Outcome: both
    carry `layer`, `patch`, `before`, `after`, `ok`, `detail` and `report`, in one vocabulary)."""

    path: Path
    before: State
    after: State
    ok: bool
    detail: str
    report: VerifyReport | None = None
    kept: list[str] = field(default_factory=list)
    installs: list[Install] = field(default_factory=list)  # the installs that use this agent dir
    step: str = ""  # what to run when it is not as wanted ("" when nothing, or the detail says it)
    patch: str = ""
    standing: bool = False  # (the watcher) a problem left alone, reported once
    would_write: bool = False  # (a dry run) apply would write the file

    layer: ClassVar[str] = "extension"

    def __post_init__(self) -> None:  # (a state outside the one vocabulary is a bug, found here)
        self.before, self.after = State(self.before), State(self.after)

    def as_json(self) -> dict[str, Any]:
        report = self.report
        return {
            "layer": "extension",
            "path": str(self.path),
            "state_before": self.before,
            "state": self.after,
            "ok": self.ok,
            "detail": self.detail,
            "kept": self.kept,
            "changed": self.before != self.after,
            "would_write": self.would_write,
            "next": self.step or None,
            "checks": report.checks_run if report else None,
            "verification": None
            if report is None
            else {
                "ok": report.ok,
                "checks": report.checks_run,
                "node": report.node_version,
                "host": report.stats.get("host"),
                "failures": [str(f) for f in report.failures],
            },
        }


def target_path(patch: Patch, agent_dir: Path) -> Path:
    return agent_dir / "extensions" / patch.extension.file_name


def inspect(patch: Patch, config: Config, agent_dir: Path) -> LayerStatus:
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
    return LayerStatus("installed", path, "", data)


def _keep_aside(path: Path, store: Store) -> str:
    """Move an edited extension out of the extensions folder (where senpi would still load it): a
    copy in the data folder, then the file taken away (both only if it is still what was read)."""
    kept = store.data_dir / "extension-kept" / f"{time.strftime('%Y%m%d-%H%M%S')}-{path.name}"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise os_error(exc, "read", path, "move it away by hand, then retry") from exc
    write_private(kept, data)
    write.take(path.parent, path.name, data)
    return str(kept)


def _write(path: Path, data: bytes, expected: bytes | None) -> None:
    write.place(path.parent, path.name, data, expected)  # (the folders made on the way, as io/folders says)


def verify(
    patch: Patch,
    config: Config,
    installs: list[Install],
    store: Store,
    agent_dir: Path,
    allow_foreign_root: bool = False,
    cancel: threading.Event | None = None,
) -> LayerOutcome:
    """A fresh replay of what apply writes here, beside the state of the file there (ok: it is
    there as apply writes it, and the replay passes)."""
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
            reuse=False,
            cancel=cancel,
        )
    except FatalError as exc:  # (the state is what inspection found; the replay's refusal is the detail)
        state = status.state if status is not None else "error"
        return LayerOutcome(target_path(patch, agent_dir), state, state, False, str(exc))
    what = "not installed" if status.state == "absent" else "not as apply writes it"
    what = "the installed extension" if status.state == "installed" else f"{what}; the extension apply would write"
    detail = (
        f"{what} passed {report.checks_run} checks through {_host_text(report)}"
        if report.ok
        else f"{what} FAILED its replay: " + "; ".join(str(f) for f in report.failures[:3])
    )
    return LayerOutcome(
        status.path, status.state, status.state, report.ok and status.state == "installed", detail, report
    )


def _host_text(report: VerifyReport) -> str:
    host = "senpi's own extension runner" if report.stats.get("host") == "senpi" else "a minimal host"
    if report.stats.get("host_unavailable"):
        host += f" (senpi's own runner did not import: {report.stats['host_unavailable']})"
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
    if status.state == "foreign":
        return LayerOutcome(
            path,
            "foreign",
            "foreign",
            False,
            f"{path} is there and {status.detail}; senpi-guard never changes it: rename it, then run apply again",
        )
    if status.state == "installed":
        return LayerOutcome(path, "installed", "installed", True, "already installed")
    rendered = patch.render_extension(config)
    try:
        report = replay(patch, config, rendered, installs, store, allow_foreign_root, cancel=cancel)
    except FatalError as exc:
        return LayerOutcome(path, status.state, status.state, False, str(exc))
    if not report.ok:
        return _not_proven(path, status, report)
    cost = f"; {reshape.cost('extension', status.reshapes)}" if status.reshapes else ""
    if dry_run:
        return LayerOutcome(
            path,
            status.state,
            status.state,
            True,
            f"dry run: verified ({report.checks_run} checks), would write {path}{cost}",
            report,
            would_write=True,
        )
    try:
        kept = [_keep_aside(path, store)] if status.state == "modified" else []
        _write(path, rendered.encode("utf-8"), status.data if status.state == "stale" else None)
    except FatalError as exc:
        return LayerOutcome(path, status.state, status.state, False, str(exc), report)
    return LayerOutcome(
        path,
        status.state,
        "installed",
        True,
        f"verified: {report.checks_run} checks passed through {_host_text(report)}{cost}",
        report,
        kept,
    )


def remove(patch: Patch, config: Config, store: Store, agent_dir: Path) -> LayerOutcome:
    try:
        status = inspect(patch, config, agent_dir)
    except FatalError as exc:
        return LayerOutcome(target_path(patch, agent_dir), "error", "error", False, str(exc))
    path = status.path
    if status.state in ("absent", "foreign"):
        note = "not installed" if status.state == "absent" else f"{status.detail}; left alone"
        return LayerOutcome(path, status.state, status.state, True, note)
    if status.state == "modified":
        try:
            kept = _keep_aside(path, store)
        except FatalError as exc:
            return LayerOutcome(path, "modified", "modified", False, str(exc))
        return LayerOutcome(
            path, "modified", "absent", True, f"removed; it had been edited, so it was kept at {kept}", kept=[kept]
        )
    try:
        write.take(path.parent, path.name, status.data)
    except FatalError as exc:
        return LayerOutcome(path, status.state, status.state, False, str(exc))
    return LayerOutcome(path, status.state, "absent", True, "removed")


def refuse(patch: Patch, config: Config, store: Store, agent_dir: Path, reason: str, ok: bool = False) -> LayerOutcome:
    """The extension must not be in this agent dir: not installed, and ours taken away if it is
    there. `ok`: the config asked for that (nothing failed)."""
    try:
        status = inspect(patch, config, agent_dir)
    except FatalError as exc:
        return LayerOutcome(target_path(patch, agent_dir), "error", "error", False, str(exc))
    if status.state not in ("installed", "stale", "modified"):
        return LayerOutcome(status.path, status.state, status.state, ok, reason)
    removed = remove(patch, config, store, agent_dir)
    detail = f"{reason}; senpi-guard's extension was taken out of it" if removed.ok else removed.detail
    return LayerOutcome(status.path, status.state, removed.after, ok and removed.ok, detail, kept=removed.kept)
