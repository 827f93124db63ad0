"""The one judgment of a layer's result that status and verify share: what to run next, and which
install a result is about."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from senpi_guard.core.patch.classify import SETTLED, State
from senpi_guard.discover import Install
from senpi_guard.layers import change
from senpi_guard.layers.change import Step
from senpi_guard.layers.extension import LayerOutcome
from senpi_guard.layers.findings import Outcome

Result = Outcome | LayerOutcome


def fix_step(fix: str) -> str | None:
    """A refusal's fix (a replay's `chmod go-w …`: errors.fix_of), as the next step: apply alone
    would only be refused the same way."""
    return change.say(Step.FIX_THEN_APPLY, fix) if fix else None


def next_step(result: Result) -> str | None:
    """What to run when a layer is not as wanted, or is held by a revert (as asked: `apply` lifts the
    hold), else None; status and verify say the same."""
    if result.ok and result.after != State.HELD:
        return None
    if fix := fix_step(result.fix):
        return fix
    if result.layer == "dist":
        step = change.DIST_STEPS.get(result.after) if result.after not in SETTLED else None
        return as_owner(change.say(step), owners_of(result.files)) if step else None
    if result.step in change.BY_APPLY:  # (the installs' dist layer not in place and not yours to write)
        return as_owner(result.next, result.owners)
    return result.next or None


APPLY = change.APPLY


def owners_of(paths: Iterable[Path]) -> set[int]:
    """Who owns these files (those that cannot be read: left out)."""
    uids = set()
    for path in paths:
        with contextlib.suppress(OSError):
            uids.add(path.stat().st_uid)
    return uids


def as_owner(step: str, owners: set[int]) -> str:
    """An apply step as the one who can take it: apply writes a file only as its owner (or as root),
    so a user's apply over files another owns is refused and advising it again would go round."""
    euid = os.geteuid()
    others = sorted(owners - {euid})
    if euid == 0 or not others or APPLY not in step:
        return step
    if 0 in others or len(others) > 1:  # (only root can write files of several owners)
        whose = "root" if others == [0] else "several users (" + ", ".join(f"uid {u}" for u in others) + ")"
        return f"{step.replace(APPLY, 'run `sudo senpi-guard apply`', 1)}: senpi's files belong to {whose}"
    return f"{step.replace(APPLY, f'run `senpi-guard apply` as uid {others[0]}', 1)}, who owns senpi's files"


def concerns(result: Result, install: Install) -> bool:
    """Whether a result is about this install (an extension's: an agent dir it uses)."""
    return result.install == install if result.layer == "dist" else install in result.installs
