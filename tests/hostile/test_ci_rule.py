"""The hostile tests' CI rule (plugin.py), run for real: a hostile test made to skip (by a plugin of
this test's own that skips it at setup, as a missing useradd would) fails the run under CI=true as
root, and is a plain skip without CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import HANG_S

HERE = Path(__file__).resolve().parent
SKIPPER = """\
import pytest

def pytest_runtest_setup(item):
    pytest.skip("made to skip by the CI rule's test")
"""
VICTIM = "test_check_paths.py"  # (any hostile test: it is skipped before its body runs)


def _run(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    tmp_path.mkdir()
    (tmp_path / "ci_rule_skipper.py").write_text(SKIPPER)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "ci_rule_skipper",
            "-p",
            "no:xdist",
            f"--basetemp={tmp_path / 'bt'}",
            "-rA",
            str(HERE / VICTIM),
        ],
        capture_output=True,
        text=True,
        cwd=HERE.parents[1],
        env=env,
        timeout=HANG_S,
        check=False,
    )


def test_a_skipping_hostile_test_fails_under_ci_as_root_and_only_then(attacker, tmp_path):
    under_ci = _run(tmp_path / "ci", "true")
    print(f"CI=true: exit {under_ci.returncode}; {under_ci.stdout.strip().splitlines()[-1:]}")
    assert under_ci.returncode == 1, under_ci.stdout + under_ci.stderr
    assert "a hostile (root) test skipped under CI=true as root" in under_ci.stdout, under_ci.stdout
    last = under_ci.stdout.strip().splitlines()[-1]  # (a skip at setup turned failed counts as an error)
    assert ("1 failed" in last or "1 error" in last) and "skipped" not in last, under_ci.stdout
    plain = _run(tmp_path / "plain", None)
    assert plain.returncode == 0 and "1 skipped" in plain.stdout, plain.stdout + plain.stderr
