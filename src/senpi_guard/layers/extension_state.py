"""What the extension layer found in an agent dir (LayerStatus) and what a step did there
(LayerOutcome): the two records layers/extension and its planners pass around."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from senpi_guard.core.patch.classify import State
from senpi_guard.discover import Install
from senpi_guard.layers import package
from senpi_guard.layers.change import Step, say
from senpi_guard.layers.findings import Reason
from senpi_guard.prove.verify import VerifyReport


@dataclass
class LayerStatus:
    state: str  # installed, stale, modified, absent, foreign, package
    path: Path
    detail: str = ""
    data: bytes | None = None  # what the file held when it was read
    reshapes: str = ""  # (stale) how the config changes what sent messages look like, in words
    package: package.Found | None = None  # (package) the senpi package that is the layer here
    current: bool = True  # (package) its extension is what apply would write
    beside: Path | None = None  # (package) senpi-guard's own file there too: senpi loads both
    off: str = ""  # (ours) why senpi loads it none of the time: the settings switch it off ("" when it loads)


@dataclass
class LayerOutcome:
    """The extension layer's result in one agent dir (the dist layer's is findings.Outcome: both
    carry `layer`, `patch`, `before`, `after`, `ok`, `detail` and `report`, in one vocabulary)."""

    path: Path
    before: State
    after: State
    ok: bool
    detail: str
    report: VerifyReport | None = None
    kept: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)  # older kept copies removed (extension_kept.KEEP_COPIES)
    installs: list[Install] = field(default_factory=list)  # the installs that use this agent dir
    step: Step = Step.NONE  # what to run when it is not as wanted (none: nothing, or the detail says it)
    step_detail: str = ""  # the path or command the step names
    patch: str = ""
    standing: bool = False  # (the watcher) a problem left alone, reported once
    would_write: bool = False  # (a dry run) apply would write the file (or take one out)
    took_out: bool = False  # senpi-guard's own file beside a package was taken out
    reason: Reason = Reason.NONE
    fix: str = ""  # the command that removes what refused it (a replay's `chmod go-w …`): errors.fix_of
    passing: bool = False  # failed for a cause that passes (node out of time, a full disk): tried again
    owners: set[int] = field(default_factory=set)  # who can take an apply step here (extension_plan.AgentTarget)

    layer: ClassVar[str] = "extension"

    @property
    def next(self) -> str:
        """The step in words ("" for none)."""
        return say(self.step, self.step_detail)

    def __post_init__(self) -> None:  # (a state outside the one vocabulary is a bug, found here)
        self.before, self.after = State(self.before), State(self.after)
