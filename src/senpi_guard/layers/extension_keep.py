"""The extension layer as the watcher keeps it: installed in each agent dir the installs use when it
is wanted and absent or stale (verified first, as by apply). The policy is the layer's, the watcher
only schedules it and logs what comes back:
- an agent dir a revert left held is left alone until `senpi-guard apply`; the hold is looked at
  again under the write lock before the extension is written (revert removes it and holds the
  agent dir under that lock), so a revert that ran after the round looked wins;
- an edited or foreign file, an agent dir where the extension would be unsafe, an install whose
  agent dir cannot be told, a config change that would reshape sent messages: each is a standing
  problem, reported once and left alone;
- a failed replay is not tried again for the same patch, config and agent dir (one that failed for
  a cause that passes, node out of time on a busy machine, is tried again next round);
- an installed extension whose installs' loader stamp changed (an update, a reinstall, an edit of
  senpi's loader or runner) is due for its proof again: handed to the watcher as a `Reproof`, run
  after the round (layers/extension_reprove), never inside it; an agent dir a failed re-proof
  took the extension out of is left alone until `senpi-guard apply`."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard.core.patch import reshape
from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import extension, extension_plan, extension_reprove
from senpi_guard.layers.extension import LayerOutcome
from senpi_guard.layers.findings import Reason


@dataclass
class Keeping:
    """What the watcher carries from one round to the next (the layers' memory, not theirs to keep:
    a round builds its layers anew)."""

    # standing problems already reported, (patch, kind, where): one that is no longer seen in a
    # whole round is forgotten, so that it is reported again if it comes back
    noted: set[tuple[str, str, str]] = field(default_factory=set)
    failed: set[tuple[str, str]] = field(default_factory=set)  # (patch id, agent dir) whose replay failed
    # (patch, agent dir) -> the loader stamp its installed extension was last proven on
    stamps: dict[tuple[str, str], tuple] = field(default_factory=dict)
    hosts: dict[str, tuple] = field(default_factory=dict)  # (extension_reprove.loader_stamp's)
    proving: set[tuple[str, str]] = field(default_factory=set)  # being re-proven now: left alone
    reproofs: list[extension_reprove.Reproof] = field(default_factory=list)  # due, for the watcher


@dataclass
class _Round:
    patch: Patch
    config: Config
    store: Store
    keeping: Keeping
    cancel: threading.Event
    results: list[LayerOutcome] = field(default_factory=list)
    seen: set[tuple[str, str, str]] = field(default_factory=set)  # the standing problems of this round
    partial: bool = False  # an agent dir was not looked at (being re-proven, an error): nothing is forgotten

    def standing(
        self, key: tuple[str, str], path: Path, state: str, detail: str, installs=(), reason: Reason = Reason.NONE
    ) -> None:
        """A standing problem: reported the first time it is seen, then left alone quietly while it
        lasts."""
        noted = (self.patch.name, *key)
        self.seen.add(noted)
        if noted in self.keeping.noted:
            return
        self.keeping.noted.add(noted)
        found = LayerOutcome(path, state, state, False, detail, installs=list(installs), standing=True, reason=reason)
        self.results.append(found)

    def forget_gone(self) -> None:
        """After a whole round: this patch's standing problems not seen in it are gone."""
        if self.partial:
            return
        mine = {key for key in self.keeping.noted if key[0] == self.patch.name}
        self.keeping.noted -= mine - self.seen


def keep_all(
    patch: Patch,
    config: Config,
    store: Store,
    installs: list[Install],
    present: Mapping[Path, set[str]],
    keeping: Keeping,
    cancel: threading.Event,
) -> list[LayerOutcome]:
    """The watcher's round of one patch's extension layer: what it changed, what failed, and the
    standing problems it had not reported before (nothing for what is as wanted)."""
    if patch.extension is None:
        return []
    now = _Round(patch, config, store, keeping, cancel)
    if not installs:
        now.forget_gone()
        return []
    planned, errors = extension_plan.targets(patch, installs, config, store, present)
    for install, line in errors:
        now.standing(("error", line), Path("-"), "error", line, [install])
    for target in planned:
        if cancel.is_set():
            return now.results  # (a round cut short saw only some: what it did not see may still stand)
        _keep_in(now, target)
    now.forget_gone()
    return now.results


