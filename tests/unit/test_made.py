"""The record of the folders senpi-guard made (io/made): what is listed, and what is never trusted."""

from __future__ import annotations

import json

from senpi_guard.io import made
from senpi_guard.io.write import private_dirs


def test_made_folders_are_recorded_outermost_first_and_pre_existing_ones_are_not(tmp_path):
    (tmp_path / "mine").mkdir()  # the user's
    made.mkdirs(tmp_path / "mine" / "a" / "b")
    made.mkdirs(tmp_path / "mine" / "a" / "b")  # (again: nothing new)
    listed = made.recorded()
    assert listed[-2:] == [tmp_path / "mine" / "a", tmp_path / "mine" / "a" / "b"]
    assert tmp_path / "mine" not in listed
    data = json.loads(made.record_file().read_text())
    assert data["version"] == made.VERSION and len(data["folders"]) == len(set(data["folders"]))
    assert [p.name for p in made.record_file().parent.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_senpi_guards_own_folders_are_recorded_but_not_what_is_inside_them(tmp_path):
    state = made.record_file().parent
    private_dirs(state / "deep" / "inside")
    listed = made.recorded()
    assert state in listed and state / "deep" not in listed and state.parent in listed


def test_a_record_of_another_version_or_unreadable_counts_as_empty(tmp_path):
    made.mkdirs(tmp_path / "x")
    record = made.record_file()
    record.write_text(json.dumps({"version": made.VERSION + 1, "folders": [str(tmp_path / "x")]}))
    assert made.recorded() == []
    record.write_text("{not json")
    assert made.recorded() == []
    record.write_text(json.dumps({"version": made.VERSION, "folders": ["relative/path", 3, str(tmp_path / "x")]}))
    assert made.recorded() == [tmp_path / "x"]


def test_the_cache_folders_own_chain_is_recorded_in_the_cache_folder_and_nothing_in_state():
    cache = made.cache_record_file().parent
    private_dirs(cache)  # (as status makes it: its only write)
    assert not made.record_file().exists()  # nothing outside the cache folder
    listed = made.recorded()
    assert cache in listed and cache.parent in listed  # (the XDG cache parent was missing too)
    assert json.loads(made.cache_record_file().read_text())["folders"] == [str(cache.parent), str(cache)]
