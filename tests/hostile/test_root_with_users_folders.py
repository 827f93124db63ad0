"""Root run with another user's HOME or XDG folders (`sudo -E`, a sudo that keeps HOME): senpi-guard
trusts nothing of theirs (io/made.foreign). Found by a hostile pass: yarn 1, asked `yarn global dir`
as root from the user's HOME, ran the program the user's ~/.yarnrc `yarn-path` named, as root; and
root's uninstall removed a root-owned empty folder the user's ~/.cache/senpi-guard/made-folders.json
named (a FIFO there hung it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import tool

CEILING_S = 120.0  # (a run here takes seconds: only a hang reaches this)


def _users_home(open_dir: Path, attacker) -> Path:
    home = open_dir / "home"
    home.mkdir()
    os.chown(home, attacker.pw_uid, attacker.pw_gid)
    return home


def _theirs(path: Path, attacker) -> None:
    os.chown(path, attacker.pw_uid, attacker.pw_gid)


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "senpi_guard", *args], env=env, capture_output=True, text=True, timeout=CEILING_S
    )


def _env(home: Path, tools: list[str], **more: str) -> dict[str, str]:
    path = [str(Path(t).parent) for t in tools]
    return {"PATH": ":".join([*path, "/usr/bin", "/bin"]), "HOME": str(home), **more}


@pytest.mark.skipif(os.geteuid() != 0, reason="root over another user's home")
def test_a_users_yarnrc_yarn_path_never_runs_as_root(attacker, open_dir):
    home = _users_home(open_dir, attacker)
    ran = open_dir / "yarn-path-ran"
    script = home / "evil-yarn.js"
    script.write_text(
        f"require('fs').writeFileSync({str(ran)!r}, 'uid=' + process.getuid());\nconsole.log('/nowhere/yarn-global');\n"
    )
    rc = home / ".yarnrc"
    rc.write_text(f'yarn-path "{script}"\n')
    for path in (script, rc):
        _theirs(path, attacker)
    env = _env(home, [tool("yarn"), tool("node")])
    done = _run(["status"], env)
    assert "no senpi install found" in done.stderr, done.stderr
    assert not ran.exists(), f"the user's yarn-path program ran as root: {ran.read_text()}"


def _plant_record(folder: Path, victim: Path, attacker, fifo: bool) -> Path:
    """The user's cache folder of senpi-guard's, its made-folders.json naming root's `victim`."""
    cache = folder / "senpi-guard"
    cache.mkdir(parents=True)
    record = cache / "made-folders.json"
    if fifo:
        os.mkfifo(record)
    else:
        record.write_text(f'{{"version": 1, "folders": ["{victim}"]}}')
    for path in (folder, cache, record):
        _theirs(path, attacker)
    return record


@pytest.mark.skipif(os.geteuid() != 0, reason="root over another user's home")
@pytest.mark.parametrize("whose", ["home", "xdg-cache"])
@pytest.mark.parametrize("args", [["uninstall"], ["uninstall", "--dry-run"]])
def test_root_uninstall_never_removes_a_folder_a_users_record_names(attacker, open_dir, tmp_path, whose, args):
    victim = open_dir / "victim-empty-dir"  # (root's: stands in for /run/sshd, /var/empty, a mount point)
    victim.mkdir()
    if whose == "home":  # (sudo -E: HOME the user's, no XDG variables)
        home = _users_home(open_dir, attacker)
        record = _plant_record(home / ".cache", victim, attacker, fifo=False)
        env = _env(home, [tool("node")])
    else:  # (HOME root's own, XDG_CACHE_HOME the user's)
        users = _users_home(open_dir, attacker)
        record = _plant_record(users / "cache", victim, attacker, fifo=False)
        (tmp_path / "home").mkdir()
        env = _env(tmp_path / "home", [tool("node")], XDG_CACHE_HOME=str(users / "cache"))
    done = _run(args, env)
    assert victim.is_dir(), f"root's uninstall removed {victim}: {done.stdout}{done.stderr}"
    said = [line for line in done.stderr.splitlines() if "not to root" in line]
    assert len(said) == 1 and str(home if whose == "home" else record.parent.parent) in said[0], done.stderr
    assert record.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="root over another user's home")
@pytest.mark.parametrize("whose", ["home", "xdg-cache"])
def test_a_fifo_for_the_record_in_a_users_folder_hangs_nothing(attacker, open_dir, tmp_path, whose):
    victim = open_dir / "victim-empty-dir"
    victim.mkdir()
    users = _users_home(open_dir, attacker)
    if whose == "home":
        _plant_record(users / ".cache", victim, attacker, fifo=True)
        env = _env(users, [tool("node")])
    else:
        _plant_record(users / "cache", victim, attacker, fifo=True)
        (tmp_path / "home").mkdir()
        env = _env(tmp_path / "home", [tool("node")], XDG_CACHE_HOME=str(users / "cache"))
    try:
        done = _run(["uninstall", "--dry-run"], env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"uninstall --dry-run hung on the user's FIFO ({CEILING_S:.0f} s)")
    assert done.returncode == 0, done.stderr
    assert any("not to root" in line for line in done.stderr.splitlines()), done.stderr
