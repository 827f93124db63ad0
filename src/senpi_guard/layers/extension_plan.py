"""Where the extension layer goes: the agent dir each installed senpi really uses (its own rule, read
from its dist/config.js by agentdir), one extension file per agent dir shared by the installs that
use it, and whether it is safe there.

senpi-guard installs into each install's *user* agent dir (what senpi uses when started in the
home folder: an agent-dir variable, else ~/.senpi/agent). A project's own `.senpi/agent` is used
by senpi only when it starts inside that project: `apply --here` adds the one senpi uses from the
current folder, and senpi-guard remembers it (status, revert and the watcher include it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from senpi_guard.core.patch.classify import State
from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import extension, extension_reprove
from senpi_guard.layers.change import Change, Hold, Step, Want
from senpi_guard.layers.extension_place import Placement, placement

__all__ = ["AgentTarget", "Placement", "change", "install_all", "judged", "placement", "targets"]


@dataclass
class AgentTarget:
    agent_dir: Path
    how: str  # the variable that named it, "default", "project", or "remembered (apply --here)"
    installs: list[Install] = field(default_factory=list)
    unsafe: str = ""  # why the extension must not be there with this config ("" when it may)
    deferred: bool = False  # ... because the config leaves these installs to upstream's dedupe
    held: bool = False  # a revert took the extension out and held the agent dir (until `apply`)
    # who owns the dist files of the installs it serves whose dist layer is not in place (an apply
    # by anyone else is refused there, so the step names the one who can take it)
    owners: set[int] = field(default_factory=set)


def unsafe_reason(patch: Patch, config: Config, installs: list[Install], present: Mapping[Path, set[str]]) -> str:
    """Why the patch's extension must not be in an agent dir these installs use: beside the target
    the patch names (`unsafe_alone_with`) it is unsafe without the dist layer ("" when it is safe)."""
    layer = patch.extension
    if layer is None or not layer.unsafe_alone_with:
        return ""
    if "dist" in config.layers and patch.defer is None:
        return ""
    unsafe = [
        i
        for i in installs
        if layer.unsafe_alone_with in (roles := present.get(i.package_dir, set()))
        and ("dist" not in config.layers or patch.deferred(config, roles))
    ]
    if not unsafe:
        return ""
    versions = ", ".join(sorted({i.version for i in unsafe}))
    if "dist" in config.layers:
        rule = f'{patch.defer.setting} = "{patch.defer.value}"'
        return (
            f"left out: senpi {versions} uses this agent dir and is left to its own code ({rule}), with "
            f"{layer.unsafe_alone}; changing {patch.defer.setting} puts both layers there"
        )
    return (
        f'not installed: senpi {versions} uses this agent dir and layers leaves out "dist"; it has '
        f'{layer.unsafe_alone}; use layers = ["dist", "extension"]'
    )


def targets(
    patch: Patch,
    installs: Iterable[Install],
    config: Config,
    store: Store,
    present: Mapping[Path, set[str]],
    here: bool = False,
    unplaced: Mapping[Path, set[int]] | None = None,
) -> tuple[list[AgentTarget], list[tuple[Install, str]]]:
    """The agent dirs the extension layer serves, each with the installs that use it; and one line for
    each install whose agent dir cannot be told (the others go on), with that install."""
    found: dict[Path, AgentTarget] = {}
    errors = []
    placements = [placement(i) for i in installs]
    for place in placements:
        if place.error or place.user is None:
            if not place.install.unsupported or "dist" not in config.layers:  # (else the dist layer says it)
                errors.append((place.install, place.error))
            continue
        dirs = [(place.user.path, place.user.how)]
        if here and place.here_error:
            errors.append((place.install, place.here_error))
        elif here and place.here is not None and place.here.path != place.user.path:
            dirs.append((place.here.path, place.here.how))
        for path, how in dirs:
            found.setdefault(path, AgentTarget(path, how)).installs.append(place.install)
    served = [p.install for p in placements if p.user is not None]
    for path in store.agent_dirs():
        if path not in found and served and path.is_dir():  # (gone: see gone_projects)
            found[path] = AgentTarget(path, "remembered (apply --here)", list(served))
    for target in found.values():
        target.unsafe = unsafe_reason(patch, config, target.installs, present)
        target.deferred = bool(target.unsafe) and "dist" in config.layers
        target.held = store.hold(target.agent_dir) is not None
        target.owners = {uid for i in target.installs for uid in (unplaced or {}).get(i.package_dir, ())}
    return list(found.values()), errors


def gone_projects(store: Store) -> list[Path]:
    """The project agent dirs remembered from `apply --here` that are no longer folders (moved or
    removed with their project): senpi uses none of them there, so nothing is written there again
    (an apply would have made the old project's folders anew); `apply` forgets them."""
    return [path for path in store.agent_dirs() if not path.is_dir()]


def _forget_gone(patch: Patch, store: Store, dry_run: bool) -> list[extension.LayerOutcome]:
    outcomes = []
    for path in gone_projects(store):
        if not dry_run:
            store.remember_agent_dir(path, keep=False)
        outcomes.append(
            extension.LayerOutcome(
                extension.target_path(patch, path),
                "absent",
                "absent",
                True,
                f"{'would forget' if dry_run else 'forgotten'}: the project agent dir {path} remembered from "
                "`apply --here` is gone (moved or removed with its project, and the extension file in it with it); "
                "from the project's new place, `senpi-guard apply --here` keeps it again, `senpi-guard revert` "
                "takes it out",
            )
        )
    return outcomes


def errors_of(lines: list[tuple[Install, str]]) -> list[extension.LayerOutcome]:
    return [extension.LayerOutcome(Path("-"), "error", "error", False, line, installs=[i]) for i, line in lines]


def install_all(
    patch: Patch,
    config: Config,
    store: Store,
    found: list[Install],
    present: Mapping[Path, set[str]],
    dry_run: bool = False,
    allow_foreign_root: bool = False,
    here: bool = False,
    failed: Mapping[Path, str] | None = None,
) -> list[extension.LayerOutcome]:
    """apply's extension layer: into every agent dir the installs use (refused where unsafe); with
    `here`, also the agent dir senpi uses from the current folder, remembered from then on. An apply
    lifts the hold a revert left on an agent dir. `failed`: the installs whose dist layer this run
    could not put in place (an agent dir that serves one, where the extension alone costs what the
    patch lists, is left as it is: status would call the extension there a risk)."""
    planned, errors = targets(patch, found, config, store, present, here)
    outcomes = errors_of(errors) + _forget_gone(patch, store, dry_run)
    for target in planned:
        if not target.unsafe and (why := without_dist(patch, target, present, failed or {})):
            outcomes.append(_left(patch, config, target, why))
            continue
        if target.unsafe:
            refused = extension.refuse(
                patch, config, store, target.agent_dir, target.unsafe, ok=target.deferred, dry_run=dry_run
            )
            outcomes.append(refused)
            continue
        if not dry_run:
            store.clear_hold(target.agent_dir)
        outcome = extension.install(
            patch, config, target.installs, store, target.agent_dir, dry_run, allow_foreign_root
        )
        if here and outcome.ok and not dry_run and target.how == "project":
            store.remember_agent_dir(target.agent_dir)
        if outcome.ok and not dry_run:  # (what a watcher's failed re-proof recorded is over)
            extension_reprove.clear(store, patch, target.agent_dir)
        outcomes.append(outcome)
    return outcomes


def alone_costs(patch: Patch, roles: set[str]) -> list[str]:
    """What the extension costs without the dist layer on an install with these target roles: the
    patch's own list (`[[extension.risks]]`); status calls that a risk, and apply never leaves it."""
    return [text for role, text in patch.extension.risks if role in roles] if patch.extension else []


def without_dist(
    patch: Patch, target: AgentTarget, present: Mapping[Path, set[str]], failed: Mapping[Path, str]
) -> str:
    """Why the extension is not written in this agent dir in this run ("" when it may be): an install
    it serves has a dist layer this run could not put in place, where the extension alone costs what
    the patch lists (`[[extension.risks]]`) for that install's targets."""
    for install in target.installs:
        costs = alone_costs(patch, present.get(install.package_dir, set()))
        if install.package_dir in failed and costs:
            return (
                f"not written: senpi {install.version}'s dist layer could not be put in place (see its line), "
                f"and without it the extension would bring: {'; '.join(costs)}; once the dist layer is in place, "
                "apply writes it"
            )
    return ""


def _left(patch: Patch, config: Config, target: AgentTarget, why: str) -> extension.LayerOutcome:
    path = extension.target_path(patch, target.agent_dir)
    try:
        state = extension.inspect(patch, config, target.agent_dir).state
    except FatalError:
        state = State.ERROR
    return extension.LayerOutcome(path, state, state, False, why, installs=list(target.installs))


OURS = ("installed", "stale", "modified")
STEPS = {
    State.ABSENT: Step.INSTALL_EXTENSION,
    State.STALE: Step.RENDER_EXTENSION,
    State.MODIFIED: Step.REPLACE_EDITED,
    State.FOREIGN: Step.RENAME_FOREIGN,
    State.HELD: Step.REINSTALL_EXTENSION,
}


def judged(outcome: extension.LayerOutcome, target: AgentTarget) -> extension.LayerOutcome:
    """The one judgment of an agent dir's extension, for status and verify alike: as wanted when it
    is installed (and, for verify, its replay passed), kept out where the config says it must be,
    or taken out by a revert that holds the agent dir (as asked; for verify, what apply would write
    still passes its replay); and what to run when it is not, or to lift the hold."""
    outcome.installs = list(target.installs)
    outcome.owners = set(target.owners)
    state = outcome.after
    if target.held and state == "absent" and not target.unsafe:
        outcome.before = outcome.after = State.HELD
        outcome.ok = outcome.report is None or outcome.report.ok
        outcome.detail = "held by `senpi-guard revert`: left out until `senpi-guard apply`" + (
            f"; {outcome.detail}" if outcome.detail else ""
        )
        outcome.step = Step.REINSTALL_EXTENSION
    elif target.unsafe:
        outcome.ok = target.deferred and state not in OURS
        outcome.detail = target.unsafe
        out = target.deferred and not outcome.ok
        outcome.step = Step.TAKE_OUT if out else Step.NONE
    else:
        outcome.ok = outcome.ok and state in ("installed", "package")
        outcome.step = Step.NONE if outcome.ok else outcome.step or STEPS.get(state, Step.NONE)
    return outcome


def _inspected(patch: Patch, config: Config, store: Store, target: AgentTarget) -> extension.LayerOutcome:
    try:
        status = extension.inspect(patch, config, target.agent_dir)
    except FatalError as exc:
        path = extension.target_path(patch, target.agent_dir)
        return extension.LayerOutcome(path, "error", "error", False, str(exc), installs=list(target.installs))
    settled = status.current and status.beside is None and not status.off
    outcome = extension.LayerOutcome(status.path, status.state, status.state, settled, status.detail)
    if status.off:
        outcome.step = Step.SWITCH_ON
    elif not status.current:
        outcome.step, outcome.step_detail = Step.EXPORT, str(status.path)
    elif status.beside is not None:
        outcome.step = Step.TAKE_OUT_BESIDE
    outcome = judged(outcome, target)
    out = extension_reprove.shown(store, patch, target.agent_dir) if status.state == "absent" else None
    if out is not None and not target.unsafe:  # (the watcher's failed re-proof: its problem and next step)
        # (the record's step is in words, for a reader of the state file: the step is made again here)
        outcome.ok, outcome.detail = False, str(out.get("problem"))
        unreadable = out.get("unreadable")  # (the record itself could not be read)
        outcome.step = Step.DELETE_THEN_APPLY if unreadable else Step.FIX_WHAT_FAILS
        outcome.step_detail = str(unreadable or "")
    return outcome


def inspect_all(
    patch: Patch,
    config: Config,
    store: Store,
    found: list[Install],
    present: Mapping[Path, set[str]],
    unplaced: Mapping[Path, set[int]] | None = None,
) -> list[extension.LayerOutcome]:
    """status's extension layer: what is in each agent dir the installs use, judged as verify judges
    it, without a replay (read-only)."""
    planned, errors = targets(patch, found, config, store, present, unplaced=unplaced)
    return errors_of(errors) + [_inspected(patch, config, store, target) for target in planned]


def verify_all(
    patch: Patch,
    config: Config,
    store: Store,
    found: list[Install],
    present: Mapping[Path, set[str]],
    allow_foreign_root: bool = False,
    fresh: bool = False,
    unplaced: Mapping[Path, set[int]] | None = None,
) -> list[extension.LayerOutcome]:
    """verify's extension layer: a replay of what apply would install in each agent dir (`fresh`: run
    with node even when the identical replay passed before), beside the state of the file there (ok:
    it is installed as rendered and the replay passes); where the config keeps it out, judged as
    status judges it (no replay)."""
    planned, errors = targets(patch, found, config, store, present, unplaced=unplaced)
    outcomes = errors_of(errors)
    for target in planned:
        if target.unsafe:
            outcomes.append(_inspected(patch, config, store, target))
            continue
        outcome = extension.verify(
            patch, config, target.installs, store, target.agent_dir, allow_foreign_root, fresh=fresh
        )
        outcomes.append(judged(outcome, target))
    return outcomes


# what apply does about each step an agent dir's judgment names
WRITES = frozenset({Step.INSTALL_EXTENSION, Step.RENDER_EXTENSION, Step.REPLACE_EDITED, Step.REINSTALL_EXTENSION})
REMOVES = frozenset({Step.TAKE_OUT, Step.TAKE_OUT_BESIDE})


def change(outcome: extension.LayerOutcome) -> Change:
    """The plan's change for one agent dir, from its judgment (status's, without a replay): the
    extension written (proven first), taken out, or left; what the user must do first is not
    apply's to execute (a foreign file, a package to export, a switch in senpi's settings)."""
    found = Change("extension", outcome.patch, outcome.path, outcome.after, None, step=outcome.step)
    served = tuple(i.package_dir for i in outcome.installs)
    found = replace(found, step_detail=outcome.step_detail, detail=outcome.detail, installs=served)
    if outcome.step in WRITES or outcome.step == Step.FIX_WHAT_FAILS:
        hold = Hold.CLEAR if outcome.step == Step.REINSTALL_EXTENSION else Hold.NONE
        return replace(found, want=Want.WRITE, proof=True, hold=hold, keep_aside=outcome.step == Step.REPLACE_EDITED)
    if outcome.step in REMOVES:
        return replace(found, want=Want.REMOVE, keep_aside=outcome.after == State.MODIFIED)
    return replace(found, executable=outcome.step == Step.NONE)
