"""The one judgment of a layer's result that status and verify share: what to run next, and which
install a result is about."""

from __future__ import annotations

import re

from senpi_guard import ui
from senpi_guard.core.patch.classify import SETTLED
from senpi_guard.discover import Install
from senpi_guard.layers.extension import LayerOutcome
from senpi_guard.layers.findings import Outcome

Result = Outcome | LayerOutcome

REFUSAL_FIX = re.compile(r"\((chmod go-w [^)]+)\)")


def refusal_step(message: str | None) -> str | None:
    """The fix a replay refusal names (`chmod go-w …`), as the next step: apply alone would only
    be refused the same way."""
    found = REFUSAL_FIX.search(message or "")
    return f"{found[1]}, then senpi-guard apply" if found else None


def next_step(result: Result) -> str | None:
    """What to run when a layer is not as wanted (status and verify say the same), else None."""
    if result.ok:
        return None
    if fix := refusal_step(getattr(result, "detail", None)):
        return fix
    if result.layer == "dist":
        return ui.NEXT_STEPS.get(result.after) if result.after not in SETTLED else None
    return result.step or None


def concerns(result: Result, install: Install) -> bool:
    """Whether a result is about this install (an extension's: an agent dir it uses)."""
    return result.install == install if result.layer == "dist" else install in result.installs
