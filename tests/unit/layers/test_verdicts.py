"""layers/verdicts: the next step of a layer's result, built from its fields."""

from __future__ import annotations

from pathlib import Path

from senpi_guard.core.patch.classify import State
from senpi_guard.discover import Install
from senpi_guard.layers import pipeline


def _dist(tmp_path: Path, detail: str, fix: str = "") -> pipeline.Outcome:
    install = Install(tmp_path, "1.0.0", "npm")
    return pipeline.Outcome(install, State.UNPATCHED, State.UNPATCHED, False, detail, fix=fix)


def test_a_refusals_fix_is_the_next_step_whatever_its_message_says(tmp_path):
    outcome = _dist(tmp_path, "refused for reasons told in other words", fix="chmod go-w /x/tools.js")
    assert pipeline.next_step(outcome) == "chmod go-w /x/tools.js, then senpi-guard apply"
    layer = pipeline.LayerOutcome(tmp_path / "ext.ts", State.ABSENT, State.ABSENT, False, "words", fix="chmod go-w /y")
    assert pipeline.next_step(layer) == "chmod go-w /y, then senpi-guard apply"


def test_a_fix_named_only_in_the_words_is_not_taken_as_the_next_step(tmp_path):
    outcome = _dist(tmp_path, "something (chmod go-w /x/tools.js) said in passing")
    assert "chmod" not in (pipeline.next_step(outcome) or "")
    layer = pipeline.LayerOutcome(tmp_path / "ext.ts", State.ABSENT, State.ABSENT, False, "(chmod go-w /y)", step="s")
    assert pipeline.next_step(layer) == "s"
