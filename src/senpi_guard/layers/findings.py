"""What inspecting an install found (its target files and their state), and what reconciling it
did (an Outcome): plain data, shared by the reconciler and the commands that print it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import ClassVar

from senpi_guard.core.patch.classify import Classified, State
from senpi_guard.core.patch.definition import KnownShape, Target
from senpi_guard.discover import Install
from senpi_guard.io import write
from senpi_guard.prove import verify


@dataclass(frozen=True)
class TargetFile:
    target: Target
    snapshot: write.Snapshot
    rel: str
    classified: Classified
    wanted: bytes | None  # what apply writes, rendered from classified.base (None without a base)

    @property
    def path(self) -> Path:
        return self.snapshot.path


@dataclass(frozen=True)
class Inspection:
    install: Install
    state: State
    files: tuple[TargetFile, ...] = ()
    detail: str = ""
    shape: KnownShape | None = None
    patch: str = ""

    @property
    def primary(self) -> TargetFile | None:
        """The file of the patch's first required target (what an install is shown by)."""
        return next((f for f in self.files if f.target.required), self.files[0] if self.files else None)

    @property
    def present(self) -> set[str]:
        """The roles of the targets found."""
        return {f.target.role for f in self.files}


class Reason(StrEnum):
    """Why a layer's result is what it is, where a reader acts on it (never on the detail's words)."""

    NONE = ""
    # (the watcher) a change that would reshape what sent messages look like, left for `apply`
    RESHAPE_LEFT = "reshape-left"
    # (a plan's change) its write would reshape what sent messages look like (the config changed)
    RESHAPES = "reshapes"


@dataclass
class Outcome:
    install: Install
    before: State
    after: State
    ok: bool
    detail: str = ""
    changed: list[str] = field(default_factory=list)
    report: verify.VerifyReport | None = None
    diff: str = ""
    target: str = ""  # the primary target, relative to the package dir
    present: set[str] = field(default_factory=set)  # the roles of the targets found
    patch: str = ""
    millis: int = 0
    files: list[Path] = field(default_factory=list)
    final_shas: dict[str, str] = field(default_factory=dict)  # each target's bytes as left behind
    would_write: list[str] = field(default_factory=list)  # dry run: what apply would write
    backups: list[str] = field(default_factory=list)  # backups written or restored from
    shape: str = ""  # the compiled shape's version range the targets were found in
    passing: bool = False  # failed for a cause that passes (a full disk): to be tried again later
    reason: Reason = Reason.NONE
    fix: str = ""  # the command that removes what refused it (a replay's `chmod go-w …`): errors.fix_of

    layer: ClassVar[str] = "dist"

    @classmethod
    def of(cls, insp: Inspection) -> Outcome:
        """An outcome that starts where the inspection found the install."""
        return cls(
            insp.install,
            insp.state,
            insp.state,
            False,
            insp.detail,
            target=insp.primary.rel if insp.primary else "",
            present=insp.present,
            patch=insp.patch,
            shape=insp.shape.range if insp.shape else "",
            files=[f.path for f in insp.files],
            final_shas={str(f.path): f.snapshot.sha256 for f in insp.files},
        )


def install_spec(install: Install) -> str:
    return f"@code-yeongyu/senpi@{install.version}"


def reinstall(install: Install) -> str:
    """The command that puts this release back where this install is, with its own package manager
    (npm's into this install's prefix: `npm install -g` alone goes wherever npm's own prefix is)."""
    spec = install_spec(install)
    manager = install.manager.split(" ", 1)[0]
    if manager == "pnpm":
        return f"pnpm add -g {spec}"
    if manager == "yarn":
        return f"yarn global add {spec}"
    if manager == "bun":
        return f"bun add -g {spec}"
    if "volta" in install.manager:
        return f"volta install {spec}"
    folder = install.package_dir  # <prefix>/lib/node_modules/@code-yeongyu/senpi, npm's global layout
    names = [part.name for part in folder.parents[:3]]
    if names == ["@code-yeongyu", "node_modules", "lib"] and len(folder.parents) > 3:
        return f"npm install -g --prefix {folder.parents[3]} {spec}"
    return f"npm install -g {spec}"


def overall_state(files: list[TargetFile], deferred: bool) -> State:
    """One install's state under one patch, from its files' (`deferred`: the config leaves it to
    senpi's own code)."""
    states = {f.classified.state for f in files}
    if deferred and states == {State.UNPATCHED}:
        return State.UPSTREAM
    for worst in (State.DRIFTED, State.HAND_PATCHED, State.STALE):
        if worst in states:
            return worst
    if states <= {State.PATCHED, State.CLEAN} and State.PATCHED in states:
        return State.PATCHED
    if len(states) == 1 and states <= {State.PATCHED, State.UNPATCHED, State.CLEAN}:
        return states.pop()
    if not states:
        return State.CLEAN
    return State.PARTIAL


def overall_detail(files: list[TargetFile], deferred: bool, defer_note: str) -> str:
    notes = [f"{f.path.name}: {f.classified.detail}" for f in files if f.classified.detail]
    if deferred and any(f.classified.state != State.UNPATCHED for f in files):
        notes.append(f"config says {defer_note}: apply removes the patch")
    if {f.classified.state for f in files} == {State.PATCHED, State.UNPATCHED}:
        notes.append("only some target files are patched: apply completes it")
    return "; ".join(notes)
