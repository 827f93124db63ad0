"""commands/uninstall: what it removed and what it left are data (the service's paths, each
folder left with the kind of reason), and its lines are made from them."""

from __future__ import annotations

import os
import sys

import pytest

from senpi_guard.commands import uninstall
from senpi_guard.commands.uninstall_view import Left, Why
from senpi_guard.io.store import Store
from senpi_guard.keep import service


def test_a_folder_holding_files_is_left_as_not_empty_and_an_empty_one_is_removed(tmp_path):
    kept, gone = tmp_path / "kept", tmp_path / "gone"
    kept.mkdir()
    (kept / "theirs").write_text("not senpi-guard's")
    gone.mkdir()
    removed: list[str] = []
    left: list[Left] = []
    uninstall._remove_empty([kept, gone], removed, left)
    assert removed == [str(gone)] and left == [Left(kept, Why.NOT_EMPTY)]
    assert str(left[0]) == f"{kept} (not empty: something else keeps files there)"


@pytest.mark.skipif(os.geteuid() != 0, reason="root's hands-off rule (others are refused by the system)")
def test_a_folder_under_one_without_write_bits_is_left_hands_off(tmp_path):
    above = tmp_path / "above"
    folder = above / "made"
    folder.mkdir(parents=True)
    above.chmod(0o555)
    removed: list[str] = []
    left: list[Left] = []
    try:
        uninstall._remove_empty([folder], removed, left)
    finally:
        above.chmod(0o755)
    assert removed == [] and left == [Left(folder, Why.HANDS_OFF)] and folder.is_dir()
    assert str(left[0]) == f"{folder} ({above} has no write bits: chmod u+w {above}, then remove it)"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the systemd user unit")
def test_the_service_removed_is_what_the_daemons_removal_gave_back(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs"))  # (no systemctl: only the file to remove)
    unit = service.systemd_unit_path()
    unit.parent.mkdir(parents=True)
    unit.write_text("[Unit]\n")
    assert uninstall._remove_service(Store()) == [str(unit)] and not unit.exists()
    assert capsys.readouterr().out == ""
