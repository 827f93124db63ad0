"""What is remembered between runs or within a step (io/memo, prove/nodes, prove/owners): each
answer comes back while its inputs are unchanged, and a changed input is a miss, never a stale
answer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from senpi_guard.errors import NeedsFix, fix_of
from senpi_guard.io import memo
from senpi_guard.prove import nodes, owners

from .test_owners import pnpm_layout

MACHINE_NODE = shutil.which("node")
needs_node = pytest.mark.skipif(MACHINE_NODE is None, reason="no node on PATH")


def real_version(node: Path) -> str:
    return subprocess.run([str(node), "--version"], capture_output=True, text=True, check=True).stdout.strip()


def forge(kind: str, value) -> None:
    """Overwrite every remembered answer of `kind` with `value` (a stale answer one could reuse)."""
    data = json.loads(memo.memo_file().read_bytes())
    data[kind] = {key: value for key in data[kind]}
    memo.memo_file().write_text(json.dumps(data))


@needs_node
def test_node_version_is_remembered_by_its_binary_and_a_changed_binary_is_asked(tmp_path):
    node = tmp_path / "bin" / "node"
    node.parent.mkdir()
    shutil.copy2(os.path.realpath(MACHINE_NODE), node)
    nodes.version_of.cache_clear()
    assert nodes.version_of(str(node)) == real_version(node)
    forge("node-version", "v99.9.9")  # the remembered answer is the one used while the binary is the same
    nodes.version_of.cache_clear()
    assert nodes.version_of(str(node)) == "v99.9.9"
    time.sleep(0.01)
    node.chmod(0o755)  # (a new ctime: the binary may have been replaced in place)
    nodes.version_of.cache_clear()
    assert nodes.version_of(str(node)) == real_version(node)


def test_a_node_shim_is_never_remembered(tmp_path):
    """A shim picks its node by folder or environment: its own file says nothing of the version."""
    shim = tmp_path / "node"
    shim.write_text("#!/bin/sh\necho v22.1.0\n")
    shim.chmod(0o755)
    nodes.version_of.cache_clear()
    assert nodes.version_of(str(shim)) == "v22.1.0"
    assert memo.recall("node-version", memo.file_key(shim)) is None
    shim.write_text("#!/bin/sh\necho v24.2.0\n")
    nodes.version_of.cache_clear()
    assert nodes.version_of(str(shim)) == "v24.2.0"


def test_a_memo_anyone_else_may_write_is_not_read(tmp_path):
    memo.remember("kind", "key", "answer")
    assert memo.recall("kind", "key") == "answer"
    memo.memo_file().chmod(0o666)
    assert memo.recall("kind", "key") is None


def test_owners_are_judged_once_per_step_and_afresh_in_the_next(tmp_path):
    senpi, dep = pnpm_layout(tmp_path)
    with owners.step():
        first = owners.judge(senpi, None)
        (dep / "index.js").chmod(0o666)
        assert owners.judge(senpi, None) is first and first.anyones is None
    assert owners.judge(senpi, None).anyones == dep.resolve() / "index.js"
    with owners.step():
        assert owners.judge(senpi, None).anyones == dep.resolve() / "index.js"


def refused_layout(folder: Path) -> tuple[Path, Path]:
    """Root's install where nobody cannot read a file and another is group-writable: refused."""
    folder.chmod(0o755)
    senpi, dep = pnpm_layout(folder)
    (dep / "index.js").chmod(0o600)
    (senpi / "dist" / "cli.js").chmod(0o664)
    return senpi, dep


@pytest.mark.skipif(os.geteuid() != 0, reason="the verdict is root's")
def test_status_trusts_the_last_root_verdict_until_the_package_folders_change():
    with tempfile.TemporaryDirectory() as folder:
        senpi, _dep = refused_layout(Path(folder))
        said = owners.refusal(senpi, None)
        assert said and "chmod go-w" in said
        forge(owners.VERDICT, {"refusal": "remembered", "fix": ""})
        assert owners.refusal(senpi, None) == "remembered"
        (senpi / "package.json").chmod(0o600)  # a chmod of what the verdict stands on: judged again
        assert "chmod go-w" in owners.refusal(senpi, None)
        forge(owners.VERDICT, {"refusal": "remembered", "fix": ""})
        (senpi / "dist" / "cli.js").chmod(0o644)  # (deep inside: status alone would not see it)
        owner, note = owners.decide(senpi, None)  # apply and verify judge afresh: root's alone now
        assert owner is None and "cannot read" in note
        assert owners.refusal(senpi, None) is None  # and what they found is what status says


@pytest.mark.skipif(os.geteuid() != 0, reason="the verdict is root's")
def test_a_new_install_in_place_is_judged_again():
    with tempfile.TemporaryDirectory() as folder:
        senpi, _dep = refused_layout(Path(folder))
        owners.refusal(senpi, None)
        forge(owners.VERDICT, {"refusal": None, "fix": ""})
        moved = senpi.with_name("senpi-old")
        senpi.rename(moved)  # npm renames the new package in: a new inode where the old one was
        shutil.copytree(moved, senpi, symlinks=True, copy_function=shutil.copy2)
        assert "chmod go-w" in (owners.refusal(senpi, None) or "")


@pytest.mark.skipif(os.geteuid() != 0, reason="the verdict is root's")
def test_a_remembered_refusal_gives_back_the_fix_recorded_never_one_read_out_of_its_words():
    with tempfile.TemporaryDirectory() as folder:
        senpi, _dep = refused_layout(Path(folder))
        first = owners.refused(senpi, None)
        assert isinstance(first, NeedsFix) and first.fix.startswith("chmod go-w ")
        forge(owners.VERDICT, {"refusal": "remembered (chmod go-w /in/the/words)", "fix": "chmod go-w /recorded"})
        again = owners.refused(senpi, None)
        assert str(again) == "remembered (chmod go-w /in/the/words)" and fix_of(again) == "chmod go-w /recorded"
        forge(owners.VERDICT, {"refusal": "remembered"})  # (an older record, without its fix: judged again)
        assert fix_of(owners.refused(senpi, None)) == first.fix
