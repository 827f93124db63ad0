"""commands/uninstall_view: uninstall's lines and JSON document, made from its plan (the revert's
changes) and from what removing its folders did."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from senpi_guard import ui
from senpi_guard.commands import uninstall_view
from senpi_guard.commands.uninstall_view import Left, Why
from senpi_guard.core.states import State
from senpi_guard.discover import Install
from senpi_guard.layers.pipeline import Change, Hold, Want

PKG = Path("/opt/senpi")
AGENT = Path("/home/u/.senpi/agent/extensions/senpi-guard-directive-dedupe.js")


def _plan() -> dict:
    return {"service": None, "own": [], "config_removed": None, "made": [], "config_kept": None, "edits": []}


def _revert(path: Path, state: State) -> Change:
    return Change(
        "dist",
        "directive-dedupe",
        path,
        state,
        "0" * 64,
        Want.WRITE,
        hold=Hold.SET,
        installs=(PKG,),
        keep_aside=state == State.DRIFTED,
    )


def test_quiet_says_a_folder_left_by_the_kind_of_reason_never_by_its_words(tmp_path, capsys):
    left = [Left(tmp_path / "a", Why.NOT_EMPTY), Left(tmp_path / "b", Why.FAILED, "(not empty: the system's words)")]
    ui.configure(-1)
    try:
        uninstall_view.report(argparse.Namespace(json=False, purge=False), [], _plan(), [], left, dry_run=False)
    finally:
        ui.configure(0)
    assert capsys.readouterr().out == f"left      {tmp_path / 'b'} ((not empty: the system's words))\n"
    doc = uninstall_view._json_report([], _plan(), [], left, False, None)
    assert doc["left"] == [f"{tmp_path / 'a'} (not empty: something else keeps files there)", str(left[1])]


def test_an_installs_files_are_one_line_and_an_edited_one_is_said_kept_aside(capsys):
    changes = [
        _revert(PKG / "dist" / "a.js", State.PATCHED),
        _revert(PKG / "dist" / "b.js", State.DRIFTED),
        Change("extension", "directive-dedupe", AGENT, State.INSTALLED, None, Want.REMOVE, hold=Hold.SET),
        Change("extension", "directive-dedupe", AGENT.with_name("x.js"), State.ABSENT, None),  # (nothing to do)
    ]
    args = argparse.Namespace(json=False, purge=False)
    uninstall_view.report(args, changes, _plan(), [], [], dry_run=True, installs=(Install(PKG, "2026.8.9", "npm"),))
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"would revert  senpi 2026.8.9 at {PKG}  [directive-dedupe]  (edited by hand: your copy would be kept aside)",
        f"would remove  extension {AGENT}  [directive-dedupe]",
    ]
    uninstall_view.report(argparse.Namespace(json=True, purge=False), changes, _plan(), [], [], dry_run=True)
    doc = json.loads(capsys.readouterr().out)
    assert [r["path"] for r in doc["reverts"]] == [str(PKG / "dist" / "a.js"), str(PKG / "dist" / "b.js"), str(AGENT)]
    assert doc["changed"] and {r["hold"] for r in doc["reverts"]} == {"set"}
