"""The daemon as a service manager starts it: `env -i` with only what the unit (or the launchd
plist) records, on a machine where node and npm are reachable only through an nvm-style prefix.

The system's own node and npm are hidden inside a private mount namespace (`unshare -m`, then a
bind mount of /dev/null over them), so nothing but the recorded environment can find a node."""

from __future__ import annotations

import json
import os
import plistlib
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HANG_S, SHAPE_REL, patched, run_cli, wait_for
from usermanager import user_manager

from senpi_guard.keep import service
from senpi_guard.prove import nodes

NVM_VERSION = "v20.99.0"


def _can_hide_system_node() -> str | None:
    if os.geteuid() != 0:
        return "hiding the system node needs root (a private mount namespace)"
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", "mount --bind /dev/null /bin/true"],
        capture_output=True,
        text=True,
    )
    return None if probe.returncode == 0 else f"no private mount namespace here: {probe.stderr.strip()}"


def system_tools() -> list[str]:
    """Every node/npm this machine has outside the nvm prefix (real paths, to hide them)."""
    found = set()
    for name in ("node", "npm", "nodejs"):
        for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
            path = Path(folder) / name
            if path.exists():
                found.add(os.path.realpath(path))
                found.add(str(path))
    return sorted(found)


def run_bare(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """argv under env -i with exactly `env`, the system node and npm hidden."""
    hide = "; ".join(f"mount --bind /dev/null {p}" for p in system_tools())
    script = f'{hide}; exec env -i "$@"'
    assignments = [f"{k}={v}" for k, v in env.items()]
    return subprocess.Popen(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *assignments, *argv],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )


@pytest.fixture
def nvm_machine(tmp_path, monkeypatch, isolated_dirs):
    """HOME with an nvm-style node (a copy of this machine's node) and npm; nothing else on PATH."""
    why = _can_hide_system_node()
    if why:
        pytest.skip(why)
    home = tmp_path / "home"
    prefix = home / ".nvm" / "versions" / "node" / NVM_VERSION
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib" / "node_modules").mkdir(parents=True)
    shutil.copy2(os.path.realpath(shutil.which("node")), prefix / "bin" / "node")
    npm_home = Path(os.path.realpath(shutil.which("npm"))).parents[1]
    shutil.copytree(npm_home, prefix / "lib" / "node_modules" / "npm", symlinks=True)
    (prefix / "bin" / "npm").symlink_to("../lib/node_modules/npm/bin/npm-cli.js")
    for var in ("NPM_CONFIG_PREFIX", "npm_config_prefix", "SENPI_GUARD_NODE", nodes.RECORDED):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("NVM_DIR", str(home / ".nvm"))
    monkeypatch.setenv("PATH", f"{prefix / 'bin'}:/usr/bin:/bin")
    return prefix


def nvm_npm_install(prefix: Path, tarball: Path) -> None:
    """What `senpi update` runs, through the nvm prefix's own npm and node."""
    subprocess.run(
        [str(prefix / "bin" / "npm"), "install", "-g", "--ignore-scripts", "--no-audit", "--no-fund", str(tarball)],
        check=True,
        capture_output=True,
        env={**os.environ, "PATH": f"{prefix / 'bin'}:/usr/bin:/bin"},
    )


def _exercise(argv: list[str], env: dict[str, str], prefix: Path, tarballs, tmp_path) -> float:
    """Start the service command bare; a real npm update through the nvm prefix must be patched
    again by its file events: rescans are a day apart here, longer than any wait of the tests (a
    watcher that missed the events fails on the ceiling). Returns the latency."""
    pkg = prefix / "lib" / "node_modules" / "@code-yeongyu" / "senpi"
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "senpi-guard" / "config.toml"  # (the service's: passed on)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("rescan_interval = 86400\n")
    nvm_npm_install(prefix, tarballs[1])
    assert not patched(pkg / SHAPE_REL[1])
    log = tmp_path / f"service-{len(list(tmp_path.glob('service-*')))}.log"
    proc = run_bare(argv, {**env, "HOME": os.environ["HOME"]}, log)
    try:
        wait_for(lambda: patched(pkg / SHAPE_REL[1]), what=f"start-up patch; log: {log}")
        nvm_npm_install(prefix, tarballs[2])
        exited = time.monotonic()
        wait_for(lambda: patched(pkg / SHAPE_REL[2]), what="re-patch after the update")
        latency = time.monotonic() - exited
        status = run_bare(
            [*argv[:-2], "status", "--json"], {**env, "HOME": os.environ["HOME"]}, tmp_path / "status.json"
        )
        status.wait(timeout=HANG_S)
        (row,) = json.loads((tmp_path / "status.json").read_text())["installs"]
        assert row["state"] == "patched"
        assert row["node"]["path"] == str(prefix / "bin" / "node")
        assert row["node"]["source"] == "the install's own prefix"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=HANG_S)
    assert "node was not found" not in log.read_text()
    print(f"re-patched {latency:.2f}s after npm exited")
    return latency


def test_systemd_unit_runs_bare_with_an_nvm_node(nvm_machine, tarballs, tmp_path, capsys, isolated_dirs, monkeypatch):
    with user_manager(monkeypatch, isolated_dirs / "xdg_config_home", tmp_path):  # (stopped again: run bare below)
        assert run_cli(capsys, "daemon", "install")[0] == 0
    unit = isolated_dirs / "xdg_config_home" / "systemd" / "user" / service.UNIT_NAME
    argv, env = service.read_systemd_unit(unit.read_text())
    assert env[nodes.RECORDED] == str(nvm_machine / "bin" / "node")
    assert env["PATH"].split(":")[0] == str(nvm_machine / "bin")
    assert argv[-2:] == ["watch", "--quiet"]
    _exercise(argv, env, nvm_machine, tarballs, tmp_path)


def test_launchd_plist_runs_bare_with_an_nvm_node(nvm_machine, tarballs, tmp_path):
    plist = plistlib.loads(service.launchd_plist(service.spec(service.LAUNCHD_PATH), tmp_path))
    argv, env = plist["ProgramArguments"], plist["EnvironmentVariables"]
    assert set(service.LAUNCHD_PATH.split(":")) <= set(env["PATH"].split(":"))
    _exercise(argv, env, nvm_machine, tarballs, tmp_path)


def test_without_the_recorded_environment_node_is_not_found(nvm_machine, tmp_path, tarballs):
    """The check can fail: the same command with the manager's bare PATH finds no node."""
    prefix = nvm_machine
    nvm_npm_install(prefix, tarballs[1])
    pkg = prefix / "lib" / "node_modules" / "@code-yeongyu" / "senpi"
    argv = [sys.executable, "-m", "senpi_guard", "verify", "--root", str(pkg)]
    env = {k: os.environ[k] for k in ("HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME")}
    # the install's own prefix still has node: move it aside to see PATH alone
    (prefix / "bin" / "node").rename(prefix / "bin" / "node.aside")
    proc = run_bare(argv, {**env, "PATH": service.SYSTEMD_PATH}, tmp_path / "bare.log")
    assert proc.wait(timeout=HANG_S) == 1
    assert "node was not found on PATH" in (tmp_path / "bare.log").read_text()
