"""commands/daemon: `remove` gives back what it removed; `daemon uninstall` prints it."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import run_cli

from senpi_guard.commands import daemon
from senpi_guard.keep import service

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the systemd user unit")


@pytest.fixture
def unit(tmp_path, monkeypatch):
    """A unit file in its place, on a machine without systemctl (only the file is there to remove)."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs"))
    path = service.systemd_unit_path()
    path.parent.mkdir(parents=True)
    path.write_text("[Unit]\nDescription=senpi-guard\n")
    return path


def test_remove_gives_back_the_unit_it_removed_and_nothing_once_none_is_there(unit):
    assert daemon.remove() == [unit] and not unit.exists()
    assert daemon.remove() == []


def test_daemon_uninstall_says_what_remove_removed(capsys, unit):
    code, out, _ = run_cli(capsys, "daemon", "uninstall")
    assert code == 0 and out == f"removed {unit}\n" and not unit.exists()
    code, out, err = run_cli(capsys, "daemon", "uninstall", "--json")
    assert code == 0 and err == f"{unit} was not installed\n"
    assert json.loads(out) == {"action": "uninstall", "unit": str(unit), "removed": False, "ok": True}
