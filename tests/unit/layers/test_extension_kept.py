"""An edited extension file kept aside: moved out of the extensions folder (where senpi would still
load it) into the data folder, kept once per content, at most KEEP_COPIES copies per file (the
oldest go, another file's copies never), and a file it cannot read refused with one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from senpi_guard.errors import FatalError
from senpi_guard.io.store import Store
from senpi_guard.layers.extension_kept import KEEP_COPIES, keep_aside

NAME = "senpi-guard-directive-dedupe.js"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "data", tmp_path / "state")


def edited(agent_dir: Path, text: str) -> Path:
    """An extension file in the agent dir's extensions/ holding `text`."""
    path = agent_dir / "extensions" / NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def kept_copies(store: Store) -> list[Path]:
    folder = store.data_dir / "extension-kept"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def age(paths: list[str], start: int = 1_000_000_000) -> None:
    """Give the copies distinct times, oldest first (two copies made in one tick are told apart
    by their time, as on any machine where a second apply runs a while after the first)."""
    for i, path in enumerate(paths):
        if Path(path).exists():  # (those pruned since are gone)
            os.utime(path, ns=(start + i * 10**9, start + i * 10**9))


def test_the_edited_file_leaves_the_extensions_folder_and_its_bytes_are_in_the_data_folder(store, tmp_path):
    path = edited(tmp_path / "agent", "// senpi-guard: edited by hand\n")
    kept, pruned = keep_aside(path, store)
    assert not path.exists()  # (senpi no longer loads it)
    assert Path(kept).read_text() == "// senpi-guard: edited by hand\n" and pruned == []
    assert Path(kept).parent == store.data_dir / "extension-kept" and Path(kept).name.endswith(NAME)
    assert os.listdir(path.parent) == []  # (nothing else left beside it)


def test_the_same_bytes_kept_again_later_reuse_their_copy(store, tmp_path):
    path = edited(tmp_path / "agent", "// the same edit\n")
    made, _ = keep_aside(path, store)
    # (as if kept a day earlier: a copy's name starts with the time it was made)
    first = str(Path(made).rename(Path(made).with_name("20260101-000000" + Path(made).name[15:])))
    edited(tmp_path / "agent", "// the same edit\n")
    second, pruned = keep_aside(path, store)
    assert second == first and pruned == [] and not path.exists()
    assert kept_copies(store) == [Path(first)]


def test_past_keep_copies_the_oldest_copies_of_that_file_go(store, tmp_path):
    path = tmp_path / "agent" / "extensions" / NAME
    made = []
    for i in range(KEEP_COPIES):
        edited(tmp_path / "agent", f"// edit {i}\n")
        made.append(keep_aside(path, store)[0])
        age(made)
    assert len(kept_copies(store)) == KEEP_COPIES
    edited(tmp_path / "agent", "// one edit more\n")
    newest, pruned = keep_aside(path, store)
    assert pruned == [made[0]]  # (the oldest)
    assert set(kept_copies(store)) == {Path(p) for p in [*made[1:], newest]}
    assert Path(newest).read_text() == "// one edit more\n"


def test_another_agent_dirs_copies_are_never_pruned_for_this_one(store, tmp_path):
    other = keep_aside(edited(tmp_path / "other-agent", "// the other agent dir's edit\n"), store)[0]
    path = tmp_path / "agent" / "extensions" / NAME
    made = []
    for i in range(KEEP_COPIES + 2):
        edited(tmp_path / "agent", f"// edit {i}\n")
        made.append(keep_aside(path, store)[0])
        age(made)
    assert Path(other).exists() and Path(other).read_text() == "// the other agent dir's edit\n"
    assert len(kept_copies(store)) == KEEP_COPIES + 1  # (this file's KEEP_COPIES, and the other's one)


def test_a_file_it_cannot_read_is_refused_with_what_to_do_and_nothing_is_kept(store, tmp_path):
    missing = tmp_path / "agent" / "extensions" / NAME
    with pytest.raises(FatalError, match="move it away by hand, then retry"):
        keep_aside(missing, store)
    assert kept_copies(store) == []
