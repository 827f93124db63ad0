"""The two layers as the pipeline runs them: `Run` (what the user asked of this run), the `Layer`
steps every layer has, the dist layer's (`DistLayer`, over layers/dist.Reconciler, one install at a
time) and the extension layer's (`AgentDirLayer`, one file per agent dir). Built and run in order
by layers/pipeline, the one door commands use."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from senpi_guard import ui
from senpi_guard.core.patch.classify import AS_ASKED, State
from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import extension, extension_keep, extension_plan, extension_reprove
from senpi_guard.layers import extension_removal as removal
from senpi_guard.layers.dist import Reconciler
from senpi_guard.layers.extension import LayerOutcome
from senpi_guard.layers.extension_keep import Keeping
from senpi_guard.layers.findings import Inspection, Outcome
from senpi_guard.layers.verdicts import Result
from senpi_guard.prove import verify as verify_mod


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
        self.known_roles: dict[Path, set[str]] = {}  # the target roles each install has, for the extension layer
        self.inspections: dict[Path, Inspection] = {}  # (inspect only: a read-only run)
        self.checked: dict[Path, Outcome] = {}  # (check: each release's dry run, for the extension)
        self.failed: dict[Path, str] = {}  # (apply) the installs this run could not bring to the wanted state

    def roles(self, installs: list[Install]) -> dict[Path, set[str]]:
        """The target roles each install has (what this run's apply found, else an inspection's)."""
        for install in installs:
            if install.package_dir not in self.known_roles:
                self.known_roles[install.package_dir] = self.inspection(install).present
        return {i.package_dir: self.known_roles[i.package_dir] for i in installs}

    def unplaced(self, installs: list[Install]) -> dict[Path, set[int]]:
        """Who owns the target files of each install whose dist layer is not as asked (inspected)."""
        found = {i.package_dir: self.inspection(i) for i in installs}
        return {d: {f.snapshot.uid for f in insp.files} for d, insp in found.items() if insp.state not in AS_ASKED}

    def inspection(self, install: Install) -> Inspection:
        """What is there, once per read-only run (status and verify judge by it)."""
        if install.package_dir not in self.inspections:
            self.inspections[install.package_dir] = self.reconciler.inspect(install)
        return self.inspections[install.package_dir]

    def inspect(self, installs: list[Install], run: Run) -> list[Result]:
        results: list[Result] = []
        for install in installs:
            insp = self.inspection(install)
            self.known_roles[install.package_dir] = insp.present
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
            self.known_roles[install.package_dir] = outcome.present
            if not outcome.ok:
                self.failed[install.package_dir] = outcome.detail
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
                results.append(self.reconciler.verify(install, self.inspection(install)))
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
        """The watcher's round over the installs its schedule says are due: each reconciled as the
        config's on_drift says, a change that would reshape sent messages left to `apply`. Each
        outcome is handed over as it comes (the store's lock released), before the next install."""
        for install in installs:
            if self.reconciler.cancel.is_set():
                return
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
                self.dist.roles(installs),
                run.dry_run,
                run.allow_foreign_root,
                run.here,
                failed=self.dist.failed,
            )
        return self._ours(done)

    def inspect(self, installs: list[Install], run: Run) -> list[Result]:
        return self._ours(
            extension_plan.inspect_all(
                self.patch, self.config, self.store, installs, self.dist.roles(installs), self.dist.unplaced(installs)
            )
        )

    def verify(self, installs: list[Install], run: Run) -> list[Result]:
        with ui.said_if_slow(f"{self.patch.name}: replaying the fixture sessions through the extension…"):
            done = extension_plan.verify_all(
                self.patch,
                self.config,
                self.store,
                installs,
                self.dist.roles(installs),
                run.allow_foreign_root,
                fresh=not self.dist.reconciler.reuse_stored_replays,
                unplaced=self.dist.unplaced(installs),
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
                self.patch, self.config, self.store, installs, self.dist.roles(installs), keeping, cancel
            )
        )
