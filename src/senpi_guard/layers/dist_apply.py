"""What `Reconciler.reconcile` does once it knows what an install needs: patch it (prove, then
write each file, backups first), hand it to senpi's own code (defer), or report its drift."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from senpi_guard.core.patch import apply, reshape
from senpi_guard.core.patch.classify import State
from senpi_guard.errors import FatalError
from senpi_guard.io import write
from senpi_guard.layers import dist_plan
from senpi_guard.layers import house as house_mod
from senpi_guard.layers.change import Change
from senpi_guard.layers.execute import Done, Ready, execute
from senpi_guard.layers.findings import Inspection, Outcome, Reason, TargetFile
from senpi_guard.prove import verify

if TYPE_CHECKING:
    from senpi_guard.layers.dist import Reconciler


def report_drift(rec: Reconciler, insp: Inspection, start: Outcome, dry_run: bool) -> Outcome:
    """(on_drift = "report") a hand-edited file is kept in the data folder, and left as it is."""
    install = insp.install
    drifted = [] if dry_run else [tf for tf in insp.files if tf.classified.state == State.DRIFTED]
    save = rec.store.save_drifted
    kept = [str(save(install.package_dir, install.version, tf.rel, tf.snapshot.data)) for tf in drifted]
    where = f"; a copy is kept at {', '.join(kept)}" if kept else ""
    return replace(
        start,
        backups=kept,
        detail=f"{start.detail}{where}; not rebuilt (on_drift = "
        '"report"): run `senpi-guard apply` to rebuild it from the backup',
    )


def patch(rec: Reconciler, insp: Inspection, start: Outcome, dry_run: bool) -> Outcome:
    install = insp.install
    # (refused here: nothing proven or written)
    to_write = planned_writes(insp, dist_plan.plan(insp, deferred=False))
    pairs = rec.module_pairs(insp)
    wanted = {role: pair.candidate for role, pair in pairs.items()}
    if insp.state == State.CLEAN:  # a repair with nothing to repair: nothing to prove either
        if not dry_run:  # (where its targets are, or that there are none: status trusts it next time)
            rec.store.update_install(install.package_dir, patch=rec.patch.name, located=rec.remember_location(insp))
        return replace(start, ok=True, detail="nothing to repair here")
    shas = {tf.rel: apply.sha256(wanted[tf.target.role]) for tf in insp.files}
    if not to_write and rec._verified_before(install, shas):
        return replace(start, ok=True, after=State.PATCHED, detail="already patched and verified")
    report = rec.replay(install, pairs)
    if not dry_run:
        rec.record_verification(insp, report, shas)
    if not report.ok:
        first = report.failures[0] if report.failures else "no checks ran"
        raise FatalError(
            f"verification failed, nothing was changed: {first} "
            f"({len(report.failures)} failed of {report.checks_run} checks){composed_with(rec, wanted)}"
        )
    # every other patch on a file about to be written is proven on the composed bytes too
    house_mod.prove_others(rec, install, ((tf.path, wanted[tf.target.role]) for _c, tf in to_write))
    proven = f"verified: {report.checks_run} checks passed (node {report.node_version}{reused(report)})"
    if dry_run:
        return _dry_patch(start, report, to_write, wanted, proven, insp)
    ready = [
        Ready(c, wanted[tf.target.role], tf.snapshot, install, tf.rel, _backup_under(tf, pairs))
        for c, tf in sorted(to_write, key=lambda ct: rec.patch.write_rank(ct[1].target.role))
    ]
    done = execute(ready, rec.store, rec.cancel)
    if done.error is not None:
        return stopped(start, done, "apply")
    detail = proven + also(reshape_cost(insp))
    if done.kept:
        detail += f"; the hand-edited file was kept at {', '.join(done.kept)}"
    return replace(
        start,
        ok=True,
        after=State.PATCHED,
        report=report,
        changed=done.changed,
        backups=done.backups + done.kept,
        detail=detail,
        final_shas={**start.final_shas, **done.final},
    )


def _backup_under(tf: TargetFile, pairs: dict[str, verify.ModulePair]) -> str:
    """The original's sha256 a file is backed up under before it is written ("": it has our header)."""
    return apply.sha256(pairs[tf.target.role].original) if tf.classified.header is None else ""


def _dry_patch(
    start: Outcome, report: verify.VerifyReport, to_write: list, wanted: dict[str, bytes], proven: str, insp: Inspection
) -> Outcome:
    from senpi_guard import ui
    from senpi_guard.diffview import window_diff

    diff = "".join(
        window_diff(tf.rel, tf.snapshot.data, wanted[tf.target.role], whole=ui.very_verbose()) for _c, tf in to_write
    )
    return replace(
        start,
        ok=True,
        report=report,
        diff=diff,
        would_write=[tf.rel for _c, tf in to_write],
        detail=f"dry run: {proven}; nothing written" + also(reshape_cost(insp)),
    )