def _keep_in(now: _Round, target: extension_plan.AgentTarget) -> None:
    """One agent dir (a hold or an unsafe dir is reported by the agent dir, the rest by the file)."""
    where = str(target.agent_dir)
    path = extension.target_path(now.patch, target.agent_dir)
    if (now.patch.name, where) in now.keeping.proving:
        now.partial = True
        return
    if _held(now, target):
        return
    if target.unsafe:
        now.standing(("unsafe", where), target.agent_dir, "unsafe", target.unsafe, target.installs)
        return
    try:
        if (out := extension_reprove.taken_out(now.store, now.patch, target.agent_dir)) is not None:
            detail = f"{out.get('problem')}; left alone until `senpi-guard apply`"
            now.standing(("taken-out", where), target.agent_dir, "absent", detail, target.installs)
            return
        status = extension.inspect(now.patch, now.config, target.agent_dir)
        if status.state in ("modified", "foreign"):
            detail = f"{status.state} ({status.detail}); run `senpi-guard apply`"
            now.standing((status.state, str(status.path)), status.path, status.state, detail, target.installs)
            return
        if status.state == "stale" and status.reshapes:
            detail = (
                f"left as it is: {reshape.cost('extension', status.reshapes)}; "
                "run `senpi-guard apply` to make that change"
            )
            key = ("reshapes", f"{status.path} {status.reshapes}")
            now.standing(key, status.path, "stale", detail, reason=Reason.RESHAPE_LEFT)
            return
        wanted = (now.patch.patch_id(now.config), where)
        if status.state == "installed" and wanted not in now.keeping.failed:
            _due_again(now, target)
        if status.state in ("installed", "package") or wanted in now.keeping.failed:
            return
        outcome = _install(now, target)
    except FatalError as exc:  # (the agent dir was not looked at: what stood there may still stand)
        now.partial = True
        now.results.append(LayerOutcome(path, "error", "error", False, str(exc), installs=list(target.installs)))
        return
    if outcome is None:
        return
    if not outcome.ok and not outcome.passing:  # (a passing failure is tried again next round)
        now.keeping.failed.add(wanted)
    now.results.append(outcome)


def _due_again(now: _Round, target: extension_plan.AgentTarget) -> None:
    """An installed extension whose installs' loader stamp changed since it was last proven."""
    stamp = extension_reprove.loader_stamp(target.installs, now.keeping.hosts)
    key = (now.patch.name, str(target.agent_dir))
    if now.keeping.stamps.get(key) != stamp:
        job = extension_reprove.Reproof(now.patch, now.config, target.agent_dir, list(target.installs), stamp)
        now.keeping.reproofs.append(job)


def _held(now: _Round, target: extension_plan.AgentTarget) -> bool:
    """Whether a revert left the agent dir held (reported once; left alone until `apply`)."""
    if now.store.hold(target.agent_dir) is None:
        return False
    detail = "held by `senpi-guard revert`; left alone until `senpi-guard apply`"
    now.standing(("held", str(target.agent_dir)), target.agent_dir, "held", detail, target.installs)
    return True


def _install(now: _Round, target: extension_plan.AgentTarget) -> LayerOutcome | None:
    """Installed as apply installs it, unless since the round looked a revert held the agent dir or
    a re-proof took the extension out (None: the hold is reported, the re-proof's record says the
    rest). Both are looked at again under the write lock, which revert holds while it removes the
    extension and holds the agent dir: a pass that decided before a revert never writes after it."""
    with now.store.lock():
        if _held(now, target) or extension_reprove.taken_out(now.store, now.patch, target.agent_dir) is not None:
            return None
        outcome = extension.install(
            now.patch, now.config, target.installs, now.store, target.agent_dir, cancel=now.cancel
        )
    if outcome.ok and outcome.after == "installed":  # (just proven on what is there now)
        stamp = extension_reprove.loader_stamp(target.installs, now.keeping.hosts)
        now.keeping.stamps[(now.patch.name, str(target.agent_dir))] = stamp
    return outcome
