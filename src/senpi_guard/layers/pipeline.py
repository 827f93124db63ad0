"""One pipeline for every layer of every patch.

A `Layer` is where one patch lives (senpi's dist/ files, or an extension in each agent dir) and goes
through the same steps everywhere: inspect what is there (status: read-only, no replay, judged as
verify judges it), plan the wanted bytes from the base, prove
them by replay with node, write them (one writer, io/write), record the result per (target, patch,
layer), and revert them with a hold. apply, verify and revert build the layers once (`build`) and run
each step over all of them in write order: a patch's dist layer before its extension (the
extension's safety depends on what the dist layer found), patches in their `write_order`; revert
takes them off in the reverse order."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from senpi_guard import ui
from senpi_guard.core.patch.classify import SETTLED
from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import extension_plan
from senpi_guard.layers.dist import Reconciler
from senpi_guard.layers.extension import LayerOutcome
from senpi_guard.layers.findings import Inspection, Outcome
from senpi_guard.layers.house import House

Result = Outcome | LayerOutcome


@dataclass(frozen=True)
class Run:
    """What the user asked of this run."""

    dry_run: bool = False
    here: bool = False  # apply: also the agent dir senpi uses from the current folder
    from_edit: bool = False  # revert: ignore backups
    alone: bool = False  # revert --patch: only the patches asked for come off (shared files are rebuilt)
    allow_foreign_root: bool = False


class Layer(Protocol):
    name: str  # "dist" or "extension"
    patch: Patch

    def apply(self, installs: list[Install], run: Run) -> list[Result]: ...

    def inspect(self, installs: list[Install], run: Run) -> list[Result]: ...

    def verify(self, installs: list[Install], run: Run) -> list[Result]: ...

    def revert(self, installs: list[Install], run: Run) -> list[Result]: ...


class DistLayer:
    """The patch's edit of senpi's dist/ files, one install at a time (layers/dist.Reconciler)."""

    name = "dist"

    def __init__(self, reconciler: Reconciler) -> None:
        self.reconciler = reconciler
        self.patch = reconciler.patch
        self.present: dict[Path, set[str]] = {}  # what each install's inspection found, for the extension
        self.inspections: dict[Path, Inspection] = {}  # (inspect only: a read-only run)

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
            results.append(replace(Outcome.of(insp), ok=insp.state in SETTLED))
        return results

    def apply(self, installs: list[Install], run: Run) -> list[Result]:
        store = self.reconciler.store
        results: list[Result] = []
        for install in installs:
            if not run.dry_run:  # an apply by hand lifts the hold a revert left
                store.clear_hold(install.package_dir)
            ui.progress(
                f"senpi {install.version} ({install.manager}) [{self.patch.name}]: locating, "
                "patching and replaying the fixtures with node…"
            )
            outcome = self.reconciler.reconcile(install, dry_run=run.dry_run)
            self.present[install.package_dir] = outcome.present
            record = store.install_record(install.package_dir, patch=self.patch.name)
            if not run.dry_run and record.get("backoff"):  # a hand-run apply lifts the watcher's back-off
                store.update_install(install.package_dir, patch=self.patch.name, backoff=None)
            results.append(outcome)
        return results

    def verify(self, installs: list[Install], run: Run) -> list[Result]:
        r = self.reconciler  # a fresh proof (not one trusted from an earlier run), unless two installs are identical
        fresh = Reconciler(
            self.patch,
            r.config,
            r.store,
            allow_foreign_root=r.allow_foreign_root,
            reuse_stored_replays=False,
            house=r.house,
        )
        results: list[Result] = []
        for install in installs:
            ui.progress(
                f"senpi {install.version} ({install.manager}) [{self.patch.name}]: replaying the fixtures with node…"
            )
            results.append(fresh.verify(install))
        return results

    def revert(self, installs: list[Install], run: Run) -> list[Result]:
        return [self.reconciler.revert(install, from_edit=run.from_edit, alone=run.alone) for install in installs]


class AgentDirLayer:
    """The patch's extension, one file per agent dir the installs use (layers/extension_plan)."""

    name = "extension"

    def __init__(self, patch: Patch, config: Config, store: Store, dist: DistLayer) -> None:
        self.patch = patch
        self.config = config
        self.store = store
        self.dist = dist

    def apply(self, installs: list[Install], run: Run) -> list[Result]:
        ui.progress(f"{self.patch.name}: the extension layer: replaying the fixture sessions through it…")
        return list(
            extension_plan.install_all(
                self.patch,
                self.config,
                self.store,
                installs,
                self.dist.present_of,
                run.dry_run,
                run.allow_foreign_root,
                run.here,
            )
        )

    def inspect(self, installs: list[Install], run: Run) -> list[Result]:
        return list(extension_plan.inspect_all(self.patch, self.config, self.store, installs, self.dist.present_of))

    def verify(self, installs: list[Install], run: Run) -> list[Result]:
        ui.progress(f"{self.patch.name}: replaying the fixture sessions through the extension…")
        return list(
            extension_plan.verify_all(
                self.patch, self.config, self.store, installs, self.dist.present_of, run.allow_foreign_root
            )
        )

    def revert(self, installs: list[Install], run: Run) -> list[Result]:
        return list(extension_plan.remove_all(self.patch, self.config, self.store, installs))


