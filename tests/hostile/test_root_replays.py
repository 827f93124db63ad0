"""`apply` as root never replays as root code someone else could have written (issue 24, point 3),
and whose code it is is judged over senpi and its own dependencies, not every global neighbour
(point 6)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from hostile_support import planted, shared_log, uids_in
from realsenpi import senpi_guard

from senpi_guard.demo import sample
from senpi_guard.io import runas

PROVIDER = "dist/core/extensions/builtin/claude-sdk-oauth"


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hostile-tarball")
    sample.write_sample_package(out / "src", 2, fillers=0)
    return sample.npm_pack(out / "src", out)


def _private(tmp_path: Path) -> Path:
    """A prefix as a 077 umask leaves it: a folder only its owner (root) can enter."""
    tmp_path.chmod(0o700)
    return tmp_path / "private-prefix"


def _install(tarball: Path, prefix: Path) -> Path:
    return sample.npm_install_global(tarball, prefix)


def _world_writable_tools(pkg: Path, log: Path) -> Path:
    tools = pkg / PROVIDER / "tools.js"
    tools.write_text(planted(log) + tools.read_text())
    tools.chmod(0o666)  # (root's file, and anyone can append to it)
    return tools


def test_a_world_writable_module_in_a_root_install_never_runs_as_root(attacker, tarball, open_dir):
    """A root install others can read: the replay runs as nobody, so what anyone appended to the
    world-writable tools.js never runs as uid 0."""
    log = shared_log(open_dir, "who-ran-it")
    pkg = _install(tarball, open_dir / "prefix")
    _world_writable_tools(pkg, log)
    for command in (("apply", "--dry-run"), ("verify", "--fresh")):
        log.write_text("")
        done = senpi_guard(*command, "--root", pkg)
        ran_as = uids_in(log)
        assert ran_as and 0 not in ran_as, f"{command}: the world-writable module ran as uids {ran_as}: {done.stderr}"
        assert ran_as == {runas.nobody()[0]}, ran_as


def test_where_nobody_cannot_read_anyones_code_is_refused_and_status_says_so(attacker, tarball, tmp_path):
    """A 077 install (nobody reads none of it): root would have to replay it itself, so a file
    others can write is refused in one line naming it and the fix, and status reports it."""
    log = shared_log(Path("/tmp"), f"senpi-guard-hostile-log-{os.getpid()}")
    try:
        pkg = _install(tarball, _private(tmp_path))
        tools = _world_writable_tools(pkg, log)
        before = {p: p.read_bytes() for p in pkg.rglob("*.js")}
        done = senpi_guard("apply", "--root", pkg)
        # (one line per layer that would replay it: the dist patch's and the extension's)
        errors = {line.strip() for line in (done.stdout + done.stderr).splitlines() if "chmod go-w" in line}
        assert done.returncode == 1 and len(errors) == 1, done.stdout + done.stderr
        errors = list(errors)
        assert f"{tools} can be changed by users other than root" in errors[0], errors[0]
        assert f"chmod go-w {tools}" in errors[0] and "error" in errors[0], errors[0]
        assert uids_in(log) == set() and {p: p.read_bytes() for p in pkg.rglob("*.js")} == before
        status = json.loads(senpi_guard("status", "--root", pkg, "--json").stdout)
        (row,) = status["installs"]
        assert f"chmod go-w {tools}" in (row["replay_problem"] or "") and not row["as_wanted"]
        assert "chmod go-w" in senpi_guard("status", "--root", pkg).stdout
        tools.chmod(0o644)  # the fix it names: then root replays it, and says so
        done = senpi_guard("apply", "--root", pkg)
        assert done.returncode == 0, done.stderr
        assert "nobody cannot read" in done.stderr and "runs as root" in done.stderr
        assert senpi_guard("revert", "--root", pkg).returncode == 0
    finally:
        log.unlink()


def test_a_folder_anyone_may_write_without_the_sticky_bit_makes_its_files_anyones(attacker, tarball, tmp_path):
    pkg = _install(tarball, _private(tmp_path))
    provider = pkg / PROVIDER
    provider.chmod(0o777)
    done = senpi_guard("apply", "--dry-run", "--root", pkg)
    assert done.returncode == 1 and f"chmod go-w {provider})" in done.stdout, done.stdout + done.stderr
    provider.chmod(0o1777)  # (with the sticky bit, only an entry's owner may replace it)
    assert senpi_guard("apply", "--dry-run", "--root", pkg).returncode == 0


NEIGHBOURS = 5000


def _neighbours(node_modules: Path, count: int) -> None:
    for index in range(count):
        folder = node_modules / f"unrelated-{index:05d}"
        folder.mkdir()
        (folder / "package.json").write_text(f'{{"name": "unrelated-{index:05d}", "version": "1.0.0"}}')
        (folder / "index.js").write_text("module.exports = 1;\n")


def _timed_apply(pkg: Path, state: Path) -> tuple[float, subprocess.CompletedProcess]:
    started = time.monotonic()
    # (a cache of its own too: the probes a first run caches would otherwise speed up the second)
    homes = {"XDG_STATE_HOME": str(state), "XDG_DATA_HOME": str(state), "XDG_CACHE_HOME": str(state / "cache")}
    done = senpi_guard("apply", "--root", pkg, env=homes)
    return time.monotonic() - started, done


def test_an_npm_linked_neighbour_and_5000_globals_neither_refuse_nor_slow_apply(attacker, tarball, open_dir):
    """Beside senpi in the global node_modules: a package `npm link` placed (a link out of the
    prefix) and 5,000 unrelated packages, one of them the second user's. apply patches, takes no
    longer than beside none, and replays as nobody: no neighbour is judged (the user's would make
    the replay theirs)."""
    npm = shutil.which("npm")
    bare_pkg = _install(tarball, open_dir / "bare")
    busy_pkg = _install(tarball, open_dir / "busy")
    linked = open_dir / "linked-src"
    linked.mkdir()
    (linked / "package.json").write_text('{"name": "linked-tool", "version": "1.0.0"}')
    subprocess.run(
        [npm, "link", "--no-audit", "--no-fund", "--offline"],
        cwd=linked,
        check=True,
        capture_output=True,
        env={**os.environ, "npm_config_prefix": str(open_dir / "busy")},
    )
    global_modules = open_dir / "busy" / "lib" / "node_modules"
    assert (global_modules / "linked-tool").is_symlink()
    _neighbours(global_modules, NEIGHBOURS)
    users = global_modules / "unrelated-00000"
    for path in (users, *users.iterdir()):
        os.chown(path, attacker.pw_uid, attacker.pw_gid)
    log = shared_log(open_dir, "who-ran-it")
    tools = busy_pkg / PROVIDER / "tools.js"
    tools.write_text(planted(log) + tools.read_text())
    bare_time, bare = _timed_apply(bare_pkg, open_dir / "state-bare")
    busy_time, busy = _timed_apply(busy_pkg, open_dir / "state-busy")
    print(f"apply beside nothing: {bare_time:.2f}s; beside npm link + {NEIGHBOURS} packages: {busy_time:.2f}s")
    assert bare.returncode == 0 and busy.returncode == 0, busy.stderr
    assert "links out" not in busy.stderr
    assert uids_in(log) == {runas.nobody()[0]}, uids_in(log)
    assert busy_time < bare_time * 1.5 + 1.0, (bare_time, busy_time)


def test_after_a_replay_refusal_status_and_verify_name_the_refusals_fix(attacker, tarball, tmp_path):
    """A 077 install with a package.json anyone may write: status and verify both exit 1 and their
    next step is the refusal's own fix (apply would be refused the same way), the extension's state
    being what inspection found in both."""
    pkg = _install(tarball, _private(tmp_path))
    manifest = pkg / "package.json"
    manifest.chmod(0o666)
    outputs = {command: senpi_guard(command, "--root", pkg) for command in ("status", "verify")}
    for command, done in outputs.items():
        text = done.stdout + done.stderr
        nexts = [line.strip() for line in text.splitlines() if line.strip().startswith("next")]
        print(f"{command}: exit {done.returncode}, next lines: {nexts}")
        assert done.returncode == 1, text
        assert nexts and all(f"chmod go-w {manifest}" in line for line in nexts), (command, text)
        assert "state    error" not in text and "state     error" not in text, (command, text)
