"""status and verify judge every wanted layer the same way (state, exit code, next step), status
from inspection alone; and verify over a layer that is not installed says so in one line: what is
there, what apply would write, and that the replay proved it. Run as a user runs them (the console
script in a subprocess) on sample packages written in place."""

from __future__ import annotations

import json

import pytest
from conftest import field, run_console

from senpi_guard.demo import sample

EXT = "senpi-guard-directive-dedupe.js"


@pytest.fixture
def pkg(tmp_path):
    dest = tmp_path / "senpi"
    sample.write_sample_package(dest, 2, fillers=3)
    return dest


def steps_of(out: str) -> list[str]:
    return [line.split(None, 1)[1] for line in out.splitlines() if line.strip().startswith("next ")]


def test_status_and_verify_agree_when_the_extension_is_missing(pkg, isolated_dirs):
    assert run_console("apply", "--root", pkg).returncode == 0
    (isolated_dirs / "agent" / "extensions" / EXT).unlink()  # (the default layers: dist and extension)

    status, verify = run_console("status", "--root", pkg), run_console("verify", "--root", pkg)
    assert status.returncode == verify.returncode == 1
    assert "  state     patched; extension absent" in status.stdout
    assert (
        steps_of(status.stdout) == steps_of(verify.stdout) == ["run `senpi-guard apply` (installs the extension layer)"]
    )
    doc = json.loads(run_console("status", "--json", "--root", pkg).stdout)
    (row,) = doc["installs"]
    assert row["state"] == "patched" and not row["as_wanted"] and row["next"] == steps_of(status.stdout)[0]
    (layer,) = json.loads(run_console("verify", "--json", "--root", pkg).stdout)["extension"]
    assert layer["state"] == "absent" and not layer["ok"] and layer["next"] == row["next"]

    assert run_console("apply", "--root", pkg).returncode == 0  # (and once it is back, both say so)
    status, verify = run_console("status", "--root", pkg), run_console("verify", "--root", pkg)
    assert status.returncode == verify.returncode == 0
    assert steps_of(status.stdout) == steps_of(verify.stdout) == []


def test_status_and_verify_agree_when_the_config_leaves_an_install_to_upstream(tmp_path, isolated_dirs):
    pkg3 = tmp_path / "senpi3"
    sample.write_sample_package(pkg3, 3, fillers=3)
    config = isolated_dirs / "defer.toml"
    config.write_text('upstream_dedupe = "defer"\n')
    env = {"SENPI_GUARD_CONFIG": str(config)}
    assert run_console("apply", "--root", pkg3, env=env).returncode == 0
    status, verify = run_console("status", "--root", pkg3, env=env), run_console("verify", "--root", pkg3, env=env)
    assert status.returncode == verify.returncode == 0, verify.stdout
    assert steps_of(status.stdout) == steps_of(verify.stdout) == []


def test_verify_of_an_unpatched_install_says_it_in_one_coherent_line(pkg):
    verify = run_console("verify", "--root", pkg)
    assert verify.returncode == 1  # (not patched: not as wanted)
    block = verify.stdout.split("[hand-fix-hooks]")[0]
    state = field(block, "state")
    assert state.startswith("unpatched: not installed; the patch apply would write passed ")
    assert " checks (node v" in state and "FAILED" not in verify.stdout and "error:" not in verify.stdout
    extension = verify.stdout.split("\nextension", 1)[1]
    assert field(extension, "state").startswith("absent: not installed; the extension apply would write passed ")
    assert steps_of(verify.stdout) == [
        "run `senpi-guard apply`",
        "run `senpi-guard apply` (installs the extension layer)",
    ]
