"""Inspect, reconcile, verify and revert one install: the dist layer's engine, which binds the patch,
the config and the store once. It is built in one place, layers/pipeline.build; every command and
the watcher reach it through the pipeline's layer steps."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from senpi_guard.core.patch import apply, reshape, reverse
from senpi_guard.core.patch.classify import State, classify
from senpi_guard.core.patch.definition import Patch, Target
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError, fix_of
from senpi_guard.io import write
from senpi_guard.io.config import Config
from senpi_guard.io.logs import unexpected
from senpi_guard.io.store import Store
from senpi_guard.layers import dist_apply, dist_files, dist_plan, dist_revert, findings, where
from senpi_guard.layers import house as house_mod
from senpi_guard.layers.dist_apply import also, left_for_apply, reshape_cost, reused
from senpi_guard.layers.findings import Inspection, Outcome, TargetFile, overall_detail, overall_state, reinstall
from senpi_guard.prove import nodes, verify
from senpi_guard.prove.replays import ReplayMemo, replay_key
from senpi_guard.prove.sandbox import Sandbox

HOLDABLE = frozenset({State.UNPATCHED, State.STALE, State.PARTIAL, State.HAND_PATCHED})


class Reconciler:
    """`cancel`, when set, stops a running replay and any write that has not started."""

    def __init__(
        self,
        patch: Patch,
        config: Config,
        store: Store | None = None,
        cancel: threading.Event | None = None,
        allow_foreign_root: bool = False,
        quick_locate: bool = False,
        reuse_stored_replays: bool = True,
        house: house_mod.House | None = None,
    ) -> None:
        self.patch = patch
        # every patch that may share a file with this one (each file is composed through all of them)
        self.house = house.with_patch(patch) if house is not None else house_mod.House.around(patch)
        # quick_locate (status only: it writes nothing): accept targets found exactly once in the
        # known shapes' folders without walking the rest of dist/ for a second definition
        self.quick_locate = quick_locate
        # identical replays run once per process; a passing one is also trusted from an earlier
        # run unless the caller asks for a fresh proof (`verify`)
        self.reuse_stored_replays = reuse_stored_replays
        self.config = config
        self.store = store or Store()
        self.replays = ReplayMemo(self.store.state_dir / "replays.json")
        self.cancel = cancel or threading.Event()
        self.allow_foreign_root = allow_foreign_root

    # ---- looking -----------------------------------------------------------------------
    def inspect(self, install: Install, unknown_ok: bool = False, held: bool = True) -> Inspection:
        """`unknown_ok` (plain revert, which needs no patch's code): a file carrying a patch that is
        not loaded is inspected (as drifted) rather than refused. `held=False` (a dry run of apply,
        which lifts a hold): the install as found, whatever a revert's hold says."""
        if install.unsupported:
            return Inspection(install, State.UNSUPPORTED, detail=install.unsupported, patch=self.patch.name)
        try:
            insp = self._inspect(install, unknown_ok)
        except FatalError as exc:
            return Inspection(install, State.ERROR, detail=str(exc), patch=self.patch.name)
        except Exception as exc:  # a bug: this install's error, the others go on
            return Inspection(install, State.ERROR, detail=unexpected(exc), patch=self.patch.name)
        hold = self.store.hold(install.package_dir) if held and insp.state in HOLDABLE else None
        if hold is not None:
            when = (
                time.strftime("%Y-%m-%d %H:%M", time.localtime(hold["time"]))
                if isinstance(hold.get("time"), int | float)
                else "earlier"
            )
            return replace(
                insp,
                state=State.HELD,
                detail=f"held since {when} ({hold.get('reason')}): "
                "the watcher leaves it alone until `senpi-guard apply`",
            )
        return insp

    def _inspect(self, install: Install, unknown_ok: bool = False) -> Inspection:
        house = self.house
        located = where.target_files(self.patch, self.store, install, self.quick_locate, house.walked, house.functions)
        found = [self._target_file(install, target, path, unknown_ok) for target, path in located]
        present = {f.target.role for f in found}
        primary = next((f for f in found if f.target.required), None)
        shape = primary and self.patch.shape_of(primary.path, present)
        deferred = self.patch.deferred(self.config, present)
        note = f'{self.patch.defer.setting} = "{self.patch.defer.value}"' if self.patch.defer else ""
        return Inspection(
            install,
            overall_state(found, deferred),
            tuple(found),
            overall_detail(found, deferred, note),
            shape,
            self.patch.name,
        )

    def remember_location(self, insp: Inspection) -> dict:
        return where.location_record(self.patch, insp)

    def _target_file(self, install: Install, target: Target, path: Path, unknown_ok: bool = False) -> TargetFile:
        snapshot = write.read(path, install.package_dir)
        if not unknown_ok:
            house_mod.unknown_on(self, apply.read_file_header(snapshot.data), path)
        recovered = reverse.recover(snapshot.data, self.patch, self.house.by_name)
        wanted = None if recovered.base is None else self.compose(install, path, recovered.base, snapshot.data)
        classified = classify(
            snapshot.data,
            recovered,
            wanted,
            self.patch.version,
            self.patch.config_digest(self.config),
            self.patch.name,
        )
        if classified.state == State.UNPATCHED and recovered.base is not None:
            classified = classified._replace(detail=apply.finding(target, recovered.base, str(path)))
        what = (
            reshape.change(self.patch, reshape.slot_in(snapshot.data), self.config)
            if classified.state == State.STALE
            else None
        )
        if what:
            classified = classified._replace(detail=f"{classified.detail}; {reshape.cost('dist', what)}", reshapes=what)
        return TargetFile(target, snapshot, str(path.relative_to(install.package_dir)), classified, wanted)

    def compose(
        self, install: Install, path: Path, base: bytes, current: bytes | None, without: tuple[str, ...] = ()
    ) -> bytes:
        """The file wanted at `path`: its original through this patch and the others `current` carries."""
        return house_mod.compose(self, install, path, base, current, without)

    def _without_me(self, install: Install, tf: TargetFile) -> bytes:
        """The file rebuilt from its original without this patch (the original, when it was alone)."""
        return self.compose(install, tf.path, self.base_of(install, tf), tf.snapshot.data, without=(self.patch.name,))

    def base_of(self, install: Install, tf: TargetFile) -> bytes:
        """The unpatched bytes of a target: recovered from the file, else from a backup."""
        c = tf.classified
        if c.base is not None:
            return c.base
        if c.state == State.DRIFTED and c.header is not None:
            backup = dist_files.fitting_backup(self.store, self.patch, self.house.by_name, install, tf)
            if backup is not None:
                return reverse.recover(backup.data, self.patch, self.house.by_name).base
        label = f"senpi {install.version} at {install.package_dir}: {tf.rel}"
        if c.state == State.HAND_PATCHED:
            raise FatalError(
                f"{label} carries a hand-applied {self.patch.hand_fix_function} that "
                f"senpi-guard cannot remove cleanly ({c.detail}); reinstall senpi "
                f"({reinstall(install)}) and run apply again"
            )
        raise FatalError(
            f"{label} was changed after senpi-guard patched it ({c.detail}); reinstall "
            f"senpi ({reinstall(install)}) and run apply again"
        )

    def module_pairs(self, insp: Inspection, roles: tuple[str, ...] | None = None) -> dict[str, verify.ModulePair]:
        """Each target's unpatched bytes beside what `apply` makes of them. Inspection rendered that
        already wherever the file gave its base; only a base from a backup is rendered here."""
        pairs = {}
        for tf in insp.files:
            if roles is not None and tf.target.role not in roles:
                continue
            base = self.base_of(insp.install, tf)
            candidate = (
                tf.wanted if tf.wanted is not None else self.compose(insp.install, tf.path, base, tf.snapshot.data)
            )
            pairs[tf.target.role] = verify.ModulePair(tf.path, tf.target.function, base, candidate)
        return pairs

    def sandbox(self, install: Install, pairs: dict[str, verify.ModulePair]) -> Sandbox:
        """Where and as whom node replays this install's code (never another user's as root)."""
        node = nodes.node_for(install.package_dir).path
        return Sandbox.judged(self.store.state_dir / "verify", install.package_dir, node, self.allow_foreign_root)

    def replay(
        self,
        install: Install,
        pairs: dict[str, verify.ModulePair],
        patch: Patch | None = None,
        config: Config | None = None,
    ) -> verify.VerifyReport:
        """This patch's replay on `pairs` (or another patch's, with its settings: one sharing a file
        with it, proven on the composed bytes before they are written: house.prove_others)."""
        patch, config = patch or self.patch, config or self.config
        key = replay_key(patch, config, install.package_dir, pairs)
        report = self.replays.get(key, self.reuse_stored_replays)
        if report is None:
            report = verify.replay(install.package_dir, pairs, patch, config, self.sandbox(install, pairs), self.cancel)
            self.replays.put(key, report)
        return report

    # ---- records -----------------------------------------------------------------------
    def _verified_before(self, install: Install, shas: dict[str, str]) -> bool:
        last = self.store.install_record(install.package_dir, patch=self.patch.name).get("last_verify")
        return (
            isinstance(last, dict)
            and bool(last.get("ok"))
            and last.get("shas") == shas
            and last.get("patch") == self.patch.patch_id(self.config)
        )

    def _recorded(self, insp: Inspection, report: verify.VerifyReport) -> str:
        """verify's record of a replay ("" when written; else why not, for its line). The record only
        spares a later apply the replay, so a verify that ran still says so; and once one could not
        be written (the write lock held past its timeout), the rest of the run does not wait again."""
        if self.store.unrecorded is None:
            try:
                self.record_verification(insp, report, {tf.rel: tf.snapshot.sha256 for tf in insp.files})
                return ""
            except FatalError as exc:
                self.store.unrecorded = str(exc)
        return f" (not recorded: {self.store.unrecorded})"

    def record_verification(self, insp: Inspection, report: verify.VerifyReport, shas: dict[str, str]) -> None:
        """What `status` shows as the last verification, what lets `apply` skip a re-run, and where
        the targets are."""
        install = insp.install
        self.store.update_install(
            install.package_dir,
            patch=self.patch.name,
            version=install.version,
            located=self.remember_location(insp),
            last_verify={
                "ok": report.ok,
                "time": report.reused_from or time.time(),  # (a replay not run again: when it ran)
                "checks": report.checks_run,
                "shas": shas,
                "node": report.node_version,
                "failures": [str(f) for f in report.failures[:5]],
                "patch": self.patch.patch_id(self.config),
                "figures": self.headline_figures(report),
            },
        )

    def headline_figures(self, report: verify.VerifyReport) -> dict[str, Any]:
        """The headline fixtures' figures (what `status` says the patch changes, without a replay)."""
        keys = ("headline", "resend", "upstreamOnly", "pipelineBytes", "originalBytes", "patchedBytes")
        figures = {name: report.stats.get(name) or {} for name in self.patch.headline}
        return {name: {k: stats[k] for k in keys if k in stats} for name, stats in figures.items() if stats}

    # ---- acting ------------------------------------------------------------------------
    def reconcile(
        self, install: Install, *, dry_run: bool = False, on_drift: str = "rebuild", keep_reshapes: bool = False
    ) -> Outcome:
        """Bring one install to the wanted state (verified before anything is written). A held
        install is left alone; a drifted file is kept aside first, and rebuilt only with
        on_drift="rebuild"; with keep_reshapes (the watcher), a config change that alters what
        sent messages look like is left to `apply`."""
        started = time.monotonic()
        insp = self.inspect(install, held=not dry_run)
        start = Outcome.of(insp)
        try:
            if not dry_run:  # (a dry run writes nothing, and may run without the write lock: `check`)
                write.remove_stale_temps(start.files)
            if insp.state in (State.UNSUPPORTED, State.ERROR):
                result = start
            elif insp.state == State.HELD:
                result = replace(start, ok=True)
            elif insp.state == State.DRIFTED and on_drift != "rebuild":
                result = self._report_drift(insp, start, dry_run)
            elif keep_reshapes and any(
                c.reason == findings.Reason.RESHAPES for c in dist_plan.plan(insp, deferred=False)
            ):
                result = left_for_apply(start, reshape_cost(insp))  # (the watcher's policy, on the plan)
            elif self.patch.deferred(self.config, insp.present):
                result = self._defer(insp, start, dry_run, keep_reshapes)
            else:
                result = self._patch(insp, start, dry_run)
        except FatalError as exc:
            result = replace(
                start, ok=False, after=start.before, detail=str(exc), passing=write.passes(exc), fix=fix_of(exc)
            )
        except OSError as exc:  # the disk or a folder failed us: one line, and the next install goes on
            result = replace(
                start,
                ok=False,
                after=start.before,
                passing=write.passes(exc),
                detail=str(
                    write.os_error(
                        exc, "work on", exc.filename or install.package_dir, "fix that, then run apply again"
                    )
                ),
            )
        except Exception as exc:  # a bug: this install's error, and the next install goes on
            result = replace(start, ok=False, after=start.before, detail=unexpected(exc))
        if dry_run and insp.state in HOLDABLE and (hold := self.store.hold(install.package_dir)) is not None:
            result = replace(result, detail=f"{result.detail}; held ({hold.get('reason')}): apply lifts the hold")
        result.millis = int((time.monotonic() - started) * 1000)
        return result

    def _report_drift(self, insp: Inspection, start: Outcome, dry_run: bool) -> Outcome:
        return dist_apply.report_drift(self, insp, start, dry_run)

    def _patch(self, insp: Inspection, start: Outcome, dry_run: bool) -> Outcome:
        return dist_apply.patch(self, insp, start, dry_run)

    def _defer(self, insp: Inspection, start: Outcome, dry_run: bool, keep_reshapes: bool = False) -> Outcome:
        return dist_apply.defer(self, insp, start, dry_run, keep_reshapes)

    def verify(self, install: Install, insp: Inspection | None = None) -> Outcome:
        """Replay the fixtures through the installed patch (or the one apply would write); `insp`:
        the install as this run inspected it already."""
        insp = insp or self.inspect(install)
        start = Outcome.of(insp)
        if insp.state in (State.UNSUPPORTED, State.ERROR):
            return start
        if insp.state == State.CLEAN:
            return replace(start, ok=True, detail="nothing to repair here, so nothing to replay")
        if insp.state == State.UPSTREAM:  # (as status judges it: as the config wants, nothing of ours there)
            return replace(
                start, ok=True, detail=f"left to senpi's own code by config, so nothing to replay{also(insp.detail)}"
            )
        began = time.monotonic()
        try:
            report = self.replay(install, self.module_pairs(insp))
        except (FatalError, OSError) as exc:
            return replace(start, detail=str(exc), fix=fix_of(exc))
        except Exception as exc:  # a bug: this install's error, the others go on
            return replace(start, detail=unexpected(exc))
        installed = insp.state == State.PATCHED
        unrecorded = self._recorded(insp, report) if installed else ""
        # (not installed: one line saying so, and what the replay proved of what apply would write)
        absent = insp.state in (State.UNPATCHED, State.HELD, State.UPSTREAM, State.CLEAN)
        what = "not installed" if absent else "not as apply writes it"
        what = "the installed patch" if installed else f"{what}; the patch apply would write"
        if report.ok:
            # (what it changes, figures first, is the command's `changes` line: audit/resend.py)
            detail = f"{what} passed {report.checks_run} checks (node {report.node_version}{reused(report)})"
        else:
            detail = f"{what} FAILED its replay: " + "; ".join(str(f) for f in report.failures[:3])
        return replace(
            start,
            ok=report.ok and (installed or insp.state == State.HELD),  # (held: as asked, apply still proven)
            report=report,
            detail=detail + unrecorded,
            millis=int((time.monotonic() - began) * 1000),
        )

    def revert(self, install: Install, *, from_edit: bool = False, alone: bool = False) -> Outcome:
        """Give the install its original bytes and hold it there (see dist_revert)."""
        started = time.monotonic()
        result = dist_revert.revert(self, install, from_edit=from_edit, alone=alone)
        result.millis = int((time.monotonic() - started) * 1000)
        return result
