"""Whom and with what root runs a user's code (issue 46, rows 2 and 3; io/runas): the user's own
primary group, never the group a file was left on (`chown -R user` keeps root's, gid 0), and none of
root's environment but the allow-list: no token reaches the user's code, nor check's npm."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
from pathlib import Path

import pytest
from hostile_support import shared_log
from realsenpi import senpi_guard

from senpi_guard.demo import sample
from senpi_guard.io import runas

TOOLS = "dist/core/extensions/builtin/claude-sdk-oauth/tools.js"  # (the dist target imports it)
RUNNER = "dist/core/extensions/runner.js"  # (senpi's own ExtensionRunner: the extension replay's host)
TOKENS = {"NPM_TOKEN": "secret-xyz", "SOMETHING_TOKEN": "secret-abc", "npm_config__authToken": "secret-npm"}
# what the user's code notes each time it runs: who, whether it could read root's file, what it was given
PROBE = """\
import * as sgProbeFs from "node:fs";
const sgTry = (read) => { try { return read(); } catch (error) { return error.code ?? String(error); } };
sgProbeFs.appendFileSync(LOG, JSON.stringify({
    uid: process.getuid(),
    gid: process.getgid(),
    groups: process.getgroups(),
    secret: sgTry(() => sgProbeFs.readFileSync(SECRET, "utf8")),
    env: { ...process.env },
    environ: sgTry(() => sgProbeFs.readFileSync("/proc/self/environ", "latin1")),
}) + "\\n");
"""


def probe(log: Path, secret: Path) -> str:
    """PROBE with its paths written in (root's environment does not reach the code it runs in)."""
    return PROBE.replace("LOG", json.dumps(str(log)), 1).replace("SECRET", json.dumps(str(secret)), 1)


def runs_seen(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line]


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run-as-tarball")
    sample.write_sample_package(out / "src", 2, fillers=0)
    return sample.npm_pack(out / "src", out)


@pytest.fixture
def secret(open_dir) -> Path:
    """root:root 0640: root and root's group may read it, no one else."""
    path = open_dir / "roots-secret"
    path.write_text("root's secret")
    os.chown(path, 0, 0)
    path.chmod(0o640)
    return path


def _probed_install(tarball: Path, prefix: Path, log: Path, secret: Path) -> Path:
    pkg = sample.npm_install_global(tarball, prefix)
    for rel in (TOOLS, RUNNER):
        (pkg / rel).write_text(probe(log, secret) + (pkg / rel).read_text())
    return pkg


def test_a_tree_chowned_to_the_user_alone_replays_with_the_users_group_not_roots(attacker, tarball, open_dir, secret):
    """Row 2: `chown -R user` leaves every file on root's group (gid 0); root's replays of it (the
    dist patch's and the extension's) run with the user's own primary group, and cannot read
    root's group-readable file."""
    log = shared_log(open_dir, "probe")
    prefix = open_dir / "prefix"
    pkg = _probed_install(tarball, prefix, log, secret)
    subprocess.run(["chown", "-R", attacker.pw_name, str(prefix)], check=True)  # (the group stays root's)
    assert pkg.joinpath(TOOLS).stat().st_gid == 0
    done = senpi_guard("verify", "--fresh", "--root", pkg)
    seen = runs_seen(log)
    assert len(seen) >= 2, f"the user's code did not run in both replays: {done.stdout}{done.stderr}"
    who = {(run["uid"], run["gid"], tuple(run["groups"]), run["secret"]) for run in seen}
    assert who == {(attacker.pw_uid, attacker.pw_gid, (attacker.pw_gid,), "EACCES")}, who


def _unknown_uid() -> int:
    for uid in range(4242, 1 << 20):
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    raise AssertionError("no free uid")


def test_check_of_a_folder_of_a_uid_the_user_database_lacks_runs_as_nobody(open_dir, secret, attacker):
    """Row 2, through `check`: a folder of a uid with no passwd entry (a host's uid on a bind
    mount), on root's group: copied and replayed as nobody:nogroup, never as that uid with gid 0."""
    log = shared_log(open_dir, "probe")
    folder = open_dir / "release"
    sample.write_sample_package(folder, 2, fillers=0)
    (folder / TOOLS).write_text(probe(log, secret) + (folder / TOOLS).read_text())
    subprocess.run(["chown", "-R", str(_unknown_uid()), str(folder)], check=True)
    done = senpi_guard("check", folder)
    assert done.returncode == 0 and "patchable" in done.stdout, done.stdout + done.stderr
    nobody = runas.nobody()
    who = {(run["uid"], run["gid"], run["secret"]) for run in runs_seen(log)}
    assert who == {(nobody.uid, nobody.gid, "EACCES")}, who


def test_a_token_in_roots_environment_never_reaches_the_users_code(attacker, tarball, open_dir, secret):
    """Row 3: root runs with tokens in its environment; the user's code in both replays sees only
    the allow-list (process.env and its /proc/<pid>/environ alike)."""
    log = shared_log(open_dir, "probe")
    prefix = open_dir / "prefix"
    pkg = _probed_install(tarball, prefix, log, secret)
    subprocess.run(["chown", "-R", f"{attacker.pw_name}:{attacker.pw_gid}", str(prefix)], check=True)
    done = senpi_guard("verify", "--fresh", "--root", pkg, env={**TOKENS, "SENPI_GUARD_UNRELATED": "root's"})
    seen = runs_seen(log)
    assert len(seen) >= 2, f"the user's code did not run in both replays: {done.stdout}{done.stderr}"
    for run in seen:
        assert "secret-" not in run["environ"] and "root's" not in run["environ"], run["environ"]
        names = set(run["env"])
        allowed = {name for name in names if name in runas.PASSED or name.startswith(runas.PASSED_PREFIXES)}
        assert names == allowed and "PATH" in names, names


def test_check_of_roots_own_release_gives_its_code_no_token(attacker, open_dir, secret, tmp_path):
    """Row 3, through `check` of root's own tarball (replayed as nobody)."""
    log = shared_log(open_dir, "probe")
    src = tmp_path / "src"
    sample.write_sample_package(src, 2, fillers=0)
    (src / TOOLS).write_text(probe(log, secret) + (src / TOOLS).read_text())
    roots = sample.npm_pack(src, tmp_path / "pack")
    done = senpi_guard("check", roots, env=TOKENS)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = runs_seen(log)
    assert seen and all("secret-" not in run["environ"] for run in seen), seen
    assert {run["uid"] for run in seen} == {runas.nobody().uid}
