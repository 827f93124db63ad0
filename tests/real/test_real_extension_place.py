"""Where the extension goes, on real builds: each install's own agent-dir rule (read from its
dist/config.js), two installs looking in two places, `~` expanded, an empty variable meaning "the
default", a project's `.senpi/agent`; the real senpi 2026.8.22-2 then loads it from there (proven
by its effect on what a provider receives). And the extension alone beside upstream's keep-last
dedupe is refused; the extension is proven through the real install's own loader and runner."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import write_user_config
from realsenpi import RealSenpi, senpi_guard

from senpi_guard.keep import service

pytestmark = pytest.mark.real

NAME = "senpi-guard-directive-dedupe.js"
MARKER = "[ultrawork-mode: unchanged, see the earlier copy; it still applies]"


@pytest.fixture
def home(tmp_path, monkeypatch, full_senpi):
    """A user's own HOME, with no agent-dir variable set."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    for name in ("SENPI_CODING_AGENT_DIR", "PI_CODING_AGENT_DIR", "SENPI_BRAND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    yield folder
    senpi_guard("revert", "--root", full_senpi.package_dir)


def status_rows(*roots: Path, cwd: Path | None = None) -> dict[str, dict]:
    result = senpi_guard("status", "--json", *[a for r in roots for a in ("--root", r)], cwd=cwd)
    return {row["version"]: row for row in json.loads(result.stdout)["installs"]}


def loads_it(full_senpi, root: Path, cwd: Path, env: dict[str, str]) -> bool:
    """Whether the real senpi, started in `cwd` with `env`, sends one copy of a repeated directive
    (our extension loaded) rather than two."""
    user = RealSenpi(full_senpi, root, None, cwd, extra_env=env)
    for prompt in ("ulw one", "ulw two"):
        user.prompt(prompt, plugins=("directive_prepend.js",))
    last = user.recorded_calls()[-1]
    texts = [t for m in last["messages"] for t in m["texts"]]
    return sum(MARKER in t for t in texts) == 1


def test_each_install_gets_the_agent_dir_it_really_uses(full_senpi, dist_only, home, tmp_path, monkeypatch):
    old = dist_only("2026.8.9")  # reads SENPI_CODING_AGENT_DIR only
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~/pi-agent")  # 2026.8.22-2 reads it, `~` expanded
    work = tmp_path / "work"
    work.mkdir()
    result = senpi_guard("apply", "--root", old, "--root", full_senpi.package_dir, "--json", cwd=work)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (home / ".senpi" / "agent" / "extensions" / NAME).is_file(), result.stdout  # 2026.8.9: the default
    assert (home / "pi-agent" / "extensions" / NAME).is_file()  # 2026.8.22-2: PI_…, under HOME
    assert not (work / "~").exists()
    rows = status_rows(old, full_senpi.package_dir, cwd=work)
    assert rows["2026.8.9"]["extension"]["agent_dir"] == str(home / ".senpi" / "agent")
    assert (rows["2026.8.22-2"]["extension"]["agent_dir"], rows["2026.8.22-2"]["extension"]["how"]) == (
        str(home / "pi-agent"),
        "PI_CODING_AGENT_DIR",
    )
    assert all(r["extension"]["state"] == "installed" for r in rows.values())
    # the real senpi, started as the user starts it, loads it from there
    assert loads_it(full_senpi, tmp_path / "run1", work, {"HOME": str(home), "PI_CODING_AGENT_DIR": "~/pi-agent"})
    # an empty SENPI_CODING_AGENT_DIR is defined: 2026.8.22-2 uses the default and ignores PI_…
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", "")
    rows = status_rows(full_senpi.package_dir, cwd=work)
    assert rows["2026.8.22-2"]["extension"]["agent_dir"] == str(home / ".senpi" / "agent")
    # the user service keeps what decides it, the empty value too
    recorded = service.environment(service.SYSTEMD_PATH)
    assert recorded["SENPI_CODING_AGENT_DIR"] == "" and recorded["PI_CODING_AGENT_DIR"] == "~/pi-agent"


def test_a_project_agent_dir_is_shown_and_added_with_here(full_senpi, home, tmp_path):
    project = home / "code" / "proj"
    (project / ".senpi" / "agent").mkdir(parents=True)
    inside = project / "src"
    inside.mkdir()
    assert senpi_guard("apply", "--root", full_senpi.package_dir).returncode == 0
    row = status_rows(full_senpi.package_dir, cwd=inside)["2026.8.22-2"]["extension"]
    assert row["agent_dir"] == str(home / ".senpi" / "agent") and row["state"] == "installed"
    assert row["here"] == {"agent_dir": str(project / ".senpi" / "agent"), "how": "project", "state": "absent"}
    shown = senpi_guard("status", "--root", full_senpi.package_dir, cwd=inside).stdout
    assert "apply --here" in shown
    assert not loads_it(full_senpi, tmp_path / "before", inside, {"HOME": str(home)})  # senpi looks there
    result = senpi_guard("apply", "--root", full_senpi.package_dir, "--here", "--json", cwd=inside)
    assert result.returncode == 0, result.stdout
    assert (project / ".senpi" / "agent" / "extensions" / NAME).is_file()
    assert loads_it(full_senpi, tmp_path / "after", inside, {"HOME": str(home)})
    # remembered: revert (from anywhere) takes it out of the project too
    assert senpi_guard("revert", "--root", full_senpi.package_dir).returncode == 0
    assert not (project / ".senpi" / "agent" / "extensions" / NAME).exists()


def test_the_extension_alone_is_refused_beside_upstreams_keep_last(full_senpi, dist_only, home, isolated_dirs):
    write_user_config(isolated_dirs, 'layers = ["extension"]\n')
    modern = senpi_guard("apply", "--root", full_senpi.package_dir, "--json")
    (layer,) = json.loads(modern.stdout)["extension"]
    assert modern.returncode == 1 and not layer["ok"] and "keep-last" in layer["detail"]
    assert not (home / ".senpi" / "agent" / "extensions" / NAME).exists()
    older = dist_only("2026.8.1")  # no keep-last of its own: the extension alone is safe there
    result = senpi_guard("apply", "--root", older, "--json")
    (layer,) = json.loads(result.stdout)["extension"]
    assert result.returncode == 0 and layer["state"] == "installed"
    # upstream_dedupe = "defer" leaves 2026.8.4-2+ to senpi's own dedupe: the extension is left out there
    write_user_config(isolated_dirs, 'upstream_dedupe = "defer"\n')
    deferred = senpi_guard("apply", "--root", full_senpi.package_dir, "--json")
    assert deferred.returncode == 0, deferred.stdout
    (layer,) = json.loads(deferred.stdout)["extension"]
    assert layer["ok"] and "left out" in layer["detail"]
    assert not (home / ".senpi" / "agent" / "extensions" / NAME).exists()  # (taken out again)


def test_the_extension_is_proven_through_the_real_runner(full_senpi, home):
    result = senpi_guard("apply", "--root", full_senpi.package_dir, "--json")
    (layer,) = json.loads(result.stdout)["extension"]
    assert result.returncode == 0 and layer["state"] == "installed"
    assert "through senpi's own extension runner" in layer["detail"] and "v24." in layer["detail"]
    assert layer["checks"] >= 40
    assert os.environ["SENPI_GUARD_NODE"].endswith("node")
