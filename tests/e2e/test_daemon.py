import json
import plistlib
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG_S, run_cli, tree_entries, wait_for
from usermanager import user_manager

from senpi_guard.io import store
from senpi_guard.keep import service


def no_user_manager(monkeypatch, tmp_path: Path) -> None:
    """No user service manager reachable, on any machine: `systemctl --user` looks for one in an
    empty runtime folder."""
    runtime = tmp_path / "no-manager"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)


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


def test_without_a_user_manager_install_writes_nothing_and_status_points_at_watch(
    env, npm_install, capsys, isolated_dirs, tmp_path, monkeypatch
):
    npm_install(2, prefix=env / "npm-global")
    no_user_manager(monkeypatch, tmp_path)
    code, out, _ = run_cli(capsys, "status")
    assert (
        out.splitlines()[0] == "watcher: not running (no user service manager here: run `senpi-guard watch` yourself)"
    )
    before = tree_entries(isolated_dirs)
    code, out, err = run_cli(capsys, "daemon", "install")
    assert code == 1 and tree_entries(isolated_dirs) == before  # nothing written, not even a folder
    [line] = err.splitlines()  # what, why, what to do; then the command on a line of its own
    assert line.startswith("senpi-guard: error: no user service manager here (systemctl") and len(line) < 180, err
    assert line.endswith("; nothing written. Run the watcher yourself:"), err
    [command] = out.splitlines()
    argv = shlex.split(command)
    assert argv == service.watch_command(quiet=False) and argv[-1] == "watch" and Path(argv[0]).is_absolute()
    watcher = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:  # the command runs the watcher: status sees it
        wait_for(lambda: (store.Store().running_watcher() or {}).get("pid") == watcher.pid, what="the watcher")
        code, out, _ = run_cli(capsys, "status")
        assert out.startswith(f"watcher: running, pid {watcher.pid}"), out
    finally:
        watcher.terminate()
        assert watcher.wait(timeout=HANG_S) == 0


def test_with_a_user_manager_status_points_at_daemon_install_and_install_starts_it(
    env, npm_install, capsys, isolated_dirs, tmp_path, monkeypatch
):
    npm_install(2, prefix=env / "npm-global")
    with user_manager(monkeypatch, isolated_dirs / "xdg_config_home", tmp_path):
        code, out, _ = run_cli(capsys, "status")
        assert out.splitlines()[0] == "watcher: not running (start it: senpi-guard daemon install)"
        code, out, err = run_cli(capsys, "daemon", "install")
        assert code == 0 and f"enabled and started {service.UNIT_NAME}" in out, err
        wait_for(lambda: store.Store().running_watcher(), what="the service's watcher")
        code, out, _ = run_cli(capsys, "daemon", "status")
        assert code == 0 and "active    active" in out, out
        code, out, _ = run_cli(capsys, "daemon", "uninstall")
        assert code == 0 and out.startswith("removed ")


def test_launchd_agent_from_data(tmp_path):
    # launchctl exists only on macOS; the plist is checked by parsing it back.
    data = plistlib.loads(service.launchd_plist(service.spec(), tmp_path))
    assert data["Label"] == service.LABEL
    assert data["RunAtLoad"] is True and data["KeepAlive"] is True
    assert data["ProgramArguments"][-2:] == ["watch", "--quiet"]
    assert Path(data["ProgramArguments"][0]).is_absolute()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd units are Linux's")
def test_daemon_status_json_reads_back_what_install_recorded(capsys, isolated_dirs, tmp_path, monkeypatch):
    with user_manager(monkeypatch, isolated_dirs / "xdg_config_home", tmp_path):
        code, out, _ = run_cli(capsys, "daemon", "status", "--json")
        doc = json.loads(out)
        assert code == 1 and doc["installed"] is False and doc["command"] == [] and doc["ok"] is False
        assert run_cli(capsys, "daemon", "install")[0] == 0  # (written and started)
        code, out, _ = run_cli(capsys, "daemon", "status", "--json")
        doc = json.loads(out)
        assert doc["installed"] is True and doc["command"][-2:] == ["watch", "--quiet"]
        assert doc["environment"]["PATH"] and doc["unit"].endswith("senpi-guard.service")
        run_cli(capsys, "daemon", "uninstall")
