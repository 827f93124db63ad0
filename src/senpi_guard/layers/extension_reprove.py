"""The watcher's re-proof of an installed extension after senpi changed under it.

The extension's proof runs through senpi's own loader and runner (layers/extension_replay), so an
update that changes them can break an extension that passed before. What the watcher compares
between rounds is the loader stamp of the installs an agent dir serves: package.json's and dist/'s
identity (an update swaps both) and the identity of the loader and runner files the proof loads
(an edit in place). When it changes, the proof runs again with the memo allowed: the same bytes
(a reinstall) reuse it without running node, changed bytes prove afresh. A failed re-proof takes
the extension out of that agent dir by revert's own code path (extension.remove) and records it in
`<state dir>/extension-taken-out.json`, which status shows as those installs' problem; the
watcher leaves the agent dir alone until a successful `senpi-guard apply` clears the record."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io import statefile, write
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.io.write import write_private
from senpi_guard.layers import extension, extension_replay
from senpi_guard.layers.change import Step, say
from senpi_guard.layers.extension import LayerOutcome
from senpi_guard.prove import replays

TAKEN_OUT = "extension-taken-out.json"
TAKEN_OUT_VERSION = 1
APPLY_STEP = say(Step.FIX_WHAT_FAILS)


def loader_stamp(installs: list[Install], hosts: dict[str, tuple]) -> tuple:
    """What the extension's proof depends on in these installs, by identity (no file is read).
    `hosts` remembers where each install's loader and runner are, while its package stamp holds
    (finding them parses dist/: about 0.1 s on 2026.8.22-2)."""
    parts = []
    for install in installs:
        stamp = replays.package_stamp(install.package_dir)
        known = hosts.get(str(install.package_dir))
        if known is None or known[0] != stamp:
            try:
                _install, host = extension_replay.senpi_host([install])
            except FatalError:  # (dist/ gone or unreadable since it was found)
                host = None
            known = hosts[str(install.package_dir)] = (stamp, host)
        host = known[1] or {}
        files = tuple((role, path, replays.file_identity(path)) for role, path in sorted(host.items()))
        parts.append((str(install.package_dir), tuple(stamp or ()), files))
    return tuple(parts)


@dataclass
class Reproof:
    """One agent dir whose installed extension is due for its proof again."""

    patch: Patch
    config: Config
    agent_dir: Path
    installs: list[Install]
    stamp: tuple
    key: tuple[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.key = (self.patch.name, str(self.agent_dir))


def reprove(job: Reproof, store: Store, cancel: threading.Event) -> LayerOutcome | None:
    """The proof of the installed extension, again, through the installs' loader as it is now (the
    memo allowed: same bytes, no node run); a failure takes the extension out, unless it passes
    (`passing`: left in, its stamp not recorded, so the next round hands it over again). None: stopped."""
    path = extension.target_path(job.patch, job.agent_dir)
    rendered = job.patch.render_extension(job.config)
    report = None
    try:
        report = extension_replay.replay(job.patch, job.config, rendered, job.installs, store, cancel=cancel)
        failure = "" if report.ok else "; ".join(str(f) for f in report.failures[:3]) or "no checks ran"
    except FatalError as exc:
        failure = str(exc)
        if write.passes(exc):  # (node out of time on a busy machine: left in, proven again later)
            detail = f"re-proof not finished: {' '.join(failure.split())}; left in place, tried again"
            return LayerOutcome(
                path, "installed", "installed", False, detail, installs=list(job.installs), passing=True
            )
    failure = " ".join(failure.split())  # (one log line)
    if cancel.is_set():
        return None
    if not failure:
        host = _host_of(report)
        how = " through senpi's loader as it is now" if report.stats.get("host") == "senpi" else ""
        detail = f"re-proven{how}: {report.checks_run} checks passed through {host}"
        return LayerOutcome(path, "installed", "installed", True, detail, report, installs=list(job.installs))
    return _take_out(job, store, failure, report)


def _host_of(report) -> str:
    text = extension.host_text(report)
    return text if report.reused_from is not None else f"{text}; a fresh proof"


def _senpi_of(installs: list[Install]) -> str:
    return ", ".join(f"senpi {i.version} at {i.package_dir}" for i in installs)


def _take_out(job: Reproof, store: Store, failure: str, report) -> LayerOutcome:
    """Out of the agent dir as revert takes it (when it is still the file that was proven), and
    recorded first: a watcher round in between sees the record, never an absent file to fill."""
    path = extension.target_path(job.patch, job.agent_dir)
    installs = list(job.installs)
    with store.lock():
        status = extension.inspect(job.patch, job.config, job.agent_dir)
        if status.state != "installed":  # (changed meanwhile: the next round judges it)
            return LayerOutcome(path, status.state, status.state, True, f"re-proof skipped: now {status.state}")
        failed = f"its proof through the loader of {_senpi_of(installs)} failed ({failure[:300]})"
        record(store, job, f"{failed}; senpi-guard took it out of {job.agent_dir}")
        removed = extension.remove(job.patch, job.config, store, job.agent_dir)
        problem = f"{failed}; senpi-guard took it out of {job.agent_dir}"
        if not removed.ok:
            problem = f"{failed}; taking it out of {job.agent_dir} failed: {removed.detail}"
            record(store, job, problem)
    where = ", ".join(str(i.package_dir) for i in installs)
    detail = f"re-proof FAILED for install={where}: {problem}; next: {APPLY_STEP}"
    return LayerOutcome(
        path, "installed", removed.after, False, detail, report, installs=installs, step=Step.FIX_WHAT_FAILS
    )


# ---- the record: <state dir>/extension-taken-out.json ----------------------------------------


TAKEN = statefile.Kind(
    "the extension's taken-out records", TAKEN_OUT_VERSION, "taken_out", list, "delete it, then run `senpi-guard apply`"
)


def _load(store: Store) -> list[dict[str, Any]]:
    return [entry for entry in statefile.load(store.state_dir / TAKEN_OUT, TAKEN) if isinstance(entry, dict)]


def _save(store: Store, entries: list[dict[str, Any]]) -> None:
    path = store.state_dir / TAKEN_OUT
    if (encoded := statefile.encode(path, TAKEN, entries)) is not None:
        write_private(path, encoded)


def record(store: Store, job: Reproof, problem: str) -> None:
    entries = [e for e in _load(store) if (e.get("patch"), e.get("agent_dir")) != job.key]
    entries.append(
        {
            "patch": job.patch.name,
            "agent_dir": str(job.agent_dir),
            "installs": [{"package_dir": str(i.package_dir), "version": i.version} for i in job.installs],
            "problem": problem,
            "next": APPLY_STEP,
            "time": time.time(),
        }
    )
    _save(store, entries)


def taken_out(store: Store, patch: Patch, agent_dir: Path) -> dict[str, Any] | None:
    """The record of a re-proof that took this patch's extension out of this agent dir, if any."""
    key = (patch.name, str(agent_dir))
    return next((e for e in _load(store) if (e.get("patch"), e.get("agent_dir")) == key), None)


def shown(store: Store, patch: Patch, agent_dir: Path) -> dict[str, Any] | None:
    """taken_out for status: a record it cannot read is that agent dir's problem, with its fix."""
    try:
        return taken_out(store, patch, agent_dir)
    except FatalError as exc:
        where = str(store.state_dir / TAKEN_OUT)
        return {"problem": str(exc), "next": say(Step.DELETE_THEN_APPLY, where), "unreadable": where}


def clear(store: Store, patch: Patch, agent_dir: Path) -> None:
    """A successful apply in that agent dir: the record goes."""
    entries = _load(store)
    kept = [e for e in entries if (e.get("patch"), e.get("agent_dir")) != (patch.name, str(agent_dir))]
    if len(kept) != len(entries):
        _save(store, kept)
