"""core/patch/extra: $SENPI_GUARD_EXTRA_PATCHES names patch folders from outside senpi-guard (each
entry a patch folder or a folder of them); a folder that is not there, or two patches of one name,
are refused in one line; the patches found load beside the shipped ones."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from senpi_guard.core.patch import definition
from senpi_guard.core.patch.extra import EXTRA_PATCHES, extra_patch_folders
from senpi_guard.errors import FatalError


def patch_folder(parent: Path, name: str) -> Path:
    folder = parent / name
    folder.mkdir(parents=True)
    (folder / "patch.toml").write_text(f'name = "{name}"\nversion = 1\n')
    return folder


def extra(monkeypatch: pytest.MonkeyPatch, *entries: Path | str) -> dict[str, Path]:
    monkeypatch.setenv(EXTRA_PATCHES, os.pathsep.join(str(e) for e in entries))
    return extra_patch_folders()


def test_without_the_variable_there_are_none(monkeypatch):
    monkeypatch.delenv(EXTRA_PATCHES, raising=False)
    assert extra_patch_folders() == {}
    assert extra(monkeypatch) == {}  # (set but empty)


def test_an_entry_is_a_patch_folder_or_a_folder_of_them(tmp_path, monkeypatch):
    one = patch_folder(tmp_path, "one")
    many = tmp_path / "many"
    two, three = patch_folder(many, "two"), patch_folder(many, "three")
    (many / "notes").mkdir()  # (no patch.toml: not a patch)
    (many / "README").write_text("not a patch\n")
    found = extra(monkeypatch, one, "", many)  # (an empty entry, as "a::b" gives, is skipped)
    assert found == {"one": one, "three": three, "two": two}


def test_a_patch_folder_is_taken_whole_not_searched_for_more(tmp_path, monkeypatch):
    outer = patch_folder(tmp_path, "outer")
    patch_folder(outer, "inner")
    assert extra(monkeypatch, outer) == {"outer": outer}


def test_a_home_relative_entry_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    mine = patch_folder(tmp_path / "dev", "mine")
    assert extra(monkeypatch, "~/dev") == {"mine": mine}


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_an_entry_that_is_not_a_folder_is_refused_in_one_line(tmp_path, monkeypatch, kind):
    entry = tmp_path / "entry"
    if kind == "file":
        entry.write_text('name = "x"\n')
    good = patch_folder(tmp_path, "good")
    with pytest.raises(FatalError) as caught:
        extra(monkeypatch, good, entry)
    message = str(caught.value)
    assert f"${EXTRA_PATCHES}" in message and str(entry) in message and "not a folder" in message
    assert "unset it" in message and "\n" not in message


def test_two_patches_of_one_name_are_refused_naming_both(tmp_path, monkeypatch):
    first = patch_folder(tmp_path / "a", "same")
    second = patch_folder(tmp_path / "b", "same")
    with pytest.raises(FatalError) as caught:
        extra(monkeypatch, first, tmp_path / "b")
    message = str(caught.value)
    assert "two patches named same" in message and str(first) in message and str(second) in message


def shipped_copy(tmp_path: Path, name: str) -> Path:
    """The shipped hand-fix-hooks patch, as a developer's patch of another name."""
    shipped = definition.load("hand-fix-hooks")
    folder = tmp_path / "dev" / name
    shutil.copytree(shipped.root, folder)
    toml = folder / "patch.toml"
    toml.write_text(toml.read_text().replace('name = "hand-fix-hooks"', f'name = "{name}"', 1))
    return folder


def test_an_extra_patch_loads_by_name_and_beside_the_shipped_ones(tmp_path, monkeypatch):
    folder = shipped_copy(tmp_path, "my-repair")
    extra(monkeypatch, tmp_path / "dev")
    patch = definition.load("my-repair")
    assert patch.name == "my-repair" and patch.root == folder
    names = [p.name for p in definition.load_all()]
    assert "my-repair" in names and "hand-fix-hooks" in names and "directive-dedupe" in names


def test_an_extra_patch_named_like_a_shipped_one_is_refused(tmp_path, monkeypatch):
    folder = shipped_copy(tmp_path, "hand-fix-hooks")
    extra(monkeypatch, folder)
    with pytest.raises(FatalError, match="named like senpi-guard's own patch hand-fix-hooks"):
        definition.load_all()
