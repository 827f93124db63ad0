"""One pipeline for every layer of every patch: the one door to each layer.

A `Layer` is where one patch lives (senpi's dist/ files, or an extension in each agent dir) and goes
through the same steps everywhere: `inspect` what is there (status: read-only, no replay, judged as
verify judges it), `apply` (plan the wanted bytes from the base, prove them by replay with node,
write them with the one writer, io/write, and record the result per target, patch and layer),
`verify`, `revert` (with a hold), `check` (a release not installed: a dry run proven afresh) and
`keep` (the watcher's round: the layer's own policy, the watcher's schedule). Every command
(status, apply, verify, revert, check, demo, audit's use of the installed code) and the watcher
build the layers here (`build`, the one place the dist layer's engine is made) and run each step
over all of them in write order: a patch's dist layer before its extension (the extension's safety
depends on what the dist layer found), patches in their `write_order`; revert takes them off in
the reverse order. Both layers' results carry `layer`, `patch`, `before`, `after` (one state
vocabulary, core.patch.classify.State), `ok`, `detail` and `report`."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from senpi_guard import ui
from senpi_guard.core.patch.classify import AS_ASKED, State
from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import (
    dist_revert,
    extension,
    extension_keep,
    extension_plan,
    extension_reprove,
    figures,  # noqa: F401 (commands reach the shipped figures here)
)
from senpi_guard.layers import extension_removal as removal
from senpi_guard.layers.dist import Reconciler
from senpi_guard.layers.extension import LayerOutcome
from senpi_guard.layers.extension_keep import Keeping
from senpi_guard.layers.findings import Inspection, Outcome, Reason
from senpi_guard.layers.house import House
from senpi_guard.layers.package import export as export_package  # noqa: F401 (commands reach it here)
from senpi_guard.layers.verdicts import APPLY, Result, as_owner, concerns, fix_step, next_step  # noqa: F401 (as export_package)
from senpi_guard.prove import owners
from senpi_guard.prove import verify as verify_mod

# One result type for both layers (layers/verdicts.Result): each carries `layer` ("dist",
# "extension"), `patch`, `before`, `after` (core.patch.classify.State, the one vocabulary), `ok`,
# `detail` and `report`.
placement = extension_plan.placement  # (which agent dirs an install uses: status and audit show it)
# the watcher's re-proof of an installed extension, handed over by the extension layer's `keep`
Reproof = extension_reprove.Reproof
reprove = extension_reprove.reprove
loader_stamp = extension_reprove.loader_stamp
Placement = extension_plan.Placement
LayerStatus = extension.LayerStatus
__all__ = [
    "Keeping",
    "LayerOutcome",
    "LayerStatus",
    "Outcome",
    "Pipeline",
    "Placement",
    "Reason",
    "Reproof",
    "Result",
    "Run",
    "build",
    "loader_stamp",
    "placement",
    "reprove",
]


@dataclass(frozen=True)
class Run:
    """What the user asked of this run."""

    dry_run: bool = False
    here: bool = False  # apply: also the agent dir senpi uses from the current folder
    from_edit: bool = False  # revert: ignore backups
    alone: bool = False  # revert --patch: only the patches asked for come off (shared files are rebuilt)
    everywhere: bool = True  # revert: every install (no --root): also each agent dir an extension was written to
    others: tuple[Install, ...] = ()  # revert --root: the installs found that it leaves alone
    allow_foreign_root: bool = False
    keeping: Keeping | None = None  # watch: what the watcher carries between rounds


class Layer(Protocol):
    name: str  # "dist" or "extension"
    patch: Patch

    def apply(self, installs: list[Install], run: Run) -> list[Result]: ...

    def inspect(self, installs: list[Install], run: Run) -> list[Result]: ...

    def verify(self, installs: list[Install], run: Run) -> list[Result]: ...

    def revert(self, installs: list[Install], run: Run) -> list[Result]: ...

    def check(self, installs: list[Install], run: Run) -> list[Result]: ...

    def keep(self, installs: list[Install], run: Run) -> Iterable[Result]: ...


class DistLayer:
    """The patch's edit of senpi's dist/ files, one install at a time (layers/dist.Reconciler)."""

    name = "dist"

    def __init__(self, reconciler: Reconciler) -> None:
        self.reconciler = reconciler
        self.patch = reconciler.patch
        self.present: dict[Path, set[str]] = {}  # what each install's inspection found, for the extension
        self.inspections: dict[Path, Inspection] = {}  # (inspect only: a read-only run)
        self.checked: dict[Path, Outcome] = {}  # (check: each release's dry run, for the extension)

    def present_of(self, install: Install) -> set[str]:
        if install.package_dir not in self.present:
            self.present[install.package_dir] = self.inspection(install).present
        return self.present[install.package_dir]

    def inspection(self, install: Install) -> Inspection:
        """What is there, once per read-only run (status shows it and judges by it)."""
        if install.package_dir not in self.inspections:
            self.inspections[install.package_dir] = self.reconciler.inspect(install)
        return self.inspections[install.package_dir]

    def inspect(self, installs: list[Install], run: Run) -> list[Result]:
        results: list[Result] = []
        for install in installs:
            insp = self.inspection(install)
            self.present[install.package_dir] = insp.present
            results.append(replace(Outcome.of(insp), ok=insp.state in AS_ASKED))
        return results

    def apply(self, installs: list[Install], run: Run) -> list[Result]:
        store = self.reconciler.store
        results: list[Result] = []
        for install in installs:
            if not run.dry_run:  # an apply by hand lifts the hold a revert left
                store.clear_hold(install.package_dir)
            with ui.said_if_slow(self._replaying(install)):
                outcome = self.reconciler.reconcile(install, dry_run=run.dry_run)
            self.present[install.package_dir] = outcome.present
            record = store.install_record(install.package_dir, patch=self.patch.name)
            if not run.dry_run and record.get("backoff"):  # a hand-run apply lifts the watcher's back-off
                store.update_install(install.package_dir, patch=self.patch.name, backoff=None)
            results.append(outcome)
        return results

    def verify(self, installs: list[Install], run: Run) -> list[Result]:
        # (build's fresh_proofs: no replay trusted from an earlier run, unless two installs are identical)
        results: list[Result] = []
        for install in installs:
            with ui.said_if_slow(self._replaying(install)):
                results.append(self.reconciler.verify(install))
        return results

    def _replaying(self, install: Install) -> str:
        return f"senpi {install.version} ({install.manager}) [{self.patch.name}]: replaying the fixtures with node…"

    def revert(self, installs: list[Install], run: Run) -> list[Result]:
        return [self.reconciler.revert(install, from_edit=run.from_edit, alone=run.alone) for install in installs]

    def check(self, installs: list[Install], run: Run) -> list[Result]:
        """A release not installed (`check`): what apply would do, as a dry run, proven afresh."""
        results: list[Result] = []
        for install in installs:
            with ui.said_if_slow(self._replaying(install)):
                outcome = self.checked[install.package_dir] = self.reconciler.reconcile(install, dry_run=True)
            results.append(outcome)
        return results

    def found(self, install: Install) -> tuple[State, str]:
        """What this layer found of an install (its state, and why), from the check's dry run when
        one ran, else from an inspection."""
        if (outcome := self.checked.get(install.package_dir)) is not None:
            return outcome.before, outcome.detail
        insp = self.inspection(install)
        return insp.state, insp.detail

    def keep(self, installs: list[Install], run: Run) -> Iterator[Result]:
        """The watcher's round: each install its schedule says is due, reconciled as the config's
        on_drift says, a change that would reshape sent messages left to `apply`. Each outcome is
        handed over as it comes (the store's lock released), before the next install is looked at:
        the schedule judges a failure by the bytes it failed on, and its quiet-period wait comes
        between the installs, as a stop does."""
        keeping = run.keeping or Keeping()
        for install in installs:
            if self.reconciler.cancel.is_set():
                return
            if not keeping.due(self.patch, install):
                continue
            with self.reconciler.store.lock():
                outcome = self.reconciler.reconcile(
                    install, on_drift=self.reconciler.config.on_drift, keep_reshapes=True
                )
            yield outcome

    # ---- the installed code, as audit replays sessions through it --------------------------
    def module_pairs(self, install: Install, roles: tuple[str, ...] | None = None) -> dict[str, verify_mod.ModulePair]:
        """The modules of these roles (every target's by default) as installed and as patched;
        refused, with what inspect found, when the install cannot be used."""
        insp = self.inspection(install)
        if insp.state in (State.UNSUPPORTED, State.ERROR):
            raise FatalError(insp.detail)
        return self.reconciler.module_pairs(insp, roles=roles)

    def sandbox(self, install: Install, pairs: dict[str, verify_mod.ModulePair]) -> verify_mod.Sandbox:
        return self.reconciler.sandbox(install, pairs)


class AgentDirLayer:
    """The patch's extension, one file per agent dir the installs use (layers/extension_plan)."""

    name = "extension"

    def __init__(self, patch: Patch, config: Config, store: Store, dist: DistLayer) -> None:
        self.patch = patch
        self.config = config
        self.store = store
        self.dist = dist

    def status_at(self, agent_dir: Path) -> extension.LayerStatus:
        """What is in one agent dir, read-only (status shows it, wanted or not)."""
        try:
            return extension.inspect(self.patch, self.config, agent_dir)
        except FatalError as exc:
            return extension.LayerStatus("error", extension.target_path(self.patch, agent_dir), str(exc))

    def taken_out(self, agent_dir: Path) -> dict | None:
        """The record of a watcher's re-proof that took the extension out of this agent dir."""
        return extension_reprove.shown(self.store, self.patch, agent_dir)

    def _ours(self, results: Iterable[LayerOutcome]) -> list[Result]:
        named: list[Result] = []
        for result in results:
            result.patch = self.patch.name
            named.append(result)
        return named

    def apply(self, installs: list[Install], run: Run) -> list[Result]:
        with ui.said_if_slow(f"{self.patch.name}: the extension layer: replaying the fixture sessions through it…"):
            done = extension_plan.install_all(
                self.patch,
                self.config,
                self.store,
                installs,
                self.dist.present_of,
                run.dry_run,
                run.allow_foreign_root,
                run.here,
            )
        return self._ours(done)

    def inspect(self, installs: list[Install], run: Run) -> list[Result]:
        return self._ours(
            extension_plan.inspect_all(self.patch, self.config, self.store, installs, self.dist.present_of)
        )

    def verify(self, installs: list[Install], run: Run) -> list[Result]:
        with ui.said_if_slow(f"{self.patch.name}: replaying the fixture sessions through the extension…"):
            done = extension_plan.verify_all(
                self.patch,
                self.config,
                self.store,
                installs,
                self.dist.present_of,
                run.allow_foreign_root,
                fresh=not self.dist.reconciler.reuse_stored_replays,
            )
        return self._ours(done)

    def revert(self, installs: list[Install], run: Run) -> list[Result]:
        removed = removal.remove_all(self.patch, self.config, self.store, installs, run.everywhere, run.others)
        return self._ours(removed)

    def check(self, installs: list[Install], run: Run) -> list[Result]:
        """A release not installed (`check`): the extension as apply would render it, replayed
        through the release's own extension runner; no agent dir is looked at."""
        if self.patch.extension is None:
            return []
        usable = [i for i in installs if self.dist.found(i)[0] not in (State.UNSUPPORTED, State.ERROR)]
        # an install it cannot use: the dist layer says why, and without it this layer must (else a
        # release nothing was proven on would pass)
        refused = [
            LayerOutcome(Path("-"), State.ERROR, State.ERROR, False, self.dist.found(i)[1], installs=[i])
            for i in installs
            if i not in usable and "dist" not in self.config.layers
        ]
        if not usable:
            return self._ours(refused)
        path = Path(self.patch.extension.file_name)
        try:
            rendered = self.patch.render_extension(self.config)
            report = extension.replay(self.patch, self.config, rendered, usable, self.store, reuse=False)
        except FatalError as exc:
            failed = LayerOutcome(path, State.ABSENT, State.ABSENT, False, str(exc), installs=usable)
            return self._ours([*refused, failed])
        detail = f"{report.checks_run} checks passed" if report.ok else "; ".join(map(str, report.failures[:3]))
        replayed = LayerOutcome(path, State.ABSENT, State.ABSENT, report.ok, detail, report, installs=usable)
        return self._ours([*refused, replayed])

    def keep(self, installs: list[Install], run: Run) -> list[Result]:
        keeping = run.keeping or Keeping()
        cancel = self.dist.reconciler.cancel
        return self._ours(
            extension_keep.keep_all(
                self.patch, self.config, self.store, installs, self.dist.present_of, keeping, cancel
            )
        )


def extension_written(store: Store) -> list[Path]:
    """Every agent dir the records say an extension file was written to (revert takes it out of each)."""
    return store.agent_dirs(extension.WRITTEN)


@dataclass
class Pipeline:
    layers: list[Layer]
    store: Store
    results: list[Result] = field(default_factory=list)
    dists: dict[str, DistLayer] = field(default_factory=dict)  # every patch's, wanted or not (status shows them)
    agent_dirs: dict[str, AgentDirLayer] = field(default_factory=dict)  # (likewise, for patches with an extension)

    def run(self, step: str, installs: list[Install], run: Run) -> list[Result]:
        order: Iterable[Layer] = reversed(self.layers) if step == "revert" else self.layers
        with owners.step():  # (whose code a replay runs: judged once for the whole step)
            for layer in order:
                self.results += getattr(layer, step)(installs, run)
        return self.results

    def keep_order(self) -> list[Layer]:
        """The watcher's order: every dist layer first (in write order), then the extensions, each
        still after its own patch's dist layer: an extension's re-proof (senpi's loader, seconds)
        never holds up another patch's dist layer after an update."""
        return sorted(self.layers, key=lambda layer: layer.name != "dist")

    @property
    def ok(self) -> bool:
        return all(result.ok for result in self.results)

    def revert_plan(self, installs: list[Install]) -> list[dict]:
        """What `revert` would do, layer by layer (dist per install, extension per agent dir), and
        what stops it from doing so without keeping a file aside; reads only (for `uninstall`)."""
        rows: list[dict] = []
        for layer in reversed(self.layers):
            if isinstance(layer, DistLayer):
                rows += [dist_revert.plan(layer.reconciler, install) for install in installs]
            elif isinstance(layer, AgentDirLayer):
                rows += removal.removal(layer.patch, layer.config, layer.store, installs)
        return rows

    def split(self) -> tuple[list[Outcome], list[LayerOutcome]]:
        return (
            [r for r in self.results if r.layer == "dist"],
            [r for r in self.results if r.layer == "extension"],
        )


def build(
    patches: list[Patch],
    config: Config,
    store: Store | None = None,
    *,
    allow_foreign_root: bool = False,
    all_layers: bool = False,
    quick_locate: bool = False,
    only: tuple[str, ...] = (),
    fresh_proofs: bool = False,
    cancel: threading.Event | None = None,
) -> Pipeline:
    """Every layer of every patch the config wants (`all_layers`: every one there is, as revert
    takes off what an earlier config put in place; `quick_locate`: for status, which writes nothing;
    `only`: the layers of these patches alone, every patch still composing the files they share;
    `fresh_proofs`: no replay trusted from an earlier run; `cancel`: stops a replay or a write not
    yet started). The one place the dist layer's engine is made."""
    store = store or Store()
    layers: list[Layer] = []
    dists: dict[str, DistLayer] = {}
    agent_dirs: dict[str, AgentDirLayer] = {}
    house = House(patches)
    for patch in patches:
        if only and patch.name not in only:
            continue
        reconciler = Reconciler(
            patch,
            config,
            store,
            cancel=cancel,
            allow_foreign_root=allow_foreign_root,
            quick_locate=quick_locate,
            reuse_stored_replays=not fresh_proofs,
            house=house,
        )
        dist = dists[patch.name] = DistLayer(reconciler)
        if all_layers or "dist" in config.layers:
            layers.append(dist)
        if patch.extension is not None:
            agent_dirs[patch.name] = AgentDirLayer(patch, config, store, dist)
            if all_layers or "extension" in config.layers:
                layers.append(agent_dirs[patch.name])
    return Pipeline(layers, store, dists=dists, agent_dirs=agent_dirs)
