"""An install shadowed on PATH, or patched with --root where nothing finds it, is still covered:
plain `status` lists, and plain `revert` reverts, every install senpi-guard's state records and every
`senpi` in every PATH folder — not only the first one, which the shell runs. On the real dist-only
2026.8.9 and 2026.8.1, each installed with the real npm into a prefix of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import HANG_S, SHAPE_REL, sha
from realsenpi import SHAPES

from senpi_guard.core.patch import definition

pytestmark = pytest.mark.real

PATCH = definition.load("directive-dedupe")


def console(*args, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """senpi-guard as the user runs it, in that user's environment."""
    return subprocess.run(
        [sys.executable, "-m", "senpi_guard", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        env=env,
        check=False,
    )


def test_status_and_revert_cover_a_shadowed_install_and_a_recorded_one(dist_only, env, tmp_path):
    newer, older = dist_only("2026.8.9", env / "prefix-8.9"), dist_only("2026.8.1", env / "prefix-8.1")
    first_on_path = (env / "prefix-8.9" / "bin", env / "prefix-8.1" / "bin")
    assert all((folder / "senpi").exists() for folder in first_on_path)
    shell = {**os.environ, "PATH": os.pathsep.join([*map(str, first_on_path), os.environ["PATH"]])}
    before = {pkg / SHAPE_REL[SHAPES[v]]: "" for pkg, v in ((newer, "2026.8.9"), (older, "2026.8.1"))}
    before = {path: sha(path) for path in before}

    def listed(env_: dict[str, str]) -> dict[str, str]:
        doc = json.loads(console("status", "--json", env=env_).stdout)
        return {row["version"]: row["state"] for row in doc["installs"]}

    # nothing recorded yet: 2026.8.1, shadowed by 2026.8.9's `senpi`, is found on PATH alone
    assert listed(shell) == {"2026.8.9": "unpatched", "2026.8.1": "unpatched"}

    applied = console("apply", "--root", newer, "--root", older, "--json", env=shell)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert all(sha(p) != digest for p, digest in before.items())  # (both patched)

    # 2026.8.1's `senpi` is shadowed by 2026.8.9's: still listed
    assert listed(shell) == {"2026.8.9": "patched", "2026.8.1": "patched"}
    # 2026.8.1 off PATH altogether: the state records it, so it is still listed
    alone = {**shell, "PATH": os.pathsep.join([str(first_on_path[0]), os.environ["PATH"]])}
    assert listed(alone) == {"2026.8.9": "patched", "2026.8.1": "patched"}

    # plain revert: both get their original bytes back
    reverted = console("revert", "--json", env=alone)
    assert reverted.returncode == 0, reverted.stdout + reverted.stderr
    rows = [r for r in json.loads(reverted.stdout)["installs"] if r["patch"] == PATCH.name]
    assert sorted(r["version"] for r in rows) == ["2026.8.1", "2026.8.9"]
    assert {p: sha(p) for p in before} == before
    assert listed(shell) == {"2026.8.9": "held", "2026.8.1": "held"}
