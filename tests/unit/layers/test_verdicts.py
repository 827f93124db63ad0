"""The one judgment status and verify share (layers/verdicts, extension_plan.judged, status's step):
a held install or agent dir is as the user asked and its step still names apply (which lifts the
hold); with the dist layer in error, the step is the one apply takes (the extension's); a refusal's
fix is the next step, built from its field, never read out of its words."""

from __future__ import annotations

from pathlib import Path

import pytest

from senpi_guard import discover
from senpi_guard.commands import status
from senpi_guard.core.patch.classify import State
from senpi_guard.demo import sample
from senpi_guard.discover import Install
from senpi_guard.io.config import Config
from senpi_guard.layers import extension_plan, pipeline, verdicts
from senpi_guard.layers.extension import LayerOutcome
from senpi_guard.layers.findings import Outcome
from senpi_guard.prove.verify import VerifyReport


@pytest.fixture
def install(tmp_path):
    folder = tmp_path / "senpi"
    sample.write_sample_package(folder, shape=3)
    return discover.describe(folder)


def absent(install, report: VerifyReport | None = None) -> LayerOutcome:
    ok = False if report is None else report.ok  # (as extension.verify judges a file not there)
    return LayerOutcome(Path("/agent/extensions/x.js"), "absent", "absent", ok, "", report, installs=[install])


def test_a_held_install_is_as_asked_and_its_step_names_apply(install):
    held = Outcome(install, State.HELD, State.HELD, True)
    assert "senpi-guard apply" in verdicts.next_step(held) and "lifts the hold" in verdicts.next_step(held)
    assert verdicts.next_step(Outcome(install, State.PATCHED, State.PATCHED, True)) is None


@pytest.mark.parametrize("replay_ok", [None, True, False])
def test_an_agent_dir_a_revert_held_is_as_asked_while_what_apply_writes_still_passes(install, replay_ok):
    report = None if replay_ok is None else VerifyReport(ok=replay_ok)
    target = extension_plan.AgentTarget(Path("/agent"), "default", [install], held=True)
    judged = extension_plan.judged(absent(install, report), target)
    assert judged.after == State.HELD and judged.ok is (replay_ok is not False)
    assert "senpi-guard apply" in verdicts.next_step(judged)
    unheld = extension_plan.judged(absent(install, report), extension_plan.AgentTarget(Path("/agent"), "default"))
    assert unheld.after == "absent" and not unheld.ok


def test_with_the_dist_layer_in_error_the_step_is_the_one_apply_takes(install):
    error = Outcome(install, State.ERROR, State.ERROR, False, "no file defines buildPromptBlocks")
    target = extension_plan.AgentTarget(Path("/agent"), "default", [install])
    extension = extension_plan.judged(absent(install), target)
    as_wanted, step, amiss = status._judged([error, extension], install, Config())
    assert not as_wanted and amiss == ["extension absent"]
    assert step == "run `senpi-guard apply` (installs the extension layer)"


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
    layer = pipeline.LayerOutcome(
        tmp_path / "ext.ts", State.ABSENT, State.ABSENT, False, "(chmod go-w /y)", step=pipeline.Step.INSTALL_EXTENSION
    )
    assert pipeline.next_step(layer) == "run `senpi-guard apply` (installs the extension layer)"
