"""Root over files a second real user controls (issue 46, rows 5 and 6): a FIFO the user plants as
their agent dir's settings.json, as a package its `packages` list names, as that package's
package.json, or as their senpi's own package.json. Nothing ever writes to it: a read that opens it
waits forever. Root's `status`, `apply` and watcher refuse it in one line naming it, and still do
every other install's work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SHAPE_REL, patched, wait_for

HANG = 120  # (seconds: a ceiling only a read waiting on the FIFO reaches)
PLANTS = ("settings", "package-file", "package-folder")


def give(user, *paths: Path) -> None:
    for root in paths:
        for path in [root, *root.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)


@pytest.fixture
def users_senpi(npm_install, attacker, open_dir) -> Path:
    """A senpi the attacker owns, in a prefix of theirs."""
    pkg = npm_install(2, prefix=open_dir / "user-prefix")
    give(attacker, open_dir / "user-prefix")
    return pkg


@pytest.fixture
def users_agent(attacker, open_dir, monkeypatch) -> Path:
    """The attacker's agent dir, the one root's runs use."""
    agent = open_dir / "user-home" / ".senpi" / "agent"
    agent.mkdir(parents=True)
    give(attacker, open_dir / "user-home")
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(agent))
    return agent


def plant(attacker, agent: Path, where: str) -> Path:
    """The attacker's FIFO where senpi-guard reads their settings (`where`); returns it."""
    settings = agent / "settings.json"
    if where == "settings":
        fifo = settings
    else:
        entry = "./pkg.js" if where == "package-file" else "./pkg"
        settings.write_text(json.dumps({"packages": [entry]}))
        if where == "package-folder":
            (agent / "pkg").mkdir()
        fifo = agent / ("pkg.js" if where == "package-file" else "pkg/package.json")
    os.mkfifo(fifo)
    give(attacker, agent)
    return fifo


def run(*args: str | Path) -> tuple[int, str]:
    """senpi-guard as root, in a process group of its own; one still running at HANG fails the test."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "senpi_guard", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        pytest.fail(f"root's senpi-guard {' '.join(map(str, args))} still waited after {HANG}s (on the FIFO)")
    return proc.returncode, out


@pytest.mark.parametrize("where", PLANTS)
def test_a_fifo_in_a_users_settings_never_blocks_roots_status_or_apply(
    users_senpi, users_agent, npm_install, attacker, where
):
    fifo = plant(attacker, users_agent, where)
    roots = npm_install(2)
    code, out = run("status", "--root", users_senpi, "--root", roots)
    assert code != 0 and "Traceback" not in out, out
    named = [line for line in out.splitlines() if str(fifo) in line]
    assert named and "named pipe (FIFO), not a regular file" in named[0], out
    code, out = run("apply", "--root", users_senpi, "--root", roots)
    assert code != 0 and "Traceback" not in out and any(str(fifo) in line for line in out.splitlines()), out
    assert patched(users_senpi / SHAPE_REL[2]) and patched(roots / SHAPE_REL[2]), out  # (the rest was done)


def test_a_fifo_as_a_users_package_json_never_blocks_roots_status_or_apply(users_senpi, npm_install, attacker):
    manifest = users_senpi / "package.json"
    manifest.unlink()
    os.mkfifo(manifest)
    give(attacker, manifest)
    roots = npm_install(2)
    for command in ("status", "apply"):
        code, out = run(command, "--root", users_senpi, "--root", roots)
        assert code == 1 and "Traceback" not in out, out
        named = [line for line in out.splitlines() if str(manifest) in line]
        assert named and "named pipe (FIFO)" in named[0], out
    assert patched(roots / SHAPE_REL[2]) and not patched(users_senpi / SHAPE_REL[2])


@pytest.mark.parametrize("where", ["settings", "manifest"])
def test_a_fifo_never_freezes_roots_watcher(users_senpi, users_agent, npm_install, attacker, watch, where):
    """The watcher over the user's install and root's own: the FIFO is met in its start-up round;
    root's install is still patched then, and again after it is unpatched; SIGTERM stops it."""
    roots = npm_install(2)
    if where == "settings":
        plant(attacker, users_agent, "settings")
    else:
        (users_senpi / "package.json").unlink()
        os.mkfifo(users_senpi / "package.json")
        give(attacker, users_senpi)
    target = roots / SHAPE_REL[2]
    original = target.read_bytes()
    watcher = watch("--root", users_senpi, "--root", roots, "--rescan-interval", "600")
    wait_for(lambda: patched(target), timeout=HANG, what="root's own install patched in the start-up round")
    if where == "settings":
        wait_for(lambda: "named pipe" in watcher.text(), timeout=HANG, what="the FIFO refused in the watcher's log")
    target.write_bytes(original)  # (an event: the round after this one patches it again)
    wait_for(lambda: patched(target), timeout=HANG, what="root's install patched again in a later round")
    assert watcher.stop() < 10 and watcher.proc.returncode == 0, watcher.text()[-3000:]