def stopped(start: Outcome, done: Done, command: str) -> Outcome:
    """The outcome of a run the executor stopped (`done.error`): raised when nothing was written (the
    install's error, as a refusal before a write is), else a partial outcome saying what was."""
    assert done.error is not None
    if not done.changed:
        raise done.error
    return replace(
        start,
        after=State.PARTIAL,
        changed=done.changed,
        backups=done.backups + done.kept,
        final_shas={**start.final_shas, **done.final},
        detail=f"wrote {', '.join(done.changed)}, then stopped: {done.error}; run {command} again to complete it",
        passing=write.passes(done.error),
    )


def planned_writes(insp: Inspection, changes: list[Change]) -> list[tuple[Change, TargetFile]]:
    """The target files the plan (`changes`, of this inspection) writes, with their changes, each
    refused (raised) before anything is proven or written when this process may not write it as its
    owner: a dry run is refused as the apply would be."""
    planned = {c.where: c for c in dist_plan.writes(changes)}
    to_write = [(planned[tf.path], tf) for tf in insp.files if tf.path in planned]
    for _c, tf in to_write:
        write.check_owner(tf.snapshot)
    return to_write


def defer(rec: Reconciler, insp: Inspection, start: Outcome, dry_run: bool, keep_reshapes: bool = False) -> Outcome:
    rule = f'{rec.patch.defer.setting} = "{rec.patch.defer.value}"'
    cost = rec.patch.defer.cost  # (what handing it over costs: the patch says)
    changes = dist_plan.plan(insp, deferred=True)
    if any(not c.executable for c in changes):
        hand = [tf.rel for tf in insp.files if tf.classified.state == State.HAND_PATCHED]
        return replace(
            start,
            detail=f"{rule}, but {', '.join(hand)} carries the hand-applied "
            f"{rec.patch.hand_fix_function}, which would run before senpi's own code; nothing "
            f"was changed: reinstall senpi to remove it, or change {rec.patch.defer.setting}",
        )
    if keep_reshapes and dist_plan.writes(changes):
        return left_for_apply(start, f"{rule} {cost}")
    ours = planned_writes(insp, changes)
    rels = [tf.rel for _c, tf in ours]
    # (each file rebuilt without this patch, in a dry run too: what apply cannot make, it refuses)
    ready = [Ready(c, rec._without_me(insp.install, tf), tf.snapshot, insp.install, tf.rel) for c, tf in ours]
    if dry_run:
        return replace(
            start,
            ok=True,
            would_write=rels,
            detail=f"dry run: would remove the patch "
            f"and leave the install to senpi's own code ({rule})" + (f"; that {cost}" if ours else ""),
        )
    # (other patches left on a file are proven on what remains)
    house_mod.prove_others(rec, insp.install, ((r.change.where, r.data) for r in ready))
    done = execute(ready, rec.store, rec.cancel)
    if done.error is not None:
        return stopped(start, done, "apply")
    detail = (
        f"{rule}: removed the patch, senpi's own code is in charge ({cost})"
        if ours
        else f"{rule}: left to senpi's own code"
    )
    final = {**start.final_shas, **done.final}
    return replace(start, ok=True, after=State.UPSTREAM, changed=done.changed, detail=detail, final_shas=final)


def left_for_apply(start: Outcome, what: str) -> Outcome:
    """(The watcher) a change that would reshape what sent messages look like, left for `apply`."""
    detail = f"left as it is: {what}; run `senpi-guard apply` to make that change"
    return replace(start, ok=True, detail=detail, reason=Reason.RESHAPE_LEFT)


def reshape_cost(insp: Inspection) -> str:
    """What the config change costs when it alters what sent messages look like, else ""."""
    what = next((tf.classified.reshapes for tf in insp.files if tf.classified.reshapes), "")
    return reshape.cost("dist", what) if what else ""


def composed_with(rec: Reconciler, wanted: dict[str, bytes]) -> str:
    """Which other patches the failed bytes carry (a failure may be theirs), else ""."""
    others = dict.fromkeys(
        f"{e.name} v{e.version}"
        for data in wanted.values()
        if (header := apply.read_file_header(data)) is not None
        for e in header.entries
        if e.name != rec.patch.name
    )
    return f" on the file composed with {', '.join(others)}" if others else ""


def also(text: str) -> str:
    return f"; {text}" if text else ""


def reused(report: verify.VerifyReport) -> str:
    if report.reused_from is None:
        return ""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(report.reused_from))
    return f"; the identical replay passed at {when}"
