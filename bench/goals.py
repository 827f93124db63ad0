"""What every benchmark reports: its goals, each a figure beside the goal it is held to, measured in
the same run as its baseline. A benchmark run with `--goals-json FILE` also writes them there, for
`bench/run_all.py` (its text output is unchanged)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Goal:
    """One goal: `what` is measured, `figure` is what this run measured (with its unit or ratio and
    baseline), `goal` the bar, `met` whether the figure clears it."""

    what: str
    figure: str
    goal: str
    met: bool

    def line(self) -> str:
        return f"goal: {self.what}: {self.figure} (goal {self.goal}): {'met' if self.met else 'NOT met'}"


def goals_file(argv: list[str] | None = None) -> Path | None:
    """`--goals-json FILE` from the command line (removed from it, so each bench's own parser never
    sees it)."""
    args = sys.argv if argv is None else argv
    if "--goals-json" not in args:
        return None
    at = args.index("--goals-json")
    path = Path(args[at + 1])
    del args[at : at + 2]
    return path


def report(goals: list[Goal], where: Path | None, echo: bool = True) -> None:
    """Print each goal's line (unless the bench printed its own); with `where`, also write them as
    JSON (atomically)."""
    for goal in goals if echo else []:
        print(goal.line())
    if where is not None:
        temp = where.with_name(f".{where.name}.{os.getpid()}.tmp")
        temp.write_text(json.dumps([asdict(g) for g in goals], indent=1))
        temp.replace(where)