REFUSAL_FIX = re.compile(r"\((chmod go-w [^)]+)\)")


def refusal_step(message: str | None) -> str | None:
    """The fix a replay refusal names (`chmod go-w …`), as the next step: apply alone would only
    be refused the same way."""
    found = REFUSAL_FIX.search(message or "")
    return f"{found[1]}, then senpi-guard apply" if found else None


def next_step(result: Result) -> str | None:
    """What to run when a layer is not as wanted (status and verify say the same), else None."""
    if result.ok:
        return None
    if fix := refusal_step(getattr(result, "detail", None)):
        return fix
    if isinstance(result, Outcome):
        return ui.NEXT_STEPS.get(result.after) if result.after not in SETTLED else None
    return result.step or None


def concerns(result: Result, install: Install) -> bool:
    """Whether a result is about this install (an extension's: an agent dir it uses)."""
    return result.install == install if isinstance(result, Outcome) else install in result.installs


@dataclass
class Pipeline:
    layers: list[Layer]
    store: Store
    results: list[Result] = field(default_factory=list)
    dists: dict[str, DistLayer] = field(default_factory=dict)  # every patch's, wanted or not (status shows them)

    def run(self, step: str, installs: list[Install], run: Run) -> list[Result]:
        order: Iterable[Layer] = reversed(self.layers) if step == "revert" else self.layers
        for layer in order:
            self.results += getattr(layer, step)(installs, run)
        return self.results

    @property
    def ok(self) -> bool:
        return all(result.ok for result in self.results)

    def split(self) -> tuple[list[Outcome], list[LayerOutcome]]:
        return (
            [r for r in self.results if isinstance(r, Outcome)],
            [r for r in self.results if isinstance(r, LayerOutcome)],
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
) -> Pipeline:
    """Every layer of every patch the config wants (`all_layers`: every one there is, as revert
    takes off what an earlier config put in place; `quick_locate`: for status, which writes nothing;
    `only`: the layers of these patches alone, every patch still composing the files they share)."""
    store = store or Store()
    layers: list[Layer] = []
    dists = {}
    house = House(patches)
    for patch in patches:
        if only and patch.name not in only:
            continue
        reconciler = Reconciler(
            patch, config, store, allow_foreign_root=allow_foreign_root, quick_locate=quick_locate, house=house
        )
        dist = dists[patch.name] = DistLayer(reconciler)
        if all_layers or "dist" in config.layers:
            layers.append(dist)
        if patch.extension is not None and (all_layers or "extension" in config.layers):
            layers.append(AgentDirLayer(patch, config, store, dist))
    return Pipeline(layers, store, dists=dists)
