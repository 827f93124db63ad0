"""Reverting the dist layer: each patched file gets its original bytes back (a fitting backup, else
the edit taken out), and the install is held there: the watcher leaves a held install alone until
`apply` lifts the hold."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from senpi_guard.core.patch.classify import State
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io import write
from senpi_guard.io.logs import unexpected
from senpi_guard.layers import dist_files, house
from senpi_guard.layers.change import Change, Hold, Want
from senpi_guard.layers.execute import Ready, execute
from senpi_guard.layers.findings import Inspection, Outcome, TargetFile, reinstall

if TYPE_CHECKING:
    from senpi_guard.layers.dist import Reconciler

REVERTED = "reverted by `senpi-guard revert`"


def revert(reconciler: Reconciler, install: Install, *, from_edit: bool = False, alone: bool = False) -> Outcome:
    """Give the install its original bytes and hold it there: the watcher leaves a held
    install alone until `apply` lifts the hold. `alone` (`revert --patch`): only this patch comes
    off; a file other patches share is rebuilt from its original without it."""
    insp = reconciler.inspect(install, unknown_ok=not alone)
    start = Outcome.of(insp)
    write.remove_stale_temps(start.files)  # (a writer killed before its rename; revert holds the lock)
    if insp.state in (State.UNSUPPORTED, State.ERROR):
        return start
    try:
        plans, how, backups = _revert_plans(reconciler, insp, from_edit)
        if alone:
            plans, how = _rebuild_without(reconciler, insp, plans, how)
        for tf, _ in plans:  # (refused before the first write, as apply refuses: nothing half reverted)
            write.check_owner(tf.snapshot)
    except (FatalError, OSError) as exc:
        return replace(start, detail=str(exc))
    except Exception as exc:  # a bug: this install's error, the others go on
        return replace(start, detail=unexpected(exc))
    # a hand-edited file is kept aside before it is rewritten (as apply does); the hold set once all are
    ordered = sorted(plans, key=lambda p: -reconciler.patch.write_rank(p[0].target.role))
    ready = [Ready(_file_revert_change(insp, tf), data, tf.snapshot, install, tf.rel) for tf, data in ordered]
    done = execute(ready, reconciler.store, reconciler.cancel, hold=(install.package_dir, REVERTED))
    if done.kept:
        how = [*how, f"the hand-edited file was kept at {', '.join(done.kept)}"]
    changed = done.changed
    if done.error is not None:  # (this install's failure: the others are still reverted)
        written = f" ({', '.join(changed)} was reverted before it: run revert again once fixed)" if changed else ""
        after = State.PARTIAL if changed else start.after
        kept = backups + done.kept
        return replace(start, after=after, changed=changed, backups=kept, detail=f"{done.error}{written}")
    return replace(
        start,
        ok=True,
        after=reconciler.inspect(install).state,
        changed=changed,
        backups=backups + done.kept,
        final_shas={**start.final_shas, **done.final},
        detail="; ".join(how) if how else "not patched by senpi-guard; nothing to revert",
    )


def _rebuild_without(reconciler: Reconciler, insp: Inspection, plans: list, how: list[str]) -> tuple[list, list[str]]:
    """Each file this patch is on, rebuilt from its original without it (proven for the patches
    left on it); a file it is not on is left as it is."""
    name = reconciler.patch.name
    kept, said = [], []
    for (tf, original), line in zip(plans, how, strict=True):
        if tf.classified.header.entry(name) is None:
            continue
        base = reconciler.base_of(insp.install, tf)
        rebuilt = reconciler.compose(insp.install, tf.path, base, tf.snapshot.data, without=(name,))
        if rebuilt == original:
            kept.append((tf, original))
            said.append(line)
            continue
        others = house.prove_others(reconciler, insp.install, [(tf.path, rebuilt)])
        kept.append((tf, rebuilt))
        said.append(f"{tf.path.name}: rebuilt from the original without {name} ({', '.join(others)} stay on it)")
    return kept, said


def _revert_plans(reconciler: Reconciler, insp: Inspection, from_edit: bool) -> tuple[list, list[str], list[str]]:
    install = insp.install
    plans, how, backups = [], [], []
    for tf in (tf for tf in insp.files if tf.classified.header is not None):
        backup = (
            None
            if from_edit
            else dist_files.fitting_backup(reconciler.store, reconciler.patch, reconciler.house.by_name, install, tf)
        )
        if backup is not None:
            plans.append((tf, backup.data))
            how.append(f"{tf.path.name}: restored from the backup" + _hand_fix_note(reconciler, insp, backup.data))
            backups.append(str(backup.path))
        elif tf.classified.base is not None:
            plans.append((tf, tf.classified.base))
            how.append(
                f"{tf.path.name}: removed the edit (sha256 matches the original)"
                + ("" if from_edit else "; no backup was found")
            )
        else:
            raise FatalError(
                f"senpi {install.version} at {install.package_dir}: {tf.rel} "
                f"cannot be reverted ({tf.classified.detail}) and no backup "
                f"exists; reinstall senpi ({reinstall(install)})"
            )
    return plans, how, backups


def _hand_fix_note(reconciler: Reconciler, insp: Inspection, restored: bytes) -> str:
    """What putting a hand-applied fix back costs on this install, and the way to senpi as shipped."""
    name = reconciler.patch.hand_fix_function
    if not name or name.encode() not in restored:
        return ""
    costs = [text for role, text in reconciler.patch.hand_fix_risks.items() if role in insp.present]
    return (
        f", which holds the hand-applied {name} that was there before apply"
        + (f"; {'; '.join(costs)}" if costs else "")
        + "; for senpi as shipped instead: `senpi-guard apply`, then `senpi-guard revert --from-edit`"
    )


def plan(reconciler: Reconciler, install: Install) -> list[Change]:
    """What `revert` would do to this install under this patch (goal: the original), one change per
    file the patch is on; a change `revert` cannot make says why in its detail (`uninstall` refuses
    while any does). An install it cannot use is one change on its folder. Reads only."""
    insp = reconciler.inspect(install, unknown_ok=True)
    where = f"senpi {install.version} at {install.package_dir}"
    home = Change("dist", reconciler.patch.name, install.package_dir, insp.state, None, installs=(install.package_dir,))
    if insp.state in (State.UNSUPPORTED, State.ERROR):
        refused = insp.state == State.ERROR
        return [replace(home, executable=not refused, detail=f"{where}: {insp.detail}" if refused else "")]
    return [_file_revert(reconciler, insp, tf, where) for tf in insp.files if tf.classified.header is not None]


def _file_revert(reconciler: Reconciler, insp: Inspection, tf: TargetFile, where: str) -> Change:
    """One file given its original bytes, the install then held (a hand-edited file kept aside first)."""
    change = _file_revert_change(insp, tf)
    if write.refused_in(tf.path.parent):
        return replace(change, executable=False, detail=f"{where}: {write.refusal_text(tf.path.parent)}")
    try:
        _revert_plans(reconciler, replace(insp, files=(tf,)), from_edit=False)
    except (FatalError, OSError) as exc:
        return replace(change, executable=False, detail=str(exc))
    return change


def _file_revert_change(insp: Inspection, tf: TargetFile) -> Change:
    found = tf.classified.state
    return Change(
        "dist",
        insp.patch,
        tf.path,
        found,
        tf.snapshot.sha256,
        want=Want.WRITE,
        hold=Hold.SET,
        keep_aside=found == State.DRIFTED,
        installs=(insp.install.package_dir,),
    )
