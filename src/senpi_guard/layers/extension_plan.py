"""Where the extension layer goes: the agent dir each installed senpi really uses (its own rule, read
from its dist/config.js by agentdir), one extension file per agent dir shared by the installs that
use it, and whether it is safe there.

senpi-guard installs into each install's *user* agent dir (what senpi uses when started in the
home folder: an agent-dir variable, else ~/.senpi/agent). A project's own `.senpi/agent` is used
by senpi only when it starts inside that project: `apply --here` adds the one senpi uses from the
current folder, and senpi-guard remembers it (status, revert and the watcher include it)."""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard.core import agentdir
from senpi_guard.core.patch.classify import State
from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import extension, extension_reprove


@dataclass
class AgentTarget:
    agent_dir: Path
    how: str  # the variable that named it, "default", "project", or "remembered (apply --here)"
    installs: list[Install] = field(default_factory=list)
    unsafe: str = ""  # why the extension must not be there with this config ("" when it may)
    deferred: bool = False  # ... because the config leaves these installs to upstream's dedupe
    held: bool = False  # a revert took the extension out and held the agent dir (until `apply`)


@dataclass(frozen=True)
class Placement:
    """One install's agent dirs: the one senpi-guard installs into, and the one senpi uses from here."""

    install: Install
    user: agentdir.Resolved | None
    here: agentdir.Resolved | None
    error: str = ""
    here_error: str = ""  # (as root) why `apply --here` may not write in `here`


def _env() -> dict[str, str]:
    return dict(os.environ)


def _cwd() -> Path | None:
    try:
        return Path(os.getcwd())
    except OSError:  # a deleted folder: senpi itself would start from the home folder
        return None


def served_env(install: Install) -> tuple[dict[str, str], str]:
    """The environment the agent dir is resolved in: ours, except that root (under sudo, or over
    another user's senpi) resolves it in the home of the user whose senpi it serves, never in its own
    by accident; and a line when that user cannot be told."""
    env = _env()
    if os.geteuid() != 0:
        return env, ""
    uid = _owner(install)
    sudo = env.get("SUDO_UID", "")
    if uid == 0 and sudo.isdigit():
        uid = int(sudo)  # root's own senpi, patched by a user through sudo: that user's agent dir
    if uid == 0:
        return env, ""
    try:
        return {**env, "HOME": pwd.getpwuid(uid).pw_dir}, ""
    except KeyError:
        return env, (
            f"senpi {install.version} at {install.package_dir}: the extension layer is skipped: its "
            f"user (uid {uid}) has no entry in the user database to find its agent dir; run "
            "apply as that user, or set SENPI_CODING_AGENT_DIR"
        )


def _not_owned(top: Path, path: Path, uid: int) -> str:
    """The first folder there from `top` down to `path` (no link followed) that `uid` does not own,
    said ("": none)."""
    chain = [top]
    for name in path.relative_to(top).parts:
        chain.append(chain[-1] / name)
    for folder in chain:
        try:
            owner = os.lstat(folder).st_uid
        except FileNotFoundError:
            return "" if folder != top else f"in {top}, which does not exist"
        except OSError as exc:
            return f"in {folder}, which cannot be looked at ({exc.strerror})"
        if owner != uid:
            return f"in {folder}, which belongs to uid {owner}, not to uid {uid}"
    return ""


def _owner(install: Install) -> int:
    """The uid of the user whose senpi it is (0 when it cannot be told)."""
    try:
        return os.stat(os.path.realpath(install.package_dir)).st_uid
    except OSError:
        return 0


def placement(install: Install) -> Placement:
    if install.unsupported:
        return Placement(install, None, None, install.unsupported)
    env, problem = served_env(install)
    home = agentdir.node_home(env)
    try:
        rule = agentdir.rule_for(install.package_dir)
        user = agentdir.user_agent_dir(rule, env, home)
        cwd = _cwd()
        here = agentdir.resolve(rule, env, cwd, home) if cwd is not None else user
    except FatalError as exc:
        return Placement(install, None, None, f"senpi {install.version} at {install.package_dir}: {exc}")
    if problem and user.how == "default":  # (an agent-dir variable names it: no home is needed)
        return Placement(install, None, None, problem)
    refused = _outside_users_home(install, user, home)
    if refused:
        return Placement(install, None, None, refused)
    return Placement(install, user, here, here_error=_outside_users_home(install, here, home))


def _outside_users_home(install: Install, resolved: agentdir.Resolved, home: str) -> str:
    """Why root may not write in an agent dir that another user's senpi makes of its own config ("":
    it may). Such a path (the home folder or a project, then the user's piConfig.configDir from
    their package.json) is accepted only inside that user's home, in folders that user owns: a
    configDir with `..` named a root-only folder, or root's own agent dir. An agent-dir variable is
    root's own choice and stays as it is."""
    if os.geteuid() != 0 or resolved.how not in ("default", "project"):
        return ""
    uid = _owner(install)
    if uid == 0:
        return ""  # (root's own senpi: its config is root's, even when it serves a user through sudo)
    path, top = Path(resolved.path), Path(os.path.normpath(home))
    if top == Path("/") or not path.is_relative_to(top):
        wrong = f"outside the home folder {top} of uid {uid}"
    else:
        wrong = _not_owned(top, path, uid)
    if not wrong:
        return ""
    return (
        f"senpi {install.version} at {install.package_dir}: the extension layer is skipped: its agent dir "
        f"{path}, made of its owner's config (piConfig.configDir in its package.json), is {wrong}; as root "
        "senpi-guard writes only in that user's own folders: fix that configDir, or run apply as that user"
    )


