"""`check` as root over a release no other user owns: a fetched spec (a registry version, served
here by a real local HTTP server as a registry) is packed by npm, unpacked and replayed as `nobody`, and so is root's
own tarball; the release's code, which notes its uid, never runs as root (issue 24: what to build,
"a fetched spec is handled as nobody")."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_support import planted, shared_log, uids_in
from realsenpi import http_folder, node24_bin, path_with, senpi_guard

from senpi_guard.demo import sample
from senpi_guard.io import runas

PROVIDER = "dist/core/extensions/builtin/claude-sdk-oauth"


@pytest.fixture
def planted_tarball(open_dir) -> Path:
    src = open_dir / "src"
    sample.write_sample_package(src, 2, fillers=0)
    for script in (src / PROVIDER).glob("*.js"):
        script.write_text(planted(open_dir / "who-ran-it") + script.read_text())
    return sample.npm_pack(src, open_dir / "served")


@pytest.fixture
def served(planted_tarball) -> Iterator[tuple[str, dict[str, str]]]:
    """The release as a registry version: a real HTTP server of 127.0.0.1 (python -m http.server)
    serving the package's document and its tarball, as a registry does (`check` takes registry
    specs only); the spec, and the environment that names that registry."""
    folder = planted_tarball.parent
    with http_folder(folder) as registry:
        version = "2026.8.1"
        data = planted_tarball.read_bytes()
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
        tarball = {"tarball": f"{registry}{planted_tarball.name}", "integrity": integrity}
        document = {
            "name": "@code-yeongyu/senpi",
            "dist-tags": {"latest": version},
            "versions": {version: {"name": "@code-yeongyu/senpi", "version": version, "dist": tarball}},
        }
        (folder / "@code-yeongyu").mkdir()  # (npm asks for /@code-yeongyu%2fsenpi)
        (folder / "@code-yeongyu" / "senpi").write_text(json.dumps(document))
        yield f"@code-yeongyu/senpi@{version}", {"npm_config_registry": registry}


@pytest.fixture
def npm_uids(open_dir) -> tuple[Path, dict[str, str]]:
    """The real npm behind a shim first on PATH that notes the uid of every call, on node 24 (npm
    keeps node's compile cache in the temp folder on node >= 22)."""
    log = shared_log(open_dir, "npm-uids")
    shim = open_dir / "bin" / "npm"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nid -u >> "{log}"\nexec "{shutil.which("npm")}" "$@"\n')
    shim.chmod(0o755)
    return log, {"PATH": path_with(shim.parent, node24_bin())}


def test_a_fetched_release_is_packed_unpacked_and_replayed_as_nobody(attacker, served, npm_uids, open_dir, given_tmp):
    log = shared_log(open_dir, "who-ran-it")
    npm_log, env = npm_uids
    started = time.monotonic()
    spec, registry = served
    done = senpi_guard("check", spec, env={**env, **registry})
    print(
        f"check {spec}: exit {done.returncode} in {time.monotonic() - started:.1f}s; npm ran as "
        f"{sorted(uids_in(npm_log))}, the release's code as {sorted(uids_in(log))}"
    )
    assert done.returncode == 0 and "patchable" in done.stdout, done.stdout + done.stderr
    assert uids_in(npm_log) == {runas.nobody()[0]}, npm_log.read_text()
    assert uids_in(log) == {runas.nobody()[0]}, log.read_text()
    # nothing of nobody's in the temp folder: npm's compile cache (node-compile-cache) made there
    # as nobody would be a folder no other user's node could keep its cache in
    assert {p.name: p.lstat().st_uid for p in given_tmp.iterdir() if p.lstat().st_uid != 0} == {}


def test_roots_own_tarball_is_replayed_as_nobody(attacker, planted_tarball, open_dir, tmp_path):
    log = shared_log(open_dir, "who-ran-it")
    roots = tmp_path / "roots.tgz"  # (root's, in root's 0700 pytest folder)
    shutil.copyfile(planted_tarball, roots)
    done = senpi_guard("check", roots)
    assert done.returncode == 0 and "patchable" in done.stdout, done.stdout + done.stderr
    assert uids_in(log) == {runas.nobody()[0]}, log.read_text()


def test_checks_npm_is_given_no_token_from_roots_environment(attacker, served, open_dir):
    """Row 3 of issue 46: npm fetching a spec as nobody gets io/runas's allow-list for npm (its own
    environment, as /proc/<pid>/environ holds it), never root's tokens."""
    shared_log(open_dir, "who-ran-it")  # (where the release's planted code writes)
    log = shared_log(open_dir, "npm-environ")
    shim = open_dir / "bin" / "npm"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\ntr "\\000" "\\n" < /proc/$$/environ >> "{log}"\nexec "{shutil.which("npm")}" "$@"\n')
    shim.chmod(0o755)
    tokens = {"NPM_TOKEN": "secret-xyz", "SOMETHING_TOKEN": "secret-abc", "npm_config__authToken": "secret-npm"}
    env = {
        **tokens,
        "PATH": path_with(shim.parent, node24_bin()),
        "NO_PROXY": "127.0.0.1",
        "SENPI_GUARD_UNRELATED": "x",
    }
    spec, registry = served
    done = senpi_guard("check", spec, env={**env, **registry})
    assert done.returncode == 0 and "patchable" in done.stdout, done.stdout + done.stderr
    given = dict(line.split("=", 1) for line in log.read_text().splitlines() if "=" in line)
    assert given and not [value for value in given.values() if "secret-" in value], given
    assert "SENPI_GUARD_UNRELATED" not in given and given.get("NO_PROXY") == "127.0.0.1", sorted(given)
