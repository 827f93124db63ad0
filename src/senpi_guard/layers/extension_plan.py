"""Where the extension layer goes: the agent dir each installed senpi really uses (its own rule, read
from its dist/config.js by agentdir), one extension file per agent dir shared by the installs that
use it, and whether it is safe there.

senpi-guard installs into each install's *user* agent dir (what senpi uses when started in the
home folder: an agent-dir variable, else ~/.senpi/agent). A project's own `.senpi/agent` is used
by senpi only when it starts inside that project: `apply --here` adds the one senpi uses from the
current folder, and senpi-guard remembers it (status, revert and the watcher include it)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard.core import agentdir
from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import extension


@dataclass
class AgentTarget:
    agent_dir: Path
    how: str  # the variable that named it, "default", "project", or "remembered (apply --here)"
    installs: list[Install] = field(default_factory=list)
    unsafe: str = ""  # why the extension must not be there with this config ("" when it may)
    deferred: bool = False  # ... because the config leaves these installs to upstream's dedupe


@dataclass(frozen=True)
class Placement:
    """One install's agent dirs: the one senpi-guard installs into, and the one senpi uses from here."""

    install: Install
    user: agentdir.Resolved | None
    here: agentdir.Resolved | None
    error: str = ""


def _env() -> dict[str, str]:
    return dict(os.environ)


def _cwd() -> Path | None:
    try:
        return Path(os.getcwd())
    except OSError:  # a deleted folder: senpi itself would start from the home folder
        return None


def placement(install: Install) -> Placement:
    if install.unsupported:
        return Placement(install, None, None, install.unsupported)
    env = _env()
    home = agentdir.node_home(env)
    try:
        rule = agentdir.rule_for(install.package_dir)
        user = agentdir.user_agent_dir(rule, env, home)
        cwd = _cwd()
        here = agentdir.resolve(rule, env, cwd, home) if cwd is not None else user
    except FatalError as exc:
        return Placement(install, None, None, f"senpi {install.version} at {install.package_dir}: {exc}")
    return Placement(install, user, here)


def unsafe_reason(config: Config, installs: list[Install], upstream_of: Callable[[Install], bool]) -> str:
    """The extension alone, beside upstream's keep-last dedupe (2026.8.4-2 and later), loses the first
    copy: after a compaction it rightly sends one more full copy, and on the next full re-send
    upstream's dedupe keeps that last one and replaces the first, so the prompt's prefix changes."""
    if "dist" in config.layers and config.upstream_dedupe != "defer":
        return ""  # (the dist layer wraps upstream's dedupe: it keeps the first copy)
    with_upstream = [i for i in installs if upstream_of(i)]
    if not with_upstream:
        return ""
    versions = ", ".join(sorted({i.version for i in with_upstream}))
    if "dist" in config.layers:
        return (f"left out: senpi {versions} uses this agent dir and is left to its own keep-last dedupe "
                '(upstream_dedupe = "defer"); the extension beside that dedupe would make it drop the first '
                'copy after a compaction; upstream_dedupe = "replace" puts both layers there')
    return (f"not installed: senpi {versions} uses this agent dir with its own keep-last dedupe and layers "
            'leaves out "dist"; the extension alone would make that dedupe drop the first copy after a '
            'compaction (the prompt\'s prefix changes); use layers = ["dist", "extension"]')


def targets(installs: Iterable[Install], config: Config, store: Store,
            upstream_of: Callable[[Install], bool], here: bool = False) -> tuple[list[AgentTarget], list[str]]:
    """The agent dirs the extension layer serves, each with the installs that use it; and one line for
    each install whose agent dir cannot be told (the others go on)."""
    found: dict[Path, AgentTarget] = {}
    errors = []
    placements = [placement(i) for i in installs]
    for place in placements:
        if place.error or place.user is None:
            if not place.install.unsupported:
                errors.append(place.error)
            continue
        dirs = [(place.user.path, place.user.how)]
        if here and place.here is not None and place.here.path != place.user.path:
            dirs.append((place.here.path, place.here.how))
        for path, how in dirs:
            found.setdefault(path, AgentTarget(path, how)).installs.append(place.install)
    served = [p.install for p in placements if p.user is not None]
    for path in store.agent_dirs():
        if path not in found and served:
            found[path] = AgentTarget(path, "remembered (apply --here)", list(served))
    for target in found.values():
        target.unsafe = unsafe_reason(config, target.installs, upstream_of)
        target.deferred = bool(target.unsafe) and "dist" in config.layers
    return list(found.values()), errors


def install_all(patch: Patch, config: Config, store: Store, found: list[Install],
                upstream_of: Callable[[Install], bool], dry_run: bool = False, allow_foreign_root: bool = False,
                here: bool = False) -> list[extension.LayerOutcome]:
    """apply's extension layer: into every agent dir the installs use (refused where unsafe); with
    `here`, also the agent dir senpi uses from the current folder, remembered from then on."""
    planned, errors = targets(found, config, store, upstream_of, here)
    outcomes = [extension.LayerOutcome(Path("-"), "error", "error", False, line) for line in errors]
    for target in planned:
        if target.unsafe:
            outcomes.append(extension.refuse(patch, config, store, target.agent_dir, target.unsafe,
                                             ok=target.deferred))
            continue
        outcome = extension.install(patch, config, target.installs, store, target.agent_dir, dry_run,
                                    allow_foreign_root)
        if here and outcome.ok and not dry_run and target.how == "project":
            store.remember_agent_dir(target.agent_dir)
        outcomes.append(outcome)
    return outcomes


def remove_all(patch: Patch, config: Config, store: Store, found: list[Install]) -> list[extension.LayerOutcome]:
    """revert's extension layer: out of every agent dir it may be in (the installs', remembered ones)."""
    planned, errors = targets(found, config, store, lambda _install: False)
    outcomes = [extension.LayerOutcome(Path("-"), "error", "error", False, line) for line in errors]
    for target in planned:
        outcome = extension.remove(patch, config, store, target.agent_dir)
        if outcome.ok and target.how.startswith("remembered"):
            store.remember_agent_dir(target.agent_dir, keep=False)
        outcomes.append(outcome)
    return outcomes
