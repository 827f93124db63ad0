"""The suite keeps to a HOME of its own (tests/runhome.py): every process a test starts has the run's
HOME, XDG folders and npm cache, none of them in the real user's home; and the guard on each test
looks at that HOME, so a senpi-guard the same user runs meanwhile (a `demo`, a `status`, with the
real HOME) is no business of the suite's (before: 8 tests errored in their teardown)."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

from conftest import HANG_S

TESTS = Path(__file__).resolve().parents[1]


def test_every_process_a_test_starts_has_the_runs_home_xdg_folders_and_npm_cache(tmp_path_factory, isolated_dirs):
    real = Path(pwd.getpwuid(os.getuid()).pw_dir)
    run = tmp_path_factory.getbasetemp()
    probe = 'printf "%s\\n" "$HOME" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$XDG_CACHE_HOME"'
    seen = subprocess.run(["sh", "-c", probe], capture_output=True, text=True, check=True).stdout.split("\n")[:5]
    home = Path(seen[0])
    assert home.is_relative_to(run) and not home.is_relative_to(real), (home, real)
    assert all(Path(folder).is_relative_to(isolated_dirs) for folder in seen[1:]), seen  # (the test's own)
    cache = subprocess.run(["npm", "config", "get", "cache"], capture_output=True, text=True, check=True).stdout
    assert Path(cache.strip()).is_relative_to(run) and not Path(cache.strip()).is_relative_to(real), cache


INNER = """
import os
from pathlib import Path


def test_writes_into_the_runs_home():
    (Path(os.environ["HOME"]) / ".config" / "stray").mkdir(parents=True)


def test_leaves_it_alone():
    pass
"""


def test_the_guard_fails_a_test_that_wrote_into_the_runs_home(tmp_path):
    """An inner run with the suite's conftest: the test that wrote into the run's HOME errors in
    its teardown, naming what it wrote (its call passed); the next test (the same HOME) passes."""
    (tmp_path / "test_inner.py").write_text(INNER)
    outer = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST")
    env = {k: v for k, v in os.environ.items() if k not in outer} | {"PYTHONPATH": str(TESTS)}
    flags = ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--noconftest", "-p", "conftest", "--rootdir", tmp_path]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *map(str, flags), str(tmp_path / "test_inner.py")],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        cwd=tmp_path,
        env=env,
    )
    out = done.stdout
    assert done.returncode == 1 and "2 passed, 1 error" in out, out[-3000:]
    assert "ERROR at teardown of test_writes_into_the_runs_home" in out and "+ .config/stray" in out, out[-3000:]
