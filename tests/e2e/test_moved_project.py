"""A project whose agent dir `apply --here` remembered, moved (or removed) since: senpi no longer
uses that folder, so nothing is written there again and no install is judged by it; `apply`
forgets it and says so (measured before: status said "extension absent, run apply", and apply
made the old project's `.senpi/agent/extensions` anew at the old path)."""

from __future__ import annotations

import json
import shutil

from conftest import run_cli

from senpi_guard.demo import sample


def test_a_moved_project_is_forgotten_not_made_anew(tmp_path, capsys, monkeypatch, env):
    monkeypatch.delenv("SENPI_CODING_AGENT_DIR")  # (senpi's default: ~/.senpi/agent, and a project's)
    pkg = tmp_path / "senpi"
    sample.write_sample_package(pkg, 2, fillers=3)
    project = env / "home" / "code" / "proj"
    (project / ".senpi" / "agent").mkdir(parents=True)
    monkeypatch.chdir(project)
    assert run_cli(capsys, "apply", "--root", pkg, "--here")[0] == 0
    monkeypatch.chdir(env)
    moved = env / "home" / "code" / "proj-renamed"
    shutil.move(project, moved)
    assert (moved / ".senpi" / "agent" / "extensions" / "senpi-guard-directive-dedupe.js").is_file()

    code, out, err = run_cli(capsys, "paths")
    assert f"{project / '.senpi' / 'agent'}  (gone: moved or removed; `apply` forgets it)" in out, out
    code, out, err = run_cli(capsys, "status", "--root", pkg, "--json")
    (row,) = json.loads(out)["installs"]
    assert code == 0 and row["as_wanted"], out + err
    code, out, err = run_cli(capsys, "apply", "--root", pkg, "--dry-run")
    assert code == 0 and f"would forget: the project agent dir {project / '.senpi' / 'agent'}" in out, out
    code, out, err = run_cli(capsys, "apply", "--root", pkg)
    assert code == 0 and f"forgotten: the project agent dir {project / '.senpi' / 'agent'}" in out, out + err
    assert not project.exists()
    assert json.loads(run_cli(capsys, "paths", "--json")[1])["project_agent_dirs"] == []
    code, out, err = run_cli(capsys, "apply", "--root", pkg)
    assert code == 0 and "forgotten" not in out and not project.exists()
