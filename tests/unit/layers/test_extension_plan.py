"""The extension layer's planner: from an agent dir's judgment (as status makes it, without a
replay), the change apply makes there, for every step the judgment can name."""

from __future__ import annotations

from pathlib import Path

import pytest

from senpi_guard.core.patch.classify import State
from senpi_guard.discover import Install
from senpi_guard.layers import extension_plan
from senpi_guard.layers.change import Hold, Step, Want
from senpi_guard.layers.extension_state import LayerOutcome

INSTALL = Install(Path("/opt/senpi"), "2026.8.22-2", "npm")
FILE = Path("/home/u/.senpi/agent/extensions/senpi-guard-directive-dedupe.js")
TARGET = extension_plan.AgentTarget(FILE.parents[1], "default", [INSTALL])


def judged(state: State, **target) -> LayerOutcome:
    found = LayerOutcome(FILE, state, state, state == State.INSTALLED, "")
    return extension_plan.judged(found, extension_plan.AgentTarget(TARGET.agent_dir, "default", [INSTALL], **target))


@pytest.mark.parametrize(
    ("state", "want", "step"),
    [
        (State.ABSENT, Want.WRITE, Step.INSTALL_EXTENSION),
        (State.STALE, Want.WRITE, Step.RENDER_EXTENSION),
        (State.MODIFIED, Want.WRITE, Step.REPLACE_EDITED),
        (State.INSTALLED, Want.KEEP, Step.NONE),
        (State.FOREIGN, Want.KEEP, Step.RENAME_FOREIGN),
    ],
)
def test_each_state_of_an_agent_dir_plans_what_apply_does_there(state, want, step):
    change = extension_plan.change(judged(state))
    assert (change.want, change.step) == (want, step)
    assert change.writes == (want != Want.KEEP)
    assert change.installs == (INSTALL.package_dir,) and change.where == FILE
    assert change.proof == (want == Want.WRITE)
    assert change.keep_aside == (state == State.MODIFIED)  # (the user's edited copy goes to the data folder)


def test_a_foreign_file_is_the_users_to_rename_not_applys():
    assert not extension_plan.change(judged(State.FOREIGN)).executable


def test_an_agent_dir_a_revert_holds_is_written_again_and_its_hold_lifted():
    change = extension_plan.change(judged(State.ABSENT, held=True))
    assert change.found == State.HELD and change.writes and change.hold == Hold.CLEAR


def test_where_the_extension_must_not_be_ours_is_taken_out():
    change = extension_plan.change(judged(State.INSTALLED, unsafe="left out: no dist layer", deferred=True))
    assert change.want == Want.REMOVE and change.writes and not change.keep_aside
    assert extension_plan.change(judged(State.ABSENT, unsafe="left out", deferred=True)).want == Want.KEEP
    edited = extension_plan.change(judged(State.MODIFIED, unsafe="left out", deferred=True))
    assert edited.want == Want.REMOVE and edited.keep_aside  # (an edited copy is kept in the data folder)


def test_an_agent_dir_serving_an_install_whose_dist_layer_failed_is_not_written_where_that_is_a_risk():
    from senpi_guard.core.patch.definition import load

    patch = load("directive-dedupe")
    risky = {INSTALL.package_dir: {"bridge", "upstream"}}
    failed = {INSTALL.package_dir: "permission denied"}
    why = extension_plan.without_dist(patch, TARGET, risky, failed)
    assert why.startswith("not written: senpi 2026.8.22-2's dist layer could not be put in place")
    assert "keep-last" in why  # (the cost the patch lists for the target there)
    assert extension_plan.without_dist(patch, TARGET, risky, {}) == ""  # (its dist layer is in place)
    bridge_only = {INSTALL.package_dir: {"bridge"}}  # (no cost listed for that target alone)
    assert extension_plan.without_dist(patch, TARGET, bridge_only, failed) == ""


def test_a_taken_out_record_it_cannot_read_names_the_file_to_delete_as_the_step(tmp_path):
    from senpi_guard.core.patch.definition import load
    from senpi_guard.io.config import Config
    from senpi_guard.io.store import Store
    from senpi_guard.layers import extension_reprove

    store = Store(tmp_path / "data", tmp_path / "state")
    record = tmp_path / "state" / extension_reprove.TAKEN_OUT
    record.parent.mkdir()
    record.write_text("{not json")
    agent = tmp_path / "agent"
    agent.mkdir()
    target = extension_plan.AgentTarget(agent, "default", [INSTALL])
    outcome = extension_plan._inspected(load("directive-dedupe"), Config(), store, target)
    assert not outcome.ok and "is corrupt" in outcome.detail
    assert outcome.next == f"delete {record}, then run `senpi-guard apply`"
