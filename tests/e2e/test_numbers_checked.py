"""Every numeric setting is checked alike (issue 46, row 14): SENPI_GUARD_LOCK_TIMEOUT empty or no
number made every writing command exit 3, `nan` spun the lock's wait for ever, and a whole-number
setting took a fraction. Now each is one line naming it, its value and the range, exit 1, nothing
changed. Real subprocesses; the lock held by another real process."""

from __future__ import annotations

import pytest
from conftest import run_console, tree_digest, write_user_config
from test_records_lock import _hold_the_lock


@pytest.mark.parametrize("value", ["", "abc", "nan", "inf", "-1", "1e9"])
def test_a_bad_lock_timeout_is_one_line_and_exit_1(npm_install, value):
    pkg = npm_install(2)
    before = tree_digest(pkg)
    holder = _hold_the_lock(pkg)  # (`nan` spun only while it waited for a held lock)
    try:
        # (a ceiling only the old endless wait reaches)
        done = run_console("apply", "--root", pkg, env={"SENPI_GUARD_LOCK_TIMEOUT": value}, timeout=90)
        watched = run_console("watch", "--root", pkg, env={"SENPI_GUARD_LOCK_TIMEOUT": value}, timeout=90)
    finally:
        holder.kill()
        holder.wait()
    for run in (done, watched):
        errors = [line for line in run.stderr.splitlines() if line.startswith("senpi-guard:")]
        assert run.returncode == 1 and len(errors) == 1, run.stdout + run.stderr
        assert "SENPI_GUARD_LOCK_TIMEOUT must be a number from 0 to 86,400, got " in errors[0], errors[0]
        assert "Traceback" not in run.stdout + run.stderr
    assert tree_digest(pkg) == before


def test_a_good_lock_timeout_is_taken(npm_install):
    pkg = npm_install(2)
    done = run_console("apply", "--root", pkg, env={"SENPI_GUARD_LOCK_TIMEOUT": "0.5"})
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("check_max_entries = 1.5", "'check_max_entries' must be a whole number from 1 to 100,000,000, got 1.5"),
        ("check_max_bytes = 2000000.5", "'check_max_bytes' must be a whole number from 1,000,000 to"),
        ("verify_timeout = nan", "'verify_timeout' must be a number from 0.01 to 3,600, got nan"),
        ("quiet_period = inf", "'quiet_period' must be a number from 0.05 to 60, got inf"),
    ],
)
def test_a_numeric_setting_out_of_its_kind_is_one_line_and_exit_1(npm_install, isolated_dirs, text, said):
    pkg = npm_install(2)
    before = tree_digest(pkg)
    write_user_config(isolated_dirs, text)
    done = run_console("apply", "--root", pkg)
    errors = [line for line in done.stderr.splitlines() if line.startswith("senpi-guard:")]
    assert done.returncode == 1 and len(errors) == 1 and said in errors[0], done.stderr
    assert tree_digest(pkg) == before
