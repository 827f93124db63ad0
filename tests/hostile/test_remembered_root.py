"""Remembered answers as root (`sudo senpi-guard status` keeping the user's XDG_CACHE_HOME): an
answer in a folder the second user owns, or one they could have written, is never what root is
told, and root leaves nothing of its own in the user's cache."""

from __future__ import annotations

import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG_S

from senpi_guard.demo import sample

pytestmark = pytest.mark.usefixtures("steady_mount_table")  # (a replay needs the mount table still: tests/mounts.py)


def status_as_root(pkg: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "senpi_guard", "status", "--root", str(pkg)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
    )


def replayed(done: subprocess.CompletedProcess[str]) -> bool:
    return "import time:" in done.stderr and "senpi_guard.cli" not in done.stderr


def owned_by(folder: Path, uid: int) -> list[Path]:
    return [p for p in [folder, *folder.rglob("*")] if p.lstat().st_uid == uid]


def test_root_is_never_told_an_answer_the_user_could_have_written(attacker, users_dir, tmp_path):
    pkg = tmp_path / "senpi"
    sample.write_sample_package(pkg, 2, fillers=3)
    cache = users_dir / "cache"
    cache.mkdir()
    os.chown(cache, attacker.pw_uid, attacker.pw_gid)
    for _ in range(2):  # (the user's folder: nothing kept, nothing of root's left there)
        done = status_as_root(pkg, cache)
        assert done.returncode == 1 and "unpatched" in done.stdout and not replayed(done)
    assert owned_by(cache, 0) == []

    os.chown(cache, 0, 0)  # (root's for a moment: an answer kept there, then handed to the user)
    status_as_root(pkg, cache)  # (its memo, io/memo, is made in the cache: that run is not kept)
    status_as_root(pkg, cache)
    assert replayed(status_as_root(pkg, cache))
    (answer,) = (cache / "senpi-guard" / "answers").iterdir()
    forged = marshal.loads(answer.read_bytes())
    forged.update(code=0, chunks=[[1, "FORGED: every install patched\n"]])
    answer.write_bytes(marshal.dumps(forged))
    for path in (answer, answer.parent, answer.parent.parent, cache):
        os.chown(path, attacker.pw_uid, attacker.pw_gid)
    told = status_as_root(pkg, cache)
    assert "FORGED" not in told.stdout and told.returncode == 1 and "unpatched" in told.stdout
    assert not replayed(told)


def test_a_prefix_remounted_noexec_is_seen_at_once(npm_install, tmp_path):
    """A remount keeps every path's identity but not what access() says: the install's own
    `<prefix>/bin/node`, executable until its folder is remounted noexec (in a private mount
    namespace), is no longer the node status names, and a remembered answer saying it is never
    replayed."""
    pkg = npm_install(2)
    prefix = pkg.parents[3]
    console_node = shutil.which("node")
    assert console_node is not None
    own = prefix / "bin" / "node"
    try:
        os.link(os.path.realpath(console_node), own)
    except OSError:  # (another file system)
        shutil.copy2(os.path.realpath(console_node), own)
    runs = tmp_path / "runs"
    runs.mkdir()
    status = f"{sys.executable} -X importtime -m senpi_guard status --root {pkg}"
    script = (
        f"mount --bind {prefix} {prefix} && "
        + " && ".join(f"{{ {status} >{runs}/{n}.out 2>{runs}/{n}.err || true; }}" for n in ("warm", "first", "again"))
        + f" && mount -o remount,bind,noexec {prefix} {prefix}"
        + f" && {{ {status} >{runs}/noexec.out 2>{runs}/noexec.err || true; }}"
    )
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert done.returncode == 0, done.stderr

    def run(name: str) -> subprocess.CompletedProcess[str]:
        out, err = (runs / f"{name}.out").read_text(), (runs / f"{name}.err").read_text()
        return subprocess.CompletedProcess([], 0, out, err)

    first, again, noexec = run("first"), run("again"), run("noexec")
    assert f"(the install's own prefix: {own})" in first.stdout, first.stdout + first.stderr
    assert replayed(again) and again.stdout == first.stdout
    assert not replayed(noexec) and "the install's own prefix" not in noexec.stdout, noexec.stdout
