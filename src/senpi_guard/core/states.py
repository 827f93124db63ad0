"""Every state name a layer reports, in one vocabulary, and which of them count as done. Imports
nothing of the patch engine: the views and `status` name states without loading it."""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    UNPATCHED = "unpatched"
    PATCHED = "patched"
    STALE = "stale"
    HAND_PATCHED = "hand-patched"
    DRIFTED = "drifted"
    PARTIAL = "partial"
    UPSTREAM = "upstream"
    CLEAN = "clean"  # the patch looked and found nothing to change (a repair with nothing to repair)
    UNSUPPORTED = "unsupported"
    ERROR = "error"
    HELD = "held"
    # the extension layer's file in an agent dir (stale, error and held as above)
    INSTALLED = "installed"
    ABSENT = "absent"
    MODIFIED = "modified"  # edited since senpi-guard wrote it
    FOREIGN = "foreign"  # a file of that name that is not senpi-guard's
    PACKAGE = "package"  # the extension layer as a senpi package the agent dir's settings list (`senpi install`)
    UNSAFE = "unsafe"  # an agent dir where the extension must not be (the dist layer's findings say why)


# States that count as success for `status`: the layer is as the user wants it.
SETTLED = frozenset({State.PATCHED, State.UPSTREAM, State.CLEAN, State.INSTALLED, State.PACKAGE})
# ... and the states in which it is as the user asked (status and verify exit 0): settled, or held
# by a revert (the user asked for the original; `apply` lifts the hold, and is still the next step).
AS_ASKED = SETTLED | {State.HELD}
