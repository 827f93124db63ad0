"""The backup that fits a patched target file, on the sample package's real files and a real store:
none when there is no backup; a backup of the original, of a hand-fixed original or of a patched
copy fits (each reduces to the original the header names), also for a file whose edit can no
longer be taken out; any other bytes are refused in one line naming the backup."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import hand_patched
from layerkit import BRIDGE, dedupe

from senpi_guard.core.patch import apply
from senpi_guard.core.patch.classify import State
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers.dist import Reconciler
from senpi_guard.layers.dist_files import fitting_backup
from senpi_guard.layers.findings import TargetFile


@pytest.fixture
def rec(tmp_path: Path) -> Reconciler:
    return Reconciler(dedupe(), Config(), Store(tmp_path / "data", tmp_path / "state"))


def patched_bridge(rec: Reconciler, install: Install) -> tuple[bytes, bytes]:
    """The bridge written as apply composes it (no replay: nothing here runs it); its original and
    patched bytes."""
    (tf,) = [tf for tf in rec.inspect(install).files if tf.rel == BRIDGE]
    tf.path.write_bytes(tf.wanted)
    return tf.snapshot.data, tf.wanted


def bridge(rec: Reconciler, install: Install) -> TargetFile:
    (tf,) = [tf for tf in rec.inspect(install).files if tf.rel == BRIDGE]
    return tf


def backup(rec: Reconciler, install: Install, data: bytes) -> Path:
    header = apply.read_file_header((install.package_dir / BRIDGE).read_bytes())
    return rec.store.save_backup(install.package_dir, install.version, BRIDGE, data, header.original_sha256)


def fits(rec: Reconciler, install: Install):
    return fitting_backup(rec.store, rec.patch, rec.house.by_name, install, bridge(rec, install))


def test_no_backup_is_none(rec, install):
    patched_bridge(rec, install)
    assert fits(rec, install) is None


@pytest.mark.parametrize("kind", ["original", "hand-fixed", "patched"])
def test_a_backup_that_reduces_to_the_original_fits(rec, install, kind):
    original, patched = patched_bridge(rec, install)
    data = {
        "original": original,
        "hand-fixed": hand_patched(original.decode()).encode(),  # (what apply found and backed up)
        "patched": patched,
    }[kind]
    saved = backup(rec, install, data)
    found = fits(rec, install)
    assert found is not None and found.path == saved and found.data == data


def test_a_file_whose_edit_cannot_be_taken_out_is_given_its_backup(rec, install):
    original, patched = patched_bridge(rec, install)
    path = install.package_dir / BRIDGE
    path.write_bytes(b"// edited by hand\n" + patched)
    assert bridge(rec, install).classified.state == State.DRIFTED and bridge(rec, install).classified.base is None
    backup(rec, install, original)
    assert fits(rec, install).data == original


@pytest.mark.parametrize("kind", ["other-bytes", "edit-not-removable", "other-bytes-for-an-edited-file"])
def test_a_backup_that_does_not_reduce_to_the_original_is_refused(rec, install, kind):
    original, patched = patched_bridge(rec, install)
    data = {
        "other-bytes": original.replace(b"buildPromptBlocks", b"buildPromptBlocksNext"),
        "edit-not-removable": patched.replace(b"// senpi-guard: end directive-dedupe", b""),  # (its end line gone)
        "other-bytes-for-an-edited-file": original.replace(b"buildPromptBlocks", b"buildPromptBlocksNext"),
    }[kind]
    if kind == "other-bytes-for-an-edited-file":  # (nothing but the backup says what the original was)
        patched = b"// edited by hand\n" + patched
        (install.package_dir / BRIDGE).write_bytes(patched)
    saved = backup(rec, install, data)
    with pytest.raises(FatalError) as refused:
        fits(rec, install)
    assert str(refused.value) == (
        f"the backup {saved} does not fit {BRIDGE} (it is not the original the patch was made from); "
        "nothing was changed: delete that backup, or revert with --from-edit"
    )
    assert (install.package_dir / BRIDGE).read_bytes() == patched
