"""layers/extension_reprove: the loader stamp the watcher compares moves with what the extension's
proof loads (a swapped package, an edit of the loader in place), and holds still otherwise; the
record of an extension taken out is versioned, one line when it cannot be used, cleared by apply."""

from __future__ import annotations

import json
import shutil

import pytest

from senpi_guard import discover
from senpi_guard.core.patch import definition
from senpi_guard.demo import sample
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import extension_reprove as reprove


@pytest.fixture
def package(tmp_path):
    folder = tmp_path / "senpi"
    sample.write_sample_package(folder, shape=2)
    return folder


def test_the_stamp_moves_with_the_loader_and_the_package_and_holds_still_otherwise(package, tmp_path):
    install = discover.describe(package)
    hosts: dict = {}
    first = reprove.loader_stamp([install], hosts)
    ((_, _, files),) = first
    assert [role for role, _path, _stat in files] == ["loader", "runner"]  # (found by what they export)
    assert reprove.loader_stamp([install], hosts) == first
    loader = package / "dist" / "core" / "extensions" / "loader.js"
    loader.write_text(loader.read_text() + "\n// a release's comment\n")  # in place: same dist/
    assert reprove.loader_stamp([install], hosts) != first
    edited = reprove.loader_stamp([install], hosts)
    fresh = tmp_path / "fresh"
    shutil.copytree(package, fresh)
    package.rename(tmp_path / "old")
    fresh.rename(package)  # npm's swap: the same files, new inodes
    assert reprove.loader_stamp([install], hosts) not in (first, edited)


def job(tmp_path) -> reprove.Reproof:
    patch = definition.load("directive-dedupe")
    install = discover.Install(tmp_path / "senpi", "2026.8.22-2", "npm")
    return reprove.Reproof(patch, Config(), tmp_path / "agent", [install], ())


def test_the_record_is_kept_versioned_and_cleared(tmp_path):
    store = Store(tmp_path / "data", tmp_path / "state")
    taken = job(tmp_path)
    assert reprove.taken_out(store, taken.patch, taken.agent_dir) is None
    reprove.record(store, taken, "its proof failed")
    found = reprove.taken_out(store, taken.patch, taken.agent_dir)
    assert found["problem"] == "its proof failed" and "senpi-guard apply" in found["next"]
    assert found["installs"] == [{"package_dir": str(tmp_path / "senpi"), "version": "2026.8.22-2"}]
    doc = json.loads((tmp_path / "state" / reprove.TAKEN_OUT).read_text())
    assert doc["version"] == reprove.TAKEN_OUT_VERSION and len(doc["taken_out"]) == 1
    reprove.record(store, taken, "failed again")  # (one entry per patch and agent dir)
    assert len(json.loads((tmp_path / "state" / reprove.TAKEN_OUT).read_text())["taken_out"]) == 1
    assert not list((tmp_path / "state").glob(f".{reprove.TAKEN_OUT}.*"))  # (written by rename, no temp left)
    reprove.clear(store, taken.patch, taken.agent_dir)
    assert reprove.taken_out(store, taken.patch, taken.agent_dir) is None


@pytest.mark.parametrize(
    ("content", "said"),
    [("{not json", "is corrupt"), ('{"version": 2, "taken_out": []}', "format 2"), ("[]", "not senpi-guard's")],
)
def test_a_record_it_cannot_use_is_one_line_naming_the_file_and_the_next_step(tmp_path, content, said):
    store = Store(tmp_path / "data", tmp_path / "state")
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / reprove.TAKEN_OUT).write_text(content)
    taken = job(tmp_path)
    with pytest.raises(FatalError) as caught:
        reprove.taken_out(store, taken.patch, taken.agent_dir)
    message = str(caught.value)
    assert said in message and reprove.TAKEN_OUT in message and "\n" not in message
    assert "delete it" in message or "upgrade" in message
