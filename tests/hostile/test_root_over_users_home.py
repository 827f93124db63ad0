"""`sudo -E senpi-guard status` (root, HOME the user's, no XDG_CACHE_HOME): nothing of root's is
left in the user's home. Found by a hostile pass: the record of the folders a package-manager
question made created a root-owned 0700 ~/.cache and ~/.cache/senpi-guard, npm as root a
root-owned ~/.npm, after which the user could make nothing in their own ~/.cache."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG_S


@pytest.mark.skipif(os.geteuid() != 0, reason="root over another user's home")
def test_status_as_root_with_a_users_home_leaves_nothing_of_roots_there(attacker, open_dir):
    home = open_dir / "home"
    home.mkdir()
    os.chown(home, attacker.pw_uid, attacker.pw_gid)
    tools = {str(Path(shutil.which(name) or "/bin/true").parent) for name in ("npm", "pnpm", "yarn")}
    env = {
        "PATH": ":".join([*sorted(tools), "/usr/bin", "/bin"]),
        "HOME": str(home),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "senpi_guard", "status"], env=env, capture_output=True, text=True, timeout=HANG_S
        )
        assert done.returncode == 1 and "no senpi install found" in done.stderr, done.stderr
    roots = [p for p in [home, *home.rglob("*")] if p.lstat().st_uid == 0]
    assert roots == [], roots
