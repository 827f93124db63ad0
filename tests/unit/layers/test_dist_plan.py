"""The dist layer's planner on in-memory inspections: which target files apply writes, what it
proves and keeps aside, the hold it lifts and the step status says, for every state an install
can be found in."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from senpi_guard.core.patch.apply import FileHeader, Header
from senpi_guard.core.patch.classify import Classified, State
from senpi_guard.core.patch.targets import Target
from senpi_guard.discover import Install
from senpi_guard.io.write import Snapshot
from senpi_guard.layers import change, dist_plan
from senpi_guard.layers.change import Hold, Step, Want
from senpi_guard.layers.findings import Inspection, Reason, TargetFile, overall_state

PKG = Path("/opt/senpi")
PATCH = "directive-dedupe"
BRIDGE = Target("bridge", "buildPromptBlocks", True, "wrap")
UPSTREAM = Target("upstream", "dedupeUltraworkDirectives", False, "wrap")
ORIGINAL = b"export function buildPromptBlocks() { return []; }\n"
PATCHED = b"// senpi-guard: patched\n" + ORIGINAL


def ours(patch: str = PATCH) -> FileHeader:
    return FileHeader((Header(patch, 1, "bridge", "0" * 64, "1" * 64),), "0" * 64)


def tfile(
    target: Target, state: State, data: bytes, wanted: bytes | None, header: FileHeader | None = None, reshapes=""
) -> TargetFile:
    path = PKG / "dist" / f"{target.role}.js"
    snap = Snapshot(path, data, hashlib.sha256(data).hexdigest(), 0o644, 0, 0, 1, PKG, ("dist", path.name), (1, 2), 0)
    base = ORIGINAL if wanted is not None else None
    return TargetFile(target, snap, f"dist/{path.name}", Classified(state, base, header, "", reshapes), wanted)


def inspection(*files: TargetFile, state: State | None = None, deferred: bool = False) -> Inspection:
    found = state or overall_state(list(files), deferred)
    return Inspection(Install(PKG, "2026.8.22-2", "npm"), found, tuple(files), patch=PATCH)


def written(changes: list[change.Change]) -> list[str]:
    return [c.where.name for c in dist_plan.writes(changes)]


def test_an_unpatched_install_writes_its_unpatched_files_proven_first():
    changes = dist_plan.plan(inspection(tfile(BRIDGE, State.UNPATCHED, ORIGINAL, PATCHED)), deferred=False)
    (only,) = changes
    assert only.want == Want.WRITE and only.wanted == PATCHED and only.proof and not only.keep_aside
    assert only.found_sha == hashlib.sha256(ORIGINAL).hexdigest()  # (compared again before the write)
    assert only.step == Step.APPLY and only.next == "run `senpi-guard apply`"
    assert only.installs == (PKG,)


def test_a_patched_install_writes_nothing_and_has_no_step():
    changes = dist_plan.plan(inspection(tfile(BRIDGE, State.PATCHED, PATCHED, PATCHED, ours())), deferred=False)
    assert written(changes) == [] and {c.step for c in changes} == {Step.NONE}


def test_a_partial_install_writes_only_the_file_not_yet_patched():
    files = (
        tfile(BRIDGE, State.PATCHED, PATCHED, PATCHED, ours()),
        tfile(UPSTREAM, State.UNPATCHED, ORIGINAL, PATCHED),
    )
    changes = dist_plan.plan(inspection(*files), deferred=False)
    assert written(changes) == ["upstream.js"]
    assert {c.step for c in changes} == {Step.COMPLETE}


def test_a_stale_file_says_that_its_write_reshapes_what_is_sent():
    stale = tfile(BRIDGE, State.STALE, PATCHED, PATCHED + b"//new settings\n", ours(), reshapes="tags")
    (only,) = dist_plan.plan(inspection(stale), deferred=False)
    assert only.writes and only.reason == Reason.RESHAPES and only.step == Step.REPATCH


def test_a_drifted_file_is_rebuilt_by_the_executor_and_the_edited_copy_kept_aside():
    drifted = tfile(BRIDGE, State.DRIFTED, PATCHED + b"// edited\n", None, ours())
    (only,) = dist_plan.plan(inspection(drifted), deferred=False)
    assert only.writes and only.keep_aside and only.wanted is None and only.step == Step.REBUILD


def test_a_held_install_lifts_the_hold_with_the_same_writes():
    held = inspection(tfile(BRIDGE, State.UNPATCHED, ORIGINAL, PATCHED), state=State.HELD)
    (only,) = dist_plan.plan(held, deferred=False)
    assert only.writes and only.hold == Hold.CLEAR and only.step == Step.LIFT_HOLD
    assert dist_plan.found_state(held, deferred=False) == State.UNPATCHED


@pytest.mark.parametrize("state", [State.UNSUPPORTED, State.ERROR])
def test_an_install_apply_cannot_use_is_one_change_apply_cannot_make(state):
    (only,) = dist_plan.plan(inspection(state=state), deferred=False)
    assert only.where == PKG and not only.executable and not only.writes
    assert only.step == change.DIST_STEPS[state] and "senpi-guard apply" not in only.next


def test_deferred_the_patch_comes_off_the_files_that_carry_it():
    files = (tfile(BRIDGE, State.PATCHED, PATCHED, PATCHED, ours()), tfile(UPSTREAM, State.UNPATCHED, ORIGINAL, None))
    changes = dist_plan.plan(inspection(*files, deferred=True), deferred=True)
    assert written(changes) == ["bridge.js"]
    assert all(c.wanted is None for c in changes)  # (the executor rebuilds it without this patch)


def test_deferred_a_hand_applied_fix_is_for_the_user_to_remove():
    files = (tfile(BRIDGE, State.HAND_PATCHED, ORIGINAL, None), tfile(UPSTREAM, State.PATCHED, PATCHED, None, ours()))
    changes = dist_plan.plan(inspection(*files, deferred=True), deferred=True)
    assert written(changes) == [] and [c.executable for c in changes] == [False, False]


def test_another_patchs_file_is_left_when_deferred():
    other = tfile(BRIDGE, State.PATCHED, PATCHED, PATCHED, ours("another-patch"))
    assert written(dist_plan.plan(inspection(other, deferred=True), deferred=True)) == []


def test_every_step_is_said_in_words_and_only_applys_own_name_apply():
    for step in Step:
        words = change.say(step, "/x")
        assert (step == Step.NONE) == (words == "")
        if step in change.BY_APPLY:
            assert "senpi-guard apply" in words
    assert change.say(Step.FIX_THEN_APPLY, "chmod go-w /x") == "chmod go-w /x, then senpi-guard apply"


def test_a_change_as_json_names_its_file_and_what_it_wants():
    (only,) = dist_plan.plan(inspection(tfile(BRIDGE, State.UNPATCHED, ORIGINAL, PATCHED)), deferred=False)
    shown = only.as_json()
    assert shown["path"] == str(PKG / "dist" / "bridge.js") and shown["want"] == "write" and shown["writes"]
    assert shown["hold"] is None and shown["next"] == "run `senpi-guard apply`"
