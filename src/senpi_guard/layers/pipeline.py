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
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import (
    dist_plan,
    dist_revert,
    extension,
    extension_plan,
    extension_reprove,
    figures,  # noqa: F401 (commands reach the shipped figures here)
)
from senpi_guard.layers import extension_removal as removal
from senpi_guard.layers.change import Change, Hold, Step, Want  # noqa: F401 (commands reach the plan here)
from senpi_guard.layers.dist import Reconciler
from senpi_guard.layers.extension import LayerOutcome
from senpi_guard.layers.extension_keep import Keeping
from senpi_guard.layers.findings import Outcome, Reason
from senpi_guard.layers.house import House
from senpi_guard.layers.package import export as export_package  # noqa: F401 (commands reach it here)
from senpi_guard.layers.steps import AgentDirLayer, DistLayer, Layer, Run
from senpi_guard.layers.verdicts import APPLY, Result, as_owner, concerns, fix_step, next_step  # noqa: F401 (as export_package)
from senpi_guard.prove import owners

# One result type for both layers (layers/verdicts.Result): each carries `layer` ("dist",
# "extension"), `patch`, `before`, `after` (core.patch.classify.State, the one vocabulary), `ok`,
# `detail` and `report`.
alone_costs = extension_plan.alone_costs  # (what the extension costs without the dist layer: status's risk)
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

    def plan(self, installs: list[Install], inspected: list[Result] | None = None) -> list[Change]:
        """What `apply` would change to make every install as the config wants, read-only: each
        dist layer's change per target file (layers/dist_plan), then each extension's per agent dir
        (layers/extension_plan.change, from `inspected`: the layers' inspections, when made), in
        write order."""
        changes: list[Change] = []
        for layer in self.layers:
            if isinstance(layer, DistLayer):
                for install in installs:
                    insp = layer.inspection(install)
                    deferred = layer.patch.deferred(layer.reconciler.config, insp.present)
                    changes += dist_plan.plan(insp, deferred)
            elif isinstance(layer, AgentDirLayer):
                mine = [r for r in inspected or () if r.layer == "extension" and r.patch == layer.patch.name]
                found = mine if inspected is not None else layer.inspect(installs, Run())
                changes += [extension_plan.change(outcome) for outcome in found]
        return changes

    @property
    def ok(self) -> bool:
        return all(result.ok for result in self.results)

    def revert_plan(self, installs: list[Install]) -> list[Change]:
        """What `revert` would do to give everything its original (goal: original), layer by layer
        in revert order (dist per file, extension per agent dir); a change it cannot make says why
        (`uninstall` refuses while any does). Reads only."""
        rows: list[Change] = []
        for layer in reversed(self.layers):
            if isinstance(layer, DistLayer):
                rows += [c for install in installs for c in dist_revert.plan(layer.reconciler, install)]
            elif isinstance(layer, AgentDirLayer):
                rows += removal.removal(layer.patch, layer.config, layer.store, installs)
        return rows

    def split(self) -> tuple[list[Outcome], list[LayerOutcome]]:
        return (
            [r for r in self.results if r.layer == "dist"],
            [r for r in self.results if r.layer == "extension"],
        )


def house_around(patch: Patch) -> list[Patch]:
    """Every patch senpi-guard has, with `patch` as given in place of its namesake (a file it shares
    with another is composed through both: audit builds its pipeline on them)."""
    return list(House.around(patch).patches)


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
