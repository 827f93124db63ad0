"""Test-only patches (tests/patches/edge/, loaded through $SENPI_GUARD_EXTRA_PATCHES) of shapes the
shipped ones do not have: a payload with nothing to configure needs no config slot, and a fixtures
folder the engine cannot expand is a one-line error naming the patch, with nothing changed."""

from __future__ import annotations

import json
import shutil

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


def test_a_patch_reads_its_fixtures_in_the_format_it_names(tmp_path, capsys, isolated_dirs, monkeypatch):
    """`fixtures_format = "context"`: the contexts reach the patch's checks as written, through the
    real node replay (nothing of directive-dedupe's template format is applied to them)."""
    monkeypatch.setenv("SENPI_GUARD_EXTRA_PATCHES", str(EDGE / "plain-fixtures"))
    pkg = tmp_path / "pkg"
    sample.write_sample_package(pkg, 2, fillers=0)
    _code, out, _err = run_cli(capsys, "verify", "--root", pkg, "--json")  # (the others are unpatched)
    (row,) = [r for r in json.loads(out)["installs"] if r["patch"] == "plain-fixtures"]
    assert row["verification"]["ok"], row
    assert row["verification"]["checks"] == 2, row  # has-fixtures + the one fixture's same-blocks
    written = json.loads((EDGE / "plain-fixtures" / "fixtures" / "two-users.json").read_text())
    assert "{{" not in json.dumps(written) and "directives" not in written


def _copy_of(tmp_path, name: str, edit) -> str:
    folder = tmp_path / "patches" / name
    shutil.copytree(EDGE / name, folder)
    toml = folder / "patch.toml"
    toml.write_text(edit(toml.read_text()))
    return str(folder)


def test_fixtures_without_a_format_or_of_an_unknown_one_are_one_line(tmp_path, capsys, isolated_dirs, monkeypatch):
    pkg = tmp_path / "pkg"
    sample.write_sample_package(pkg, 2, fillers=0)
    before = tree_digest(pkg)
    cases = {
        "no format named": (lambda t: t.replace('fixtures_format = "context"\n', ""), "names no fixtures_format"),
        "an unknown format": (
            lambda t: t.replace('fixtures_format = "context"', 'fixtures_format = "yaml"'),
            "is not a fixture format (known: context, context-template)",
        ),
    }
    for case, (edit, says) in cases.items():
        monkeypatch.setenv(
            "SENPI_GUARD_EXTRA_PATCHES", _copy_of(tmp_path / case.replace(" ", "-"), "plain-fixtures", edit)
        )
        code, out, err = run_cli(capsys, "apply", "--root", pkg)
        message = (out + err).strip().splitlines()[-1]
        assert code == 1 and "patch plain-fixtures" in message and says in message, (case, out + err)
        assert "Traceback" not in out + err
    assert tree_digest(pkg) == before
