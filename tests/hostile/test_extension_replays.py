"""The extension layer's replay as root over a user's install gets the dist replay's protections
(issue 26, point 4: one sandbox for both layers): it runs senpi's own extension loader and runner,
which are the user's code, so node runs as that user (never as root) in a folder that user's own
process made in the shared temp folder; SIGTERM removes it, and a kill -9 leaves it for the next run
to sweep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG_S, harness_processes, wait_for
from hostile_support import IN_CREATE, Inotify, shared_log
from realsenpi import senpi_guard

from senpi_guard.demo import sample
from senpi_guard.prove import sandbox

RUNNER = "dist/core/extensions/runner.js"  # (senpi's own ExtensionRunner: the extension replay's host)
# notes who ran it and under which harness (the dist replay's or the extension's)
WHO = """\
import { writeFileSync } from "node:fs";
writeFileSync(LOG, `${process.getuid()} ${process.argv[1].split("/").pop()}\\n`, { flag: "a" });
"""
SLOW = "{ const until = Date.now() + 120000; while (Date.now() < until); }\n"  # (killed long before)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ext-tarball")
    sample.write_sample_package(out / "src", 2, fillers=0)
    return sample.npm_pack(out / "src", out)


def _users_install(tarball: Path, prefix: Path, attacker, planted: str) -> Path:
    """senpi installed in a prefix the user owns, every file theirs, `planted` atop senpi's runner."""
    pkg = sample.npm_install_global(tarball, prefix)
    runner = pkg / RUNNER
    runner.write_text(planted + runner.read_text())
    for path in [prefix, *prefix.rglob("*")]:
        os.chown(path, attacker.pw_uid, attacker.pw_gid, follow_symlinks=False)
    return pkg


@pytest.fixture
def extension_only(open_dir) -> dict[str, str]:
    """The extension layer alone, and a shared temp folder of this test's own (root's, sticky,
    world-writable, as /tmp): what is left in it is swept by this test's runs, not by any other
    senpi-guard on the machine."""
    config = open_dir / "config.toml"
    config.write_text('layers = ["extension"]\n')
    tmp = open_dir / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    return {"SENPI_GUARD_CONFIG": str(config), "TMPDIR": str(tmp)}


def _ran(log: Path) -> set[tuple[int, str]]:
    return {(int(uid), harness) for uid, harness in (line.split() for line in log.read_text().splitlines())}


def test_the_extension_replay_runs_senpis_runner_as_its_owner_never_as_root(
    attacker, tarball, open_dir, extension_only
):
    log = shared_log(open_dir, "who-ran-it")
    pkg = _users_install(tarball, open_dir / "prefix", attacker, WHO.replace("LOG", json.dumps(str(log)), 1))
    env = extension_only
    done = senpi_guard("verify", "--fresh", "--root", pkg, env=env)  # (--fresh: node runs, whatever passed before)
    text = done.stdout + done.stderr
    assert "through senpi's own extension runner" in text, text  # (the host really was loaded)
    assert _ran(log) == {(attacker.pw_uid, "extension_harness.mjs")}, (_ran(log), text)
    log.write_text("")
    senpi_guard("verify", "--fresh", "--allow-foreign-root", "--root", pkg, env=env)
    assert _ran(log) == {(0, "extension_harness.mjs")}  # (only when asked for: the log tells them apart)


def _replaying(pkg: Path, env: dict[str, str]) -> tuple[subprocess.Popen, Path]:
    """`verify` of the extension layer, and its replay folder the moment it is made (inotify on the
    shared temp folder, where a replay for another user goes), once node is replaying in it."""
    tmp = Path(env["TMPDIR"])
    watcher = Inotify()
    watcher.watch(tmp, IN_CREATE)
    proc = subprocess.Popen(
        [sys.executable, "-m", "senpi_guard", "verify", "--fresh", "--root", str(pkg)],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while True:
            names = [n for n in watcher.events() if n.startswith(f"{sandbox.PREFIX}{proc.pid}-ext-")]
            if names:
                break
    finally:
        os.close(watcher.fd)
    wait_for(lambda: harness_processes(proc.pid), what="node replaying the extension")
    return proc, tmp / names[0]


def test_sigterm_removes_a_running_extension_replays_folder_and_a_kill_leaves_it_to_the_next_run(
    attacker, tarball, open_dir, extension_only
):
    slow = _users_install(tarball, open_dir / "slow-prefix", attacker, SLOW)
    proc, folder = _replaying(slow, extension_only)
    assert folder.stat().st_uid == attacker.pw_uid  # (made by the user's own process, not chowned)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=HANG_S)
    print(f"SIGTERM: exit {proc.returncode}, folder left: {folder.exists()}, stderr: {err.strip()[-120:]!r}")
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert not folder.exists(), f"SIGTERM left {folder}"

    proc, folder = _replaying(slow, extension_only)
    nodes = harness_processes(proc.pid)
    proc.kill()
    proc.communicate()
    for node in nodes:  # (its node outlives it: the slow runner would spin on)
        os.kill(node, signal.SIGKILL)
    assert folder.exists()  # (a kill -9 cannot clean up after itself…)
    quick = _users_install(tarball, open_dir / "quick-prefix", attacker, "")
    done = senpi_guard("verify", "--root", quick, env=extension_only)
    assert "through senpi's own extension runner" in done.stdout + done.stderr, done.stdout + done.stderr
    assert not folder.exists(), f"the next extension replay did not sweep {folder}"  # (…the next run does)
