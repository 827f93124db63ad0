"""The one executor on real files in a temporary folder: each file written only while it is what
the plan read, a hand-edited one kept aside and a headerless one backed up first, the run stopped
at the first failure (what was written before it said), and a hold set only once all are done."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest
from layerkit import bare_install

from senpi_guard.core.states import State
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io import write
from senpi_guard.layers.change import Change, Want
from senpi_guard.layers.execute import Ready, execute

ORIGINAL = b"export function buildPromptBlocks() { return []; }\n"
PATCHED = b"// patched\n" + ORIGINAL


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def install(tmp_path: Path) -> Install:
    return bare_install(tmp_path)


def target(
    install: Install, name: str, data: bytes, found: State = State.UNPATCHED, keep_aside: bool = False
) -> tuple[Ready, Path]:
    """A target file on disk holding `data`, and the change that writes PATCHED over it (a file apply
    found unpatched is backed up first; an edited one of ours is kept aside instead)."""
    path = install.package_dir / "dist" / name
    path.write_bytes(data)
    snapshot = write.read(path, install.package_dir)
    change = Change("dist", "p", path, found, snapshot.sha256, want=Want.WRITE, keep_aside=keep_aside)
    backup_under = "" if keep_aside else sha(ORIGINAL)
    return Ready(change, PATCHED, snapshot, install, f"dist/{name}", backup_under), path


def test_each_file_is_written_in_turn_with_its_new_sha_and_a_headerless_one_backed_up_first(store, install):
    first, first_path = target(install, "a.js", ORIGINAL)
    second, second_path = target(install, "b.js", ORIGINAL)
    done = execute([first, second], store, threading.Event())
    assert done.error is None and done.changed == ["dist/a.js", "dist/b.js"]
    assert first_path.read_bytes() == PATCHED == second_path.read_bytes()
    assert done.final == {str(first_path): sha(PATCHED), str(second_path): sha(PATCHED)}
    (backup,) = set(done.backups)  # (the same original bytes are kept once)
    assert Path(backup).read_bytes() == ORIGINAL


def test_a_file_changed_since_it_was_read_stops_the_run_and_what_was_written_before_is_said(store, install):
    first, first_path = target(install, "a.js", ORIGINAL)
    second, second_path = target(install, "b.js", ORIGINAL)
    second_path.write_bytes(b"// someone else's edit\n")
    done = execute([first, second], store, threading.Event())
    assert done.changed == ["dist/a.js"] and isinstance(done.error, FatalError)
    assert "changed" in str(done.error)
    assert first_path.read_bytes() == PATCHED
    assert second_path.read_bytes() == b"// someone else's edit\n"  # (never written over)


def test_a_hand_edited_file_is_kept_aside_before_it_is_written(store, install):
    edited = b"// patched, then edited by hand\n" + ORIGINAL
    ready, path = target(install, "a.js", edited, State.DRIFTED, keep_aside=True)
    done = execute([ready], store, threading.Event())
    assert done.error is None and path.read_bytes() == PATCHED
    (kept,) = done.kept
    assert Path(kept).read_bytes() == edited and done.backups == []


def test_a_stopped_run_writes_nothing_and_sets_no_hold(store, install):
    ready, path = target(install, "a.js", ORIGINAL)
    stop = threading.Event()
    stop.set()
    done = execute([ready], store, stop, hold=(install.package_dir, "reverted"))
    assert done.changed == [] and done.error is not None and path.read_bytes() == ORIGINAL
    assert store.hold(install.package_dir) is None


def test_the_hold_is_set_once_every_change_is_made(store, install):
    ready, _ = target(install, "a.js", ORIGINAL)
    done = execute([ready], store, threading.Event(), hold=(install.package_dir, "reverted"))
    assert done.error is None and store.hold(install.package_dir)["reason"] == "reverted"


def test_a_hold_is_set_when_there_was_nothing_to_write(store, install):
    assert execute([], store, threading.Event(), hold=(install.package_dir, "reverted")).error is None
    assert store.hold(install.package_dir) is not None


def extension(tmp_path: Path, data: bytes | None, found: State, want: Want, keep_aside: bool = False) -> Ready:
    path = tmp_path / "agent" / "extensions" / "senpi-guard.ts"
    if data is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    change = Change("extension", "p", path, found, None, want=want, keep_aside=keep_aside)
    return Ready(change, b"// ours, new\n" if want == Want.WRITE else None, found=data)


def test_the_extension_is_written_into_an_agent_dir_made_on_the_way(store, tmp_path):
    ready = extension(tmp_path, None, State.ABSENT, Want.WRITE)
    done = execute([ready], store, threading.Event())
    assert done.error is None and ready.change.where.read_bytes() == b"// ours, new\n"
    assert done.changed == [str(ready.change.where)]


def test_an_extension_that_appeared_since_it_was_read_is_never_written_over(store, tmp_path):
    ready = extension(tmp_path, None, State.ABSENT, Want.WRITE)
    ready.change.where.parent.mkdir(parents=True)
    ready.change.where.write_bytes(b"// the user's own\n")
    done = execute([ready], store, threading.Event())
    assert done.error is not None and ready.change.where.read_bytes() == b"// the user's own\n"


def test_an_edited_extension_is_moved_to_the_data_folder_then_written_anew(store, tmp_path):
    ready = extension(tmp_path, b"// ours, edited\n", State.MODIFIED, Want.WRITE, keep_aside=True)
    done = execute([ready], store, threading.Event())
    assert done.error is None and ready.change.where.read_bytes() == b"// ours, new\n"
    (kept,) = done.kept
    assert Path(kept).read_bytes() == b"// ours, edited\n" and store.data_dir in Path(kept).parents


@pytest.mark.parametrize("edited", [False, True])
def test_the_extension_taken_out_leaves_no_file_and_an_edited_one_is_kept(store, tmp_path, edited):
    found = State.MODIFIED if edited else State.INSTALLED
    ready = extension(tmp_path, b"// ours\n", found, Want.REMOVE, keep_aside=edited)
    done = execute([ready], store, threading.Event())
    assert done.error is None and not ready.change.where.exists()
    assert bool(done.kept) == edited and done.final == {}


def test_an_extension_changed_since_it_was_read_is_not_taken_out(store, tmp_path):
    ready = extension(tmp_path, b"// ours\n", State.INSTALLED, Want.REMOVE)
    ready.change.where.write_bytes(b"// changed meanwhile\n")
    done = execute([ready], store, threading.Event())
    assert done.error is not None and ready.change.where.read_bytes() == b"// changed meanwhile\n"
