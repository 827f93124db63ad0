"""Per-file composition on the real builds: two and three test-only patches (tests/patches/, loaded
through $SENPI_GUARD_EXTRA_PATCHES) on claude-sdk-oauth/prompt-bridge.js, which the shipped
directive-dedupe patches too. apply composes the file from its original under one header, verify
proves every patch on the composed file, a second apply writes nothing, `revert --patch` rebuilds
the file without one patch, and `revert` gives back the original bytes exactly. Also: an install
patched by the last released senpi-guard (one header per patch) re-composes on the next apply, and
the watcher re-composes after `npm install -g` from 2026.8.1 to 2026.8.9."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import npm_update, wait_for
from realsenpi import DIST_ONLY, REPO, senpi_guard

from senpi_guard.core.patch import apply as edit

pytestmark = pytest.mark.real

TEST_PATCHES = REPO / "tests" / "patches"
BRIDGE = "dist/core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js"
FUNCTIONS = {"prompt-text": "__testPromptText", "prompt-stream": "__testPromptStream",
             "prompt-blocks": "__testPromptBlocks"}  # fmt: skip
# The release before per-file composition (one header per patch): what users have installed.
LAST_RELEASE = os.environ.get("SENPI_GUARD_LAST_RELEASE", "7d38fa0")


def extra(*names: str) -> dict[str, str]:
    return {"SENPI_GUARD_EXTRA_PATCHES": os.pathsep.join(str(TEST_PATCHES / name) for name in names)}


def run(*args, env: dict[str, str]) -> dict:
    result = senpi_guard(*args, "--json", env=env)
    assert result.stdout, result.stderr
    return {"rc": result.returncode, **json.loads(result.stdout), "stderr": result.stderr}


def failed(report: dict) -> list:
    return [
        (r.get("patch"), r.get("state"), r.get("detail")) for r in report.get("installs", []) if not r.get("ok")
    ] + [(r.get("path"), r.get("state"), r.get("detail")) for r in report.get("extensions", []) if not r.get("ok")] or [
        report.get("stderr", "")[-2000:]
    ]


def dist_results(report: dict) -> dict[str, dict]:
    return {r["patch"]: r for r in report.get("installs", report.get("results", [])) if r.get("patch")}


def carried(data: bytes) -> tuple[str, ...]:
    header = edit.read_file_header(data)
    return header.names if header else ()


def check_composed(target: Path, names: tuple[str, ...], original: bytes) -> None:
    data = target.read_bytes()
    assert carried(data) == ("directive-dedupe", *names)
    assert (
        data.count(b"// senpi-guard: patched by") == 1 and b"original-sha256=" + edit.sha256(original).encode() in data
    )
    for name, function in FUNCTIONS.items():
        assert (f"function {function}(".encode() in data) == (name in names), name
    assert b"function __senpiGuardDedupe(" in data
    subprocess.run(["node", "--check", str(target)], check=True, capture_output=True)


def walk(pkg: Path, names: tuple[str, ...]) -> None:
    """apply, verify, a second apply, revert of each patch alone, revert of all: on one install."""
    target = pkg / BRIDGE
    original = target.read_bytes()
    env = extra(*names)
    applied = run("apply", "--root", pkg, env=env)
    assert applied["rc"] == 0, failed(applied)
    check_composed(target, names, original)
    verified = run("verify", "--root", pkg, env=env)
    results = dist_results(verified)
    assert verified["rc"] == 0 and all(results[n]["state"] == "patched" and results[n]["ok"] for n in names), results
    composed = target.read_bytes()
    mtime = target.stat().st_mtime_ns
    again = run("apply", "--root", pkg, env=env)
    assert again["rc"] == 0 and all(not r["changed"] for r in dist_results(again).values()), again
    assert target.read_bytes() == composed and target.stat().st_mtime_ns == mtime  # nothing written
    for name in names:
        alone = run("revert", "--root", pkg, "--patch", name, env=env)
        assert alone["rc"] == 0, alone
        check_composed(target, tuple(n for n in names if n != name), original)
        left = dist_results(run("verify", "--root", pkg, env=env))  # (held until the next apply)
        assert left[name]["state"] == "held", left[name]
        back = run("apply", "--root", pkg, env=env)
        assert back["rc"] == 0 and target.read_bytes() == composed, back
    reverted = run("revert", "--root", pkg, env=env)
    assert reverted["rc"] == 0, reverted
    assert target.read_bytes() == original


@pytest.mark.parametrize("names", [("prompt-text", "prompt-stream"), tuple(FUNCTIONS)], ids=["two", "three"])
def test_patches_on_one_file_compose_on_a_dist_only_build(dist_only, names):
    walk(dist_only("2026.8.1"), names)


def test_three_patches_compose_on_the_full_package(full_senpi):
    walk(full_senpi.package_dir, tuple(FUNCTIONS))


def test_the_watcher_recomposes_after_an_update(dist_only, real_builds, tmp_path, watch, monkeypatch):
    prefix = tmp_path / "prefix"
    pkg = dist_only("2026.8.1", prefix)
    names = tuple(FUNCTIONS)
    for key, value in extra(*names).items():
        monkeypatch.setenv(key, value)
    assert run("apply", "--root", pkg, env={})["rc"] == 0
    watcher = watch("--root", pkg)
    wait_for(lambda: "watching" in watcher.text(), what="watcher start")
    npm_update(real_builds / DIST_ONLY["2026.8.9"], prefix)
    target = pkg / BRIDGE
    wait_for(
        lambda: carried(target.read_bytes()) == ("directive-dedupe", *names),
        what="2026.8.9's prompt-bridge.js composed",
    )
    wait_for(
        lambda: all(f"patch={n}" in watcher.text() for n in names) and "version=2026.8.9" in watcher.text(),
        what="the reconciles logged",
    )
    verified = run("verify", "--root", pkg, env={})
    assert verified["rc"] == 0, verified
    assert "ok=False" not in watcher.text(), watcher.text()
    with tarfile.open(real_builds / DIST_ONLY["2026.8.9"]) as archive:
        fresh = archive.extractfile(f"package/{BRIDGE}").read()
    assert edit.read_file_header(target.read_bytes()).original_sha256 == edit.sha256(fresh)


@pytest.fixture(scope="session")
def last_release(tmp_path_factory) -> Path:
    """The last released senpi-guard's source (git archive of LAST_RELEASE), with the test patches
    copied into its patches/ (it has no way to load others): its apply leaves one header per patch."""
    root = tmp_path_factory.mktemp("last-release")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", LAST_RELEASE, "src", "patches"], capture_output=True)
    if archive.returncode != 0:
        pytest.skip(f"the last release {LAST_RELEASE} is not in this checkout: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    for name in FUNCTIONS:
        subprocess.run(["cp", "-r", str(TEST_PATCHES / name), str(root / "patches" / name)], check=True)
        toml = root / "patches" / name / "patch.toml"  # (that release predates `edits`: all its targets wrap)
        toml.write_text("".join(line for line in toml.read_text().splitlines(True) if not line.startswith("edits =")))
    return root


def old_senpi_guard(root: Path, *args) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    env.pop("SENPI_GUARD_EXTRA_PATCHES", None)
    return subprocess.run(
        [sys.executable, "-m", "senpi_guard", *map(str, args)], capture_output=True, text=True, env=env, check=False
    )


@pytest.mark.parametrize("names", [("prompt-text",), ("prompt-text", "prompt-stream")], ids=["one", "two"])
def test_an_install_patched_by_the_last_release_recomposes_and_reverts_byte_exact(dist_only, last_release, names):
    pkg = dist_only("2026.8.1")
    target = pkg / BRIDGE
    originals = {target: target.read_bytes()}
    # the old code: patches only the shipped ones and the test patches named (it loads all in its patches/)
    for name in set(FUNCTIONS) - set(names):
        subprocess.run(["rm", "-rf", str(last_release / "patches" / name)], check=True)
    old = old_senpi_guard(last_release, "apply", "--root", pkg)
    assert old.returncode == 0, old.stdout + old.stderr
    old_format = target.read_bytes()
    assert old_format.count(b"// senpi-guard: prompt-text v1 role=") == 1  # one header per patch
    assert old_format.count(b"// senpi-guard: directive-dedupe v") == 1
    env = extra(*names)
    applied = run("apply", "--root", pkg, env=env)
    assert applied["rc"] == 0, failed(applied)
    check_composed(target, names, originals[target])
    verified = run("verify", "--root", pkg, env=env)
    assert verified["rc"] == 0, verified
    again = run("apply", "--root", pkg, env=env)
    assert all(not r["changed"] for r in dist_results(again).values()), again
    assert run("revert", "--root", pkg, env=env)["rc"] == 0
    assert {path: path.read_bytes() for path in originals} == originals
