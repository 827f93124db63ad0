"""One JSON row and one text block for both layers' results: the keys they share have the same
types, and the next step is the one vocabulary's (what status says too)."""

from __future__ import annotations

import json
from pathlib import Path

from senpi_guard.commands import results_view
from senpi_guard.core.states import State
from senpi_guard.discover import Install
from senpi_guard.layers import pipeline
from senpi_guard.layers.change import Step
from senpi_guard.layers.extension_state import LayerOutcome
from senpi_guard.layers.findings import Outcome

PKG = Path("/opt/senpi")
INSTALL = Install(PKG, "2026.8.22-2", "npm")
EXTENSION = Path("/home/u/.senpi/agent/extensions/senpi-guard-directive-dedupe.ts")

SHARED = {
    "layer": str,
    "patch": str,
    "path": str,
    "state_before": str,
    "state": str,
    "ok": bool,
    "changed": list,
    "would_write": list,
    "kept": list,
    "detail": str,
}


def dist(**fields) -> Outcome:
    base = {"before": State.UNPATCHED, "after": State.PATCHED, "ok": True, "patch": "directive-dedupe"}
    return Outcome(INSTALL, **(base | fields))


def extension(**fields) -> LayerOutcome:
    base = {"path": EXTENSION, "before": State.ABSENT, "after": State.INSTALLED, "ok": True, "detail": ""}
    return LayerOutcome(**(base | fields), patch="directive-dedupe", installs=[INSTALL])


def test_both_layers_rows_share_their_keys_with_the_same_types():
    for result in (dist(changed=["dist/a.js"]), extension()):
        row = results_view.row(result)
        assert all(isinstance(row[key], kind) for key, kind in SHARED.items()), row
        assert json.loads(json.dumps(row)) == row  # (plain JSON, nothing that needs a converter)


def test_what_each_layer_wrote_is_a_list_of_paths():
    assert results_view.row(dist(changed=["dist/a.js"]))["changed"] == ["dist/a.js"]
    assert results_view.row(extension())["changed"] == [str(EXTENSION)]
    same = extension(before=State.INSTALLED)
    assert results_view.row(same)["changed"] == []
    dry = extension(before=State.ABSENT, after=State.ABSENT, would_write=True)
    assert results_view.row(dry)["would_write"] == [str(EXTENSION)] and results_view.row(dry)["changed"] == []


def test_the_next_step_is_the_one_judgment_for_both_layers():
    missing = extension(before=State.ABSENT, after=State.ABSENT, ok=False, step=Step.INSTALL_EXTENSION)
    held = dist(before=State.HELD, after=State.HELD)
    for result in (missing, held):
        assert results_view.row(result)["next"] == pipeline.next_step(result) is not None
    assert results_view.row(extension())["next"] is None


def test_a_run_is_split_into_the_installs_and_the_agent_dirs(capsys):
    results_view.show([dist(), extension()], as_json=True)
    doc = json.loads(capsys.readouterr().out)
    assert [r["layer"] for r in doc["installs"]] == ["dist"] and [r["layer"] for r in doc["extension"]] == ["extension"]


def test_each_block_says_its_state_and_what_it_kept(capsys):
    kept = "/data/extension-kept/x.ts"
    results_view.show([dist(changed=["dist/a.js"], millis=12), extension(kept=[kept])], as_json=False)
    out = capsys.readouterr().out
    assert "unpatched -> patched" in out and "12 ms" in out and "wrote" in out
    assert f"kept     {kept}" in out and "absent -> installed" in out
