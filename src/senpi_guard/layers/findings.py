"""What inspecting an install found (its target files and their state), and what reconciling it
did (an Outcome): plain data, shared by the reconciler and the commands that print it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard.core.patch.classify import Classified, State
from senpi_guard.core.patch.definition import KnownShape, Target
from senpi_guard.discover import Install
from senpi_guard.io import write
from senpi_guard.io.config import Config
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

    @property
    def prompt(self) -> TargetFile | None:
        return next((f for f in self.files if f.target.role == "prompt"), None)

    @property
    def upstream_present(self) -> bool:
        return any(f.target.role == "upstream" for f in self.files)


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
    target: str = ""  # the prompt target, relative to the package dir
    upstream_present: bool = False
    millis: int = 0
    files: list[Path] = field(default_factory=list)
    final_shas: dict[str, str] = field(default_factory=dict)  # each target's bytes as left behind
    would_write: list[str] = field(default_factory=list)  # dry run: what apply would write
    backups: list[str] = field(default_factory=list)  # backups written or restored from

    @classmethod
    def of(cls, insp: Inspection) -> Outcome:
        """An outcome that starts where the inspection found the install."""
        return cls(insp.install, insp.state, insp.state, False, insp.detail,
                   target=insp.prompt.rel if insp.prompt else "",
                   upstream_present=insp.upstream_present, files=[f.path for f in insp.files],
                   final_shas={str(f.path): f.snapshot.sha256 for f in insp.files})


def install_spec(install: Install) -> str:
    return f"@code-yeongyu/senpi@{install.version}"


def overall_state(files: list[TargetFile], config: Config) -> State:
    states = {f.classified.state for f in files}
    upstream = any(f.target.role == "upstream" for f in files)
    if upstream and config.upstream_dedupe == "defer" and states == {State.UNPATCHED}:
        return State.UPSTREAM
    for worst in (State.DRIFTED, State.HAND_PATCHED, State.STALE):
        if worst in states:
            return worst
    if len(states) == 1 and states <= {State.PATCHED, State.UNPATCHED}:
        return states.pop()
    return State.PARTIAL


def overall_detail(files: list[TargetFile], config: Config) -> str:
    notes = [f"{f.path.name}: {f.classified.detail}" for f in files if f.classified.detail]
    if any(f.target.role == "upstream" for f in files) and config.upstream_dedupe == "defer" \
            and any(f.classified.state != State.UNPATCHED for f in files):
        notes.append("config says upstream_dedupe = \"defer\": apply removes the patch")
    if {f.classified.state for f in files} == {State.PATCHED, State.UNPATCHED}:
        notes.append("only some target files are patched: apply completes it")
    return "; ".join(notes)
