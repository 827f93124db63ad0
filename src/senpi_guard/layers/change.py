"""The plan: what each layer would change to reach a goal, as data (a `Change` per target file or
agent dir), and the one next-step vocabulary (`Step`) every command says.

A planner reads nothing itself: it is given what was read (an inspection of an install, the state
of an agent dir) and returns changes. `status` renders the plan for the goal `wanted` without
acting on it, `apply --dry-run` names the files it would write from it, and `apply` writes what it
names; so status's next step, the dry run and the apply come from the same object."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from senpi_guard.core.states import State
from senpi_guard.layers.findings import Reason


class Want(StrEnum):
    """What a change wants of its file."""

    KEEP = "keep"  # nothing to write
    WRITE = "write"  # these bytes (the patched file, its original, the extension)
    REMOVE = "remove"  # the file goes (an extension taken out)


class Hold(StrEnum):
    """What a change does to a revert's hold on its install or agent dir."""

    NONE = ""
    SET = "set"  # revert: the watcher leaves it alone until `apply`
    CLEAR = "clear"  # apply: a hand-run apply lifts the hold (the watcher never does)


class Step(StrEnum):
    """What the user runs next; the words of each are in TEXT (one place), a step's detail fills
    the `{}` of those that name a command or a path."""

    NONE = ""
    APPLY = "apply"
    REPATCH = "repatch"
    COMPLETE = "complete"
    REMOVE_HAND_FIX = "remove-hand-fix"
    REBUILD = "rebuild"
    LIFT_HOLD = "lift-hold"
    INSTALL_FROM_NPM = "install-from-npm"
    REPORT = "report"
    INSTALL_EXTENSION = "install-extension"
    RENDER_EXTENSION = "render-extension"
    REPLACE_EDITED = "replace-edited"
    RENAME_FOREIGN = "rename-foreign"
    REINSTALL_EXTENSION = "reinstall-extension"
    TAKE_OUT = "take-out"
    TAKE_OUT_BESIDE = "take-out-beside"
    EXPORT = "export"
    SWITCH_ON = "switch-on"
    FIX_THEN_APPLY = "fix-then-apply"
    FIX_WHAT_FAILS = "fix-what-fails"
    DELETE_THEN_APPLY = "delete-then-apply"


APPLY = "run `senpi-guard apply`"
TEXT = {
    Step.NONE: "",
    Step.APPLY: APPLY,
    Step.REPATCH: f"{APPLY} (re-patches it from the original)",
    Step.COMPLETE: f"{APPLY} (completes the patch)",
    Step.REMOVE_HAND_FIX: f"{APPLY} (removes the hand-applied fix, then patches)",
    Step.REBUILD: f"{APPLY} to rebuild it from the backup, or reinstall senpi",
    Step.LIFT_HOLD: f"{APPLY} to patch it again (this lifts the hold)",
    Step.INSTALL_FROM_NPM: "install senpi from npm (npm install -g @code-yeongyu/senpi); "
    "senpi-guard patches the npm package, not a compiled binary",
    Step.REPORT: "a newer senpi-guard may know this senpi; otherwise report it with the output "
    "of `senpi-guard status --json`",
    Step.INSTALL_EXTENSION: f"{APPLY} (installs the extension layer)",
    Step.RENDER_EXTENSION: f"{APPLY} (renders the extension anew)",
    Step.REPLACE_EDITED: f"{APPLY} (keeps your edited copy in the data folder, installs it anew)",
    Step.RENAME_FOREIGN: "rename the file that is not senpi-guard's, then run `senpi-guard apply`",
    Step.REINSTALL_EXTENSION: f"{APPLY} to install it again (this lifts the hold)",
    Step.TAKE_OUT: f"{APPLY} (takes the extension out of it)",
    Step.TAKE_OUT_BESIDE: f"{APPLY} (takes senpi-guard's own file beside the package out)",
    Step.EXPORT: "run `senpi-guard export {}` (renders the package anew)",
    Step.SWITCH_ON: "tick senpi-guard's extension again in `senpi config` (or take that pattern out of the settings)",
    Step.FIX_THEN_APPLY: "{}, then senpi-guard apply",
    Step.FIX_WHAT_FAILS: "fix what fails (`senpi-guard verify` shows it), then run `senpi-guard apply`",
    Step.DELETE_THEN_APPLY: "delete {}, then run `senpi-guard apply`",
}
# the dist layer's step for each state an install can be found in, where apply has something to do
# or the user must act
DIST_STEPS = {
    State.UNPATCHED: Step.APPLY,
    State.STALE: Step.REPATCH,
    State.PARTIAL: Step.COMPLETE,
    State.HAND_PATCHED: Step.REMOVE_HAND_FIX,
    State.DRIFTED: Step.REBUILD,
    State.HELD: Step.LIFT_HOLD,
    State.UNSUPPORTED: Step.INSTALL_FROM_NPM,
    State.ERROR: Step.REPORT,
}


def say(step: Step, detail: str = "") -> str:
    """A step in words ("" for none)."""
    text = TEXT[step]
    return text.format(detail) if "{}" in text else text


# the steps `senpi-guard apply` takes by itself (the others ask the user to act first)
BY_APPLY = frozenset(
    {
        Step.APPLY,
        Step.REPATCH,
        Step.COMPLETE,
        Step.REMOVE_HAND_FIX,
        Step.REBUILD,
        Step.LIFT_HOLD,
        Step.INSTALL_EXTENSION,
        Step.RENDER_EXTENSION,
        Step.REPLACE_EDITED,
        Step.REINSTALL_EXTENSION,
        Step.TAKE_OUT,
        Step.TAKE_OUT_BESIDE,
    }
)


@dataclass(frozen=True)
class Change:
    """One file a layer would change, or leave, to reach the goal: for the dist layer a target file
    of an install, for the extension layer the extension's file in an agent dir."""

    layer: str  # "dist" or "extension"
    patch: str
    where: Path  # the file (for an install or agent dir refused as a whole: its folder)
    found: State  # the state it was found in
    found_sha: str | None  # the sha256 of the bytes found (None: no file); compared again before a write
    want: Want = Want.KEEP
    wanted: bytes | None = None  # the bytes to write, where planning could make them (else the executor does)
    proof: bool = False  # a replay with node must pass before it is written
    hold: Hold = Hold.NONE
    executable: bool = True  # False: apply cannot make it so (the step says who can)
    keep_aside: bool = False  # a hand-edited file is kept in the data folder before it is written
    step: Step = Step.NONE
    step_detail: str = ""
    reason: Reason = Reason.NONE
    detail: str = ""
    installs: tuple[Path, ...] = ()  # the package dirs of the installs it serves

    @property
    def writes(self) -> bool:
        """Whether carrying it out changes the file."""
        return self.want != Want.KEEP and self.executable

    @property
    def next(self) -> str:
        return say(self.step, self.step_detail)

    def as_json(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "patch": self.patch,
            "path": str(self.where),
            "found": self.found,
            "want": self.want,
            "writes": self.writes,
            "proof": self.proof,
            "hold": self.hold or None,
            "executable": self.executable,
            "keep_aside": self.keep_aside,
            "reason": self.reason or None,
            "next": self.next or None,
        }
