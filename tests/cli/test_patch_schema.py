"""Test-only patches (tests/patches/edge/, loaded through $SENPI_GUARD_EXTRA_PATCHES) of shapes the
shipped ones do not have: a payload with nothing to configure needs no config slot, and a fixtures
folder the engine cannot expand is a one-line error naming the patch, with nothing changed."""

from __future__ import annotations

import json

from conftest import REPO, run_cli, tree_digest

from senpi_guard.demo import sample

EDGE = REPO / "tests" / "patches" / "edge"
BRIDGE = "dist/core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js"


def test_a_patch_without_settings_needs_no_config_slot(tmp_path, capsys, isolated_dirs, monkeypatch):
    monkeypatch.setenv("SENPI_GUARD_EXTRA_PATCHES", str(EDGE / "slotless"))
    pkg = tmp_path / "pkg"
    sample.write_sample_package(pkg, 2, fillers=0)
    original = (pkg / BRIDGE).read_bytes()
    code, out, err = run_cli(capsys, "apply", "--root", pkg, "--json")
    assert code == 0, out + err
    (row,) = [r for r in json.loads(out)["installs"] if r["patch"] == "slotless"]
    assert row["state"] == "patched", row
    patched = (pkg / BRIDGE).read_bytes()
    region = patched.split(b"// senpi-guard: begin slotless\n")[1].split(b"// senpi-guard: end slotless")[0]
    assert region == (EDGE / "slotless" / "payload.js").read_bytes()  # written as it is: no literal added
    assert b"return __testSlotless(" in patched
    code, out, err = run_cli(capsys, "revert", "--root", pkg)
    assert code == 0, out + err
    assert (pkg / BRIDGE).read_bytes() == original


def test_a_fixtures_folder_of_an_unknown_shape_is_one_line_naming_the_patch(
    tmp_path, capsys, isolated_dirs, monkeypatch
):
    monkeypatch.setenv("SENPI_GUARD_EXTRA_PATCHES", str(EDGE / "odd-fixtures"))
    pkg = tmp_path / "pkg"
    sample.write_sample_package(pkg, 2, fillers=0)
    before = tree_digest(pkg)
    for command in ("status", "apply"):
        code, out, err = run_cli(capsys, command, "--root", pkg)
        message = (out + err).strip().splitlines()[-1]
        assert code == 1, out + err
        assert "patch odd-fixtures" in message and "turns.json" in message and '"messages"' in message, message
        assert "Traceback" not in out + err and "KeyError" not in out + err
    assert tree_digest(pkg) == before
