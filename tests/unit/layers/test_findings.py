"""layers/findings.py directly: one install's state under one patch, from its files' states."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from senpi_guard.core.patch.classify import State
from senpi_guard.layers.findings import overall_detail, overall_state


def files(*states: State) -> list:
    return [
        SimpleNamespace(classified=SimpleNamespace(state=s, detail=""), path=SimpleNamespace(name=f"f{i}.js"))
        for i, s in enumerate(states)
    ]


@pytest.mark.parametrize(
    ("states", "deferred", "expected"),
    [
        ((State.PATCHED, State.PATCHED), False, State.PATCHED),
        ((State.UNPATCHED, State.UNPATCHED), False, State.UNPATCHED),
        ((State.UNPATCHED, State.UNPATCHED), True, State.UPSTREAM),
        ((State.PATCHED, State.UNPATCHED), False, State.PARTIAL),
        ((State.PATCHED, State.STALE), False, State.STALE),
        ((State.STALE, State.DRIFTED), False, State.DRIFTED),
        ((State.HAND_PATCHED, State.PATCHED), False, State.HAND_PATCHED),
        ((State.CLEAN,), False, State.CLEAN),
        ((State.CLEAN, State.PATCHED), False, State.PATCHED),
        ((), False, State.CLEAN),
    ],
)
def test_overall_state(states, deferred, expected):
    assert overall_state(files(*states), deferred) == expected


def test_the_detail_says_what_apply_will_do():
    assert "completes it" in overall_detail(files(State.PATCHED, State.UNPATCHED), False, "")
    assert 'x = "y"' in overall_detail(files(State.PATCHED), True, 'x = "y"')
    assert overall_detail(files(State.PATCHED), False, "") == ""
