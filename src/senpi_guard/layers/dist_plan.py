"""The dist layer's planner: from an inspection of one install (what was read), the change each
target file needs to be as the config wants (goal `wanted`), one per file. Pure: it reads nothing,
so it is tested on in-memory inspections.

The bytes wanted are the inspection's (each file rebuilt from its original through every patch on
it, in order); where the original comes from a backup (a file edited after it was patched) or the
file is to lose this patch (the config leaves it to senpi's own code), the executor makes them."""

from __future__ import annotations

from dataclasses import replace

from senpi_guard.core.states import SETTLED, State
from senpi_guard.layers.change import DIST_STEPS, Change, Hold, Step, Want
from senpi_guard.layers.findings import Inspection, Reason, TargetFile, overall_state

REFUSED = (State.UNSUPPORTED, State.ERROR)


def found_state(insp: Inspection, deferred: bool) -> State:
    """The install's state under its files, a revert's hold aside (the hold is the plan's to lift)."""
    return overall_state(list(insp.files), deferred) if insp.state == State.HELD else insp.state


def plan(insp: Inspection, deferred: bool) -> list[Change]:
    """The changes that make one install as wanted (`deferred`: the config leaves it to senpi's own
    code, so this patch comes off). An install apply cannot use is one change, not executable, on
    its folder. A held install's changes lift the hold; the step is the install's, on each."""
    if insp.state in REFUSED:
        where = insp.install.package_dir
        step = DIST_STEPS[insp.state]
        return [Change("dist", insp.patch, where, insp.state, None, executable=False, step=step, installs=(where,))]
    held = insp.state == State.HELD
    state = found_state(insp, deferred)
    step = Step.LIFT_HOLD if held else (DIST_STEPS.get(state, Step.NONE) if state not in SETTLED else Step.NONE)
    hold = Hold.CLEAR if held else Hold.NONE
    hand_fixed = deferred and any(tf.classified.state == State.HAND_PATCHED for tf in insp.files)
    return [_file_change(insp, tf, deferred, hand_fixed, step, hold) for tf in insp.files]


def _file_change(insp: Inspection, tf: TargetFile, deferred: bool, hand_fixed: bool, step: Step, hold: Hold) -> Change:
    found = tf.classified.state
    home = (insp.install.package_dir,)
    change = Change("dist", insp.patch, tf.path, found, tf.snapshot.sha256, step=step, hold=hold, installs=home)
    if deferred:
        if found == State.HAND_PATCHED:
            return _with(change, executable=False)
        ours = tf.classified.header is not None and tf.classified.header.entry(insp.patch) is not None
        if not ours:
            return change
        # (a hand-applied fix would run before senpi's own code: the user removes it, apply does not)
        return _with(change, want=Want.WRITE, executable=not hand_fixed, proof=True)
    if found == State.DRIFTED:  # rebuilt from the backup, the edited copy kept aside first
        return _with(change, want=Want.WRITE, proof=True, keep_aside=True)
    if tf.wanted is not None and tf.wanted != tf.snapshot.data:
        reason = Reason.RESHAPES if tf.classified.reshapes else Reason.NONE
        return _with(change, want=Want.WRITE, wanted=tf.wanted, proof=True, reason=reason)
    if tf.wanted is None and found == State.HAND_PATCHED:  # (its original cannot be recovered: the executor says so)
        return _with(change, want=Want.WRITE, proof=True)
    return change


def _with(change: Change, **fields) -> Change:
    return replace(change, **fields)


def writes(changes: list[Change]) -> list[Change]:
    """The changes that write a file (what `apply --dry-run` names)."""
    return [c for c in changes if c.writes]
