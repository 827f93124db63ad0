"""The developer's toolbox agrees with itself: the test tools live in a dependency group (never in a
published extra), uv.lock pins the ruff the pre-commit hook runs and the venv has, and the lock is
current for pyproject.toml when uv is there to say so."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from conftest import HANG_S

ROOT = Path(__file__).resolve().parents[2]


def test_the_test_tools_are_a_dependency_group_not_a_published_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "test" not in project["project"].get("optional-dependencies", {})
    test = project["dependency-groups"]["test"]
    assert any(req.startswith("pytest>=") for req in test) and any(req.startswith("ruff") for req in test)


def test_the_hook_the_lock_and_the_venv_run_one_ruff():
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    locked = next(p["version"] for p in lock["package"] if p["name"] == "ruff")
    hooks = re.findall(r"ruff==([0-9.]+)", (ROOT / ".pre-commit-config.yaml").read_text())
    assert hooks and set(hooks) == {locked}
    # (pip, without the lock, may take a newer patch release of the same minor)
    assert metadata.version("ruff").split(".")[:2] == locked.split(".")[:2]


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not on PATH")
def test_uv_lock_is_current_for_pyproject():
    done = subprocess.run(
        ["uv", "lock", "--check", "--offline"], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S
    )
    assert done.returncode == 0, done.stderr
