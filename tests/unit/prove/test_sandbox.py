"""prove/sandbox: the one replay folder of both layers. It holds the harness, goes at the end of the
block (^C included), is swept in every place a replay folder can be made once its run is gone, and,
as root for another user, is made in the shared temp folder by that user."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from senpi_guard.io import runas
from senpi_guard.prove import sandbox
from senpi_guard.prove.sandbox import Sandbox

GONE = "999999999"  # (no such pid: above any pid_max)


def test_a_folder_holds_the_harness_and_goes_when_the_block_ends(tmp_path):
    box = Sandbox(tmp_path / "verify")
    with box.folder("-ext", "extension_harness.mjs", {"a.mjs": b"x", "protocol.mjs": b"a patch's own"}) as folder:
        assert folder.parent == tmp_path / "verify"
        assert folder.name.startswith(f"{sandbox.PREFIX}{os.getpid()}-ext-")
        assert (folder / "a.mjs").read_bytes() == b"x"
        assert (folder / "extension_harness.mjs").read_bytes() == sandbox.JS.joinpath(
            "extension_harness.mjs"
        ).read_bytes()
        assert (folder / "protocol.mjs").read_bytes() == sandbox.JS.joinpath("protocol.mjs").read_bytes()
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not folder.exists()


def test_a_folder_goes_on_ctrl_c(tmp_path):
    box = Sandbox(tmp_path / "verify")
    with pytest.raises(KeyboardInterrupt), box.folder("", "harness.mjs", {}) as folder:
        raise KeyboardInterrupt  # (cli.Terminated, SIGTERM's exception, is a KeyboardInterrupt)
    assert not folder.exists()


def test_the_sweep_covers_every_place_a_folder_can_be_made(tmp_path, monkeypatch):
    """The state dir and each of temp_places (TMPDIR, /tmp, /var/tmp: where shared_temp looks)."""
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", None)
    work = tmp_path / "verify"
    work.mkdir()
    places = [work, *sandbox.temp_places()]
    assert Path("/var/tmp") in places and scratch in places
    left, kept = [], []
    try:
        for place in places:
            if not os.access(place, os.W_OK):
                continue
            for name in (f"{sandbox.PREFIX}{GONE}-ext-0badc0de", f"{sandbox.CHECK_PREFIX}{GONE}-x"):
                (place / name / "pkg").mkdir(parents=True)
                left.append(place / name)
            kept.append(place / f"{sandbox.PREFIX}{os.getpid()}-ext-0badc0de")  # (a living run's)
            kept[-1].mkdir()
        sandbox.sweep(work)
        assert [p for p in left if p.exists()] == []
        assert all(p.exists() for p in kept)
    finally:
        for path in left + kept:
            if path.exists():
                for inner in sorted(path.rglob("*"), reverse=True):
                    inner.rmdir()
                path.rmdir()


@pytest.mark.skipif(os.geteuid() != 0, reason="a folder made as another user needs root")
def test_as_root_for_another_user_the_folder_is_theirs_in_the_shared_temp(tmp_path):
    tmp_path.chmod(0o755)
    uid, gid = runas.nobody()
    box = Sandbox(tmp_path / "verify", runas.Account(uid, gid))
    with box.folder("-ext", "extension_harness.mjs", {"x.mjs": b"x"}) as folder:
        kwargs = box.popen_kwargs(folder)
        assert (kwargs["user"], kwargs["group"], kwargs["extra_groups"]) == (uid, gid, [])
        assert kwargs["env"]["TMPDIR"] == str(folder / sandbox.NODE_TMP)  # (node's temp folder: theirs, in it)
        assert folder.parent == sandbox.shared_temp()
        assert {(p.stat().st_uid, p.stat().st_gid) for p in (folder, *folder.iterdir())} == {(uid, gid)}
    assert not folder.exists()


def test_what_node_writes_to_its_temp_folder_stays_in_the_replay_folder_and_goes_with_it(tmp_path, given_tmp):
    """senpi's loader caches each extension jiti transpiles in `<os.tmpdir()>/jiti`: a real node,
    run as a replay runs, writes there, and the temp folder the user gave is left untouched."""
    node = shutil.which("node") or pytest.skip("node is not installed")
    script = (
        'import { tmpdir } from "node:os"; import { mkdirSync, writeFileSync } from "node:fs";\n'
        'mkdirSync(`${tmpdir()}/jiti`, { recursive: true }); writeFileSync(`${tmpdir()}/jiti/ext.mjs`, "cached");\n'
        "console.log(tmpdir());\n"
    )
    box = Sandbox(tmp_path / "verify")
    with box.folder("-ext", "extension_harness.mjs", {"writes.mjs": script.encode()}) as folder:
        done = subprocess.run(
            [node, str(folder / "writes.mjs")], capture_output=True, text=True, check=True, **box.popen_kwargs(folder)
        )
        assert done.stdout.strip() == str(folder / sandbox.NODE_TMP)
        assert (folder / sandbox.NODE_TMP / "jiti" / "ext.mjs").read_text() == "cached"
    assert not folder.exists() and list(given_tmp.iterdir()) == []
