"""`status --textfile` on the real dist-only builds (shapes 1, 2, 3, installed with the real npm),
run as a user runs it: every install's state and layers in the metrics file are the --json rows."""

from __future__ import annotations

import json
import stat

import pytest
from prometheus_client.parser import text_string_to_metric_families
from realsenpi import DIST_ONLY, senpi_guard

pytestmark = pytest.mark.real


def test_status_metrics_of_real_builds_are_the_json_rows(dist_only, tmp_path):
    pkgs = {version: dist_only(version) for version in sorted(DIST_ONLY)}
    patched = sorted(DIST_ONLY)[1:]  # (the oldest build is left as installed)
    roots = [arg for version in patched for arg in ("--root", pkgs[version])]
    applied = senpi_guard("apply", *roots)
    assert applied.returncode == 0, applied.stderr + applied.stdout
    every = [arg for pkg in pkgs.values() for arg in ("--root", pkg)]
    folder = tmp_path / "textfile"
    folder.mkdir()
    written = senpi_guard("status", *every, "--textfile", folder)
    assert written.returncode == 1 and written.stdout == f"metrics written to {folder / 'senpi_guard.prom'}\n"
    listed = senpi_guard("status", *every, "--json")
    rows = {row["package_dir"]: row for row in json.loads(listed.stdout)["installs"]}
    target = folder / "senpi_guard.prom"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644 and [p.name for p in folder.iterdir()] == [target.name]
    found = {
        family.name: {tuple(sorted(s.labels.items())): s.value for s in family.samples}
        for family in text_string_to_metric_families(target.read_text())
    }
    states = {
        dict(labels)["install"]: dict(labels)["state"]
        for labels, value in found["senpi_guard_install_state"].items()
        if value == 1
    }
    assert states == {pkg: row["state"] for pkg, row in rows.items()}
    assert sorted(states.values()) == ["patched", "patched", "unpatched"]
    for version, pkg in pkgs.items():
        row = rows[str(pkg)]
        assert (("install", str(pkg)), ("manager", "npm"), ("version", version)) in found["senpi_guard_install_info"]
        for sub in row["patches"]:
            key = (("install", str(pkg)), ("layer", "dist"), ("patch", sub["patch"]))
            assert found["senpi_guard_install_layer_patched"][key] == float(sub["layers"]["dist"] == "patched")
        dedupe = (("install", str(pkg)), ("layer", "dist"), ("patch", "directive-dedupe"))
        assert found["senpi_guard_install_layer_patched"][dedupe] == float(version in patched)
        wanted = found["senpi_guard_install_as_wanted"][(("install", str(pkg)),)]
        assert wanted == float(row["as_wanted"]) == float(version in patched)
        verified = (("install", str(pkg)), ("patch", "directive-dedupe"))
        if version in patched:  # (apply verified it with node)
            assert found["senpi_guard_install_last_verify_ok"][verified] == 1
        else:
            assert verified not in found["senpi_guard_install_last_verify_ok"]
