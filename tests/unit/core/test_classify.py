"""classify is pure: bytes, what reverse recovered and what apply would write -> one state."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import hand_patched

from senpi_guard.core.patch import apply, definition, reverse
from senpi_guard.core.patch.classify import SETTLED, State, classify
from senpi_guard.demo import sample
from senpi_guard.io.config import Config

PATCH = definition.load("directive-dedupe")
CONFIG = Config()
BASE = sample.prompt_bridge_source(2).encode()
TARGET = PATCH.target("prompt")


def state_of(data: bytes, config: Config = CONFIG) -> State:
    found = reverse.recover(data, PATCH)
    wanted = None if found.base is None else apply.render(PATCH, config, TARGET, found.base, "x.js")
    return classify(data, found, wanted, PATCH.version, PATCH.config_digest(config)).state


def test_every_state_of_a_file():
    patched = apply.render(PATCH, CONFIG, TARGET, BASE, "x.js")
    assert state_of(BASE) == State.UNPATCHED
    assert state_of(patched) == State.PATCHED
    assert state_of(patched, Config().with_patch("directive-dedupe", tags=["ultrawork-mode"])) == State.STALE
    older = patched.replace(f"v{PATCH.version} (role=".encode(), b"v1 (role=")
    assert state_of(older) == State.STALE
    # a hand edit inside our payload: the original is still recoverable, the edit is not ours
    assert state_of(patched.replace(b"const kept = new Map();", b"const kept = new Map(); ")) == State.DRIFTED
    assert state_of(patched.replace(b"USER:", b"USR:")) == State.DRIFTED
    assert state_of(hand_patched(BASE.decode()).encode()) == State.HAND_PATCHED


def test_a_mention_in_a_comment_is_not_a_hand_fix():
    text = BASE.replace(
        b"export function buildPromptBlocks",
        b"// dedupeRepeatedDirectiveBlocks would go here\nexport function buildPromptBlocks",
    )
    assert state_of(text) == State.UNPATCHED


def test_classify_needs_no_renderer_and_no_files():
    found = reverse.recover(BASE, PATCH)
    result = classify(BASE, found, None, PATCH.version, "0" * 16)
    assert result.state == State.UNPATCHED and result.base == BASE


def documented_states() -> dict[str, str]:
    """docs/usage.md's table of states ("When `apply` refuses"): each state's word and what to do."""
    readme = (Path(__file__).resolve().parents[3] / "docs" / "usage.md").read_text("utf-8")
    table = readme[readme.index("| state | what it means | what to do |") :].split("\n\n")[0]
    return dict(re.findall(r"^\| `([\w-]+)` \|[^|]*\| (.*) \|$", table, re.MULTILINE))


@pytest.mark.parametrize("state", list(State))
def test_every_state_is_documented_with_what_to_do(state):
    documented = documented_states()
    assert state.value in documented, f"docs/usage.md's state table has no row for {state.value!r}"
    settled = state in SETTLED
    assert settled == documented[state.value].startswith("nothing"), documented[state.value]


def test_a_stale_detail_names_what_differs():
    patched = apply.render(PATCH, CONFIG, TARGET, BASE, "x.js")
    older = patched.replace(f"v{PATCH.version} (role=".encode(), b"v1 (role=")
    found = reverse.recover(older, PATCH)
    detail = classify(older, found, patched, PATCH.version, PATCH.config_digest(CONFIG)).detail
    assert f"an older version of directive-dedupe (v1; this senpi-guard writes v{PATCH.version})" in detail
    # another patch's entry differs: the detail names it, not every patch on the file
    other = apply.FileHeader((apply.Header("directive-dedupe", PATCH.version, "prompt", "0" * 64, "1" * 16),), "0" * 64)
    wanted = apply.FileHeader(
        (apply.Header("directive-dedupe", PATCH.version, "prompt", "0" * 64, "2" * 16),), "0" * 64
    )
    from senpi_guard.core.patch.classify import _differs

    assert _differs(other, wanted) == "directive-dedupe has other settings than wanted"
    assert "prompt-text is wanted but not on it" in _differs(
        other,
        apply.FileHeader((*wanted.entries, apply.Header("prompt-text", 1, "bridge", "0" * 64, "3" * 16)), "0" * 64),
    )
