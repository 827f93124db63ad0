"""Where revert takes the extension out (the agent-dir side of `revert` and `uninstall`): every
agent dir the installs use, the `apply --here` ones remembered, the one senpi uses from the
current folder when senpi-guard's file is there (a project moved since), and, when every install
is reverted, each one the records say an extension file was written to; but not one an install
this revert leaves alone still uses (the file is that agent dir's, shared)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from senpi_guard.core.patch.definition import Patch
from senpi_guard.core.states import State
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io import write
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import extension
from senpi_guard.layers.change import Change, Hold, Want
from senpi_guard.layers.extension_plan import OURS, AgentTarget, errors_of, targets

WRITTEN_HOW = "written to by an earlier apply"


def _removal_targets(
    patch: Patch, config: Config, store: Store, found: list[Install], everywhere: bool
) -> tuple[list[AgentTarget], list[tuple[Install, str]]]:
    """The agent dirs revert takes the extension out of: the installs' and the remembered ones;
    `everywhere` (every install is reverted), also each one an extension file was written to that
    no install found now uses (an agent-dir variable that apply alone had, a senpi removed since)."""
    planned, errors = targets(patch, found, config, store, {}, here=True)
    remembered = set(store.agent_dirs())
    for target in planned:
        if target.how == "project" and target.agent_dir in remembered:
            target.how = "remembered (apply --here)"
    # the one senpi uses from the current folder, when senpi-guard's file is there (a project moved
    # since `apply --here`, whose file went with it)
    planned = [t for t in planned if t.how != "project" or _holds_ours(patch, config, t.agent_dir)]
    if everywhere:
        known = {target.agent_dir for target in planned}
        planned += [AgentTarget(p, WRITTEN_HOW) for p in store.agent_dirs(extension.WRITTEN) if p not in known]
    return planned, errors


def _holds_ours(patch: Patch, config: Config, agent_dir: Path) -> bool:
    try:
        return extension.inspect_file(patch, config, agent_dir).state in OURS
    except FatalError:
        return False  # (not one senpi-guard keeps: a folder it cannot look in blocks no revert)


def _still_served(patch: Patch, config: Config, store: Store, target: AgentTarget, users: list[Install]):
    """A revert of some installs (--root) leaves the extension in an agent dir that an install it
    does not revert uses too: the file is that agent dir's, shared (taken out, it would leave that
    install without its layer, unasked)."""
    try:
        status = extension.inspect(patch, config, target.agent_dir)
    except FatalError as exc:
        return extension.LayerOutcome(extension.target_path(patch, target.agent_dir), "error", "error", False, str(exc))
    who = ", ".join(f"senpi {i.version} at {i.package_dir}" for i in users[:2]) + (" and more" if users[2:] else "")
    detail = (
        f"kept: {who} uses this agent dir too, and this revert leaves it as it is; "
        "`senpi-guard revert` without --root takes the extension out of every agent dir"
    )
    if status.state == "absent":
        detail = "not installed"
    return extension.LayerOutcome(status.path, status.state, status.state, True, detail)


def _unreadable_written(outcome: extension.LayerOutcome, store: Store, agent_dir: Path) -> extension.LayerOutcome:
    """An agent dir the extension was once written to that this user cannot look in now (another
    user's folder or link in its place, its modes changed): not this run's to fix, so not a
    failure that would block every revert and uninstall; said, and forgotten."""
    extension.remember_written(store, agent_dir, keep=False)
    outcome.ok = True
    outcome.detail = (
        f"not looked in, and forgotten: {outcome.detail}; it is not the agent dir of any senpi found, "
        f"so if senpi-guard's {outcome.path.name} is still there, remove it by hand"
    )
    return outcome


def remove_all(
    patch: Patch,
    config: Config,
    store: Store,
    found: list[Install],
    everywhere: bool = True,
    others: Iterable[Install] = (),
) -> list[extension.LayerOutcome]:
    """revert's extension layer: out of every agent dir it may be in (the installs', remembered ones;
    `everywhere`, every one it was written to), and held there: the watcher leaves a held agent dir
    alone until `apply`. An agent dir that one of `others` (installs this revert leaves alone) uses
    keeps it."""
    planned, errors = _removal_targets(patch, config, store, found, everywhere)
    shared, _ = targets(patch, others, config, store, {})
    users = {target.agent_dir: target.installs for target in shared if target.installs}
    outcomes = errors_of(errors)
    for target in planned:
        if target.agent_dir in users:
            outcomes.append(_still_served(patch, config, store, target, users[target.agent_dir]))
            continue
        if target.how == WRITTEN_HOW and not target.agent_dir.is_dir():  # (a file or nothing now: none of ours)
            extension.remember_written(store, target.agent_dir, keep=False)
            continue
        outcome = extension.remove(patch, config, store, target.agent_dir)
        if target.how == WRITTEN_HOW and outcome.after == "error":
            outcome = _unreadable_written(outcome, store, target.agent_dir)
        if outcome.ok and outcome.after in ("absent", "foreign"):  # (none of ours is left there)
            extension.remember_written(store, target.agent_dir, keep=False)
        if outcome.ok and target.how == WRITTEN_HOW and outcome.before == "absent":
            continue  # (taken out since by hand, or the folder is gone: nothing to say)
        if outcome.ok and outcome.after != "error":  # (one not looked in, and forgotten, is not held either)
            store.set_hold(target.agent_dir, "extension removed by `senpi-guard revert`")
        if outcome.ok and target.how.startswith("remembered"):
            store.remember_agent_dir(target.agent_dir, keep=False)
        outcomes.append(outcome)
    return outcomes


def removal(patch: Patch, config: Config, store: Store, found: list[Install]) -> list[Change]:
    """What revert's extension layer would take out of each agent dir (every one: uninstall reverts
    everything), one change per agent dir; one revert cannot make says why in its detail (`uninstall`
    refuses while any does). Reads only."""
    planned, errors = _removal_targets(patch, config, store, found, everywhere=True)
    changes = [
        Change("extension", patch.name, Path("-"), State.ERROR, None, executable=False, detail=line)
        for _i, line in errors
    ]
    for target in planned:
        if target.how == WRITTEN_HOW and not target.agent_dir.is_dir():
            continue
        path = extension.target_path(patch, target.agent_dir)
        served = tuple(i.package_dir for i in target.installs)
        try:
            status = extension.inspect(patch, config, target.agent_dir)
        except FatalError as exc:  # (one of those it was once written to: revert says so, and goes on)
            once = target.how == WRITTEN_HOW
            changes.append(Change("extension", patch.name, path, State.ERROR, None, executable=once, detail=str(exc)))
            continue
        if target.how == WRITTEN_HOW and status.state == "absent":
            continue
        change = Change("extension", patch.name, status.path, State(status.state), None, installs=served)
        if status.state in OURS:  # (an edited one is kept aside by the revert, and uninstall keeps that copy)
            change = replace(change, want=Want.REMOVE, hold=Hold.SET, keep_aside=status.state == "modified")
            if write.refused_in(status.path.parent):
                change = replace(change, executable=False, detail=write.refusal_text(status.path.parent))
        changes.append(change)
    return changes