def unsafe_reason(
    patch: Patch, config: Config, installs: list[Install], present_of: Callable[[Install], set[str]]
) -> str:
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
        if layer.unsafe_alone_with in (present := present_of(i))
        and ("dist" not in config.layers or patch.deferred(config, present))
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
    present_of: Callable[[Install], set[str]],
    here: bool = False,
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
        target.unsafe = unsafe_reason(patch, config, target.installs, present_of)
        target.deferred = bool(target.unsafe) and "dist" in config.layers
        target.held = store.hold(target.agent_dir) is not None
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
    present_of: Callable[[Install], set[str]],
    dry_run: bool = False,
    allow_foreign_root: bool = False,
    here: bool = False,
) -> list[extension.LayerOutcome]:
    """apply's extension layer: into every agent dir the installs use (refused where unsafe); with
    `here`, also the agent dir senpi uses from the current folder, remembered from then on. An apply
    lifts the hold a revert left on an agent dir."""
    planned, errors = targets(patch, found, config, store, present_of, here)
    outcomes = errors_of(errors) + _forget_gone(patch, store, dry_run)
    for target in planned:
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


OURS = ("installed", "stale", "modified")
STEPS = {
    "absent": "run `senpi-guard apply` (installs the extension layer)",
    "stale": "run `senpi-guard apply` (renders the extension anew)",
    "modified": "run `senpi-guard apply` (keeps your edited copy in the data folder, installs it anew)",
    "foreign": "rename the file that is not senpi-guard's, then run `senpi-guard apply`",
    "held": "run `senpi-guard apply` to install it again (this lifts the hold)",
}


def judged(outcome: extension.LayerOutcome, target: AgentTarget) -> extension.LayerOutcome:
    """The one judgment of an agent dir's extension, for status and verify alike: as wanted when it
    is installed (and, for verify, its replay passed), kept out where the config says it must be,
    or taken out by a revert that holds the agent dir (as asked; for verify, what apply would write
    still passes its replay); and what to run when it is not, or to lift the hold."""
    outcome.installs = list(target.installs)
    state = outcome.after
    if target.held and state == "absent" and not target.unsafe:
        outcome.before = outcome.after = State.HELD
        outcome.ok = outcome.report is None or outcome.report.ok
        outcome.detail = "held by `senpi-guard revert`: left out until `senpi-guard apply`" + (
            f"; {outcome.detail}" if outcome.detail else ""
        )
        outcome.step = STEPS["held"]
    elif target.unsafe:
        outcome.ok = target.deferred and state not in OURS
        outcome.detail = target.unsafe
        out = target.deferred and not outcome.ok
        outcome.step = "run `senpi-guard apply` (takes the extension out of it)" if out else ""
    else:
        outcome.ok = outcome.ok and state in ("installed", "package")
        outcome.step = "" if outcome.ok else outcome.step or STEPS.get(state, "")
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
        outcome.step = extension.SWITCH_ON
    elif not status.current:
        outcome.step = f"run `senpi-guard export {status.path}` (renders the package anew)"
    elif status.beside is not None:
        outcome.step = "run `senpi-guard apply` (takes senpi-guard's own file beside the package out)"
    outcome = judged(outcome, target)
    out = extension_reprove.shown(store, patch, target.agent_dir) if status.state == "absent" else None
    if out is not None and not target.unsafe:  # (the watcher's failed re-proof: its problem and next step)
        outcome.ok, outcome.detail, outcome.step = False, str(out.get("problem")), str(out.get("next"))
    return outcome


def inspect_all(
    patch: Patch, config: Config, store: Store, found: list[Install], present_of: Callable[[Install], set[str]]
) -> list[extension.LayerOutcome]:
    """status's extension layer: what is in each agent dir the installs use, judged as verify judges
    it, without a replay (read-only)."""
    planned, errors = targets(patch, found, config, store, present_of)
    return errors_of(errors) + [_inspected(patch, config, store, target) for target in planned]


def verify_all(
    patch: Patch,
    config: Config,
    store: Store,
    found: list[Install],
    present_of: Callable[[Install], set[str]],
    allow_foreign_root: bool = False,
    fresh: bool = False,
) -> list[extension.LayerOutcome]:
    """verify's extension layer: a replay of what apply would install in each agent dir (`fresh`: run
    with node even when the identical replay passed before), beside the state of the file there (ok:
    it is installed as rendered and the replay passes); where the config keeps it out, judged as
    status judges it (no replay)."""
    planned, errors = targets(patch, found, config, store, present_of)
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
