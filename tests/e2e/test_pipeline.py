"""One pipeline for both layers and every patch: verify proves both layers, every patch reports on
every install, and an unexpected error in one install is that install's error (the others go on)."""

from __future__ import annotations

import json

from conftest import run_cli


def test_verify_json_reports_both_layers_and_every_patch(npm_install, capsys):
    pkg = npm_install(3)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    code, out, err = run_cli(capsys, "verify", "--root", pkg, "--json")
    assert code == 0, err
    doc = json.loads(out)
    by_patch = {row["patch"]: row for row in doc["installs"]}
    assert by_patch["directive-dedupe"]["verification"]["ok"] and by_patch["directive-dedupe"]["state"] == "patched"
    assert by_patch["hand-fix-hooks"]["state"] == "clean" and by_patch["hand-fix-hooks"]["ok"]
    (layer,) = doc["extension"]
    assert layer["state"] == "installed" and layer["ok"] and layer["verification"]["ok"]
    assert layer["verification"]["checks"] >= 30 and layer["verification"]["host"] in ("senpi", "minimal")


def test_an_unexpected_error_in_one_install_is_its_own(npm_install, capsys, monkeypatch):
    first, second = npm_install(2), npm_install(2)
    from senpi_guard.layers import dist

    real = dist.Reconciler._patch

    def broken_for_the_first(self, insp, start, dry_run):
        if insp.install.package_dir == first:
            raise ZeroDivisionError("a bug")
        return real(self, insp, start, dry_run)

    monkeypatch.setattr(dist.Reconciler, "_patch", broken_for_the_first)
    code, out, err = run_cli(capsys, "apply", "--root", first, "--root", second, "--json")
    rows = {(r["package_dir"], r["patch"]): r for r in json.loads(out)["installs"]}
    assert code == 1 and "Traceback" not in out + err  # exit 1, not 3: one install failed, not the run
    broken = rows[(str(first), "directive-dedupe")]
    assert not broken["ok"] and "unexpected error: ZeroDivisionError: a bug" in broken["detail"]
    assert "crash.log" in broken["detail"]
    assert rows[(str(second), "directive-dedupe")]["state"] == "patched"  # the next install went on
