"""A hostile look at taking senpi-guard's extension out of an agent dir (extension.remove, which now
goes through the executor): a hand-edited file is moved to the data folder, never lost; what is not
ours, a FIFO, or a link put where the file was is never followed, read or removed."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from senpi_guard.core.patch.definition import Patch, load_all
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import extension

SECRET = b"root's secret\n"


@pytest.fixture
def patch() -> Patch:
    (found,) = [p for p in load_all() if p.name == "directive-dedupe"]
    return found


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "data", tmp_path / "state")


def installed(patch: Patch, agent_dir: Path, extra: bytes = b"") -> Path:
    """senpi-guard's extension as install writes it (plus `extra`: an edit by hand)."""
    path = extension.target_path(patch, agent_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(patch.render_extension(Config()).encode("utf-8") + extra)
    return path


def test_an_edited_extension_taken_out_is_kept_in_the_data_folder_byte_for_byte(patch, store, tmp_path):
    path = installed(patch, tmp_path / "agent", b"// my own tweak\n")
    edited = path.read_bytes()
    done = extension.remove(patch, Config(), store, tmp_path / "agent")
    assert done.ok and done.after == "absent" and not path.exists(), done.detail
    (kept,) = done.kept
    assert Path(kept).read_bytes() == edited and store.data_dir in Path(kept).parents
    assert kept in done.detail


def test_our_extension_taken_out_leaves_nothing_and_keeps_nothing(patch, store, tmp_path):
    path = installed(patch, tmp_path / "agent")
    done = extension.remove(patch, Config(), store, tmp_path / "agent")
    assert done.ok and done.after == "absent" and done.kept == [] and not path.exists(), done.detail


def test_a_fifo_where_the_extension_was_is_neither_waited_on_nor_removed(patch, store, tmp_path):
    path = extension.target_path(patch, tmp_path / "agent")
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    box: list = []
    worker = threading.Thread(target=lambda: box.append(extension.remove(patch, Config(), store, tmp_path / "agent")))
    worker.daemon = True
    worker.start()
    worker.join(timeout=20)
    assert box, "remove blocked on a FIFO"
    assert stat.S_ISFIFO(path.lstat().st_mode), box[0].detail


def test_a_link_where_the_extension_was_is_never_followed_into_the_data_folder(patch, store, tmp_path):
    """As root in another user's agent dir: that user's link to root's secret is neither read into
    senpi-guard's data folder nor removed, and the secret stays."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    agent = tmp_path / "agent"
    path = extension.target_path(patch, agent)
    path.parent.mkdir(parents=True)
    for folder in (agent, path.parent):
        os.chown(folder, 65534, 65534)
    secret = tmp_path / "secret"
    secret.write_bytes(patch.render_extension(Config()).encode("utf-8") + b"// " + SECRET)
    secret.chmod(0o600)
    path.symlink_to(secret)
    os.lchown(path, 65534, 65534)
    done = extension.remove(patch, Config(), store, agent)
    assert path.is_symlink() and secret.read_bytes().endswith(SECRET), done.detail
    kept = store.data_dir / "extension-kept"
    assert not kept.exists() or not any(SECRET in p.read_bytes() for p in kept.iterdir())
