"""Remembered answers as root (`sudo senpi-guard status` keeping the user's XDG_CACHE_HOME): an
answer in a folder the second user owns, or one they could have written, is never what root is
told, and root leaves nothing of its own in the user's cache."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

from senpi_guard.demo import sample


def status_as_root(pkg: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "senpi_guard", "status", "--root", str(pkg)],
        capture_output=True,
        text=True,
        timeout=120,
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
