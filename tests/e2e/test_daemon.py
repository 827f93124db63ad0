import json
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from senpi_guard.keep import service


def analyze(unit: Path, runtime: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    runtime.mkdir(mode=0o700, exist_ok=True)
    return subprocess.run(
        ["systemd-analyze", "verify", "--user", str(unit)],
        capture_output=True,
        text=True,
        env={"XDG_RUNTIME_DIR": str(runtime), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_systemd_unit_is_valid_and_runs_this_senpi_guard(tmp_path):
    text = service.systemd_unit(service.spec())
    argv, env = service.read_systemd_unit(text)
    program = argv[0]
    assert Path(program).is_absolute() and Path(program).exists()
    assert argv[-2:] == ["watch", "--quiet"] and "Restart=on-failure" in text and "WantedBy=default.target" in text
    assert Path(env["SENPI_GUARD_RECORDED_NODE"]).is_absolute()
    assert str(Path(env["SENPI_GUARD_RECORDED_NODE"]).parent) in env["PATH"].split(":")
    unit = tmp_path / "senpi-guard.service"
    unit.write_text(text)
    result = analyze(unit, tmp_path / "run")
    assert result.returncode == 0, result.stderr
    broken = tmp_path / "broken.service"
    broken.write_text(text.replace(program, "not-an-absolute-program"))
    assert analyze(broken, tmp_path / "run").returncode != 0  # the check can fail


def test_daemon_install_without_user_bus_explains_and_uninstall_cleans(capsys, isolated_dirs):
    if service.systemd_available() is None:
        pytest.skip("this machine has a working systemd user manager")
    code, out, err = run_cli(capsys, "daemon", "install")
    unit = isolated_dirs / "xdg_config_home" / "systemd" / "user" / "senpi-guard.service"
    assert code == 1 and unit.is_file()
    assert len(err.strip().splitlines()) == 1
    assert "your own supervisor" in err and "watch --quiet" in err
    code, out, _ = run_cli(capsys, "daemon", "status")
    assert code == 1 and "installed" in out and "not running" in out
    code, out, _ = run_cli(capsys, "daemon", "uninstall")
    assert code == 0 and not unit.exists()


def test_launchd_agent_from_data(tmp_path):
    # launchctl exists only on macOS; the plist is checked by parsing it back.
    data = plistlib.loads(service.launchd_plist(service.spec(), tmp_path))
    assert data["Label"] == service.LABEL
    assert data["RunAtLoad"] is True and data["KeepAlive"] is True
    assert data["ProgramArguments"][-2:] == ["watch", "--quiet"]
    assert Path(data["ProgramArguments"][0]).is_absolute()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd units are Linux's")
def test_daemon_status_json_reads_back_what_install_recorded(capsys, isolated_dirs):
    code, out, _ = run_cli(capsys, "daemon", "status", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["installed"] is False and doc["command"] == [] and doc["ok"] is False
    run_cli(capsys, "daemon", "install")  # (written, started where a user manager works)
    code, out, _ = run_cli(capsys, "daemon", "status", "--json")
    doc = json.loads(out)
    assert doc["installed"] is True and doc["command"][-2:] == ["watch", "--quiet"]
    assert doc["environment"]["PATH"] and doc["unit"].endswith("senpi-guard.service")
    run_cli(capsys, "daemon", "uninstall")
