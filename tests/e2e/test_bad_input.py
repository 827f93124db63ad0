"""Bad input: a clear one-line error, a non-zero exit code, and nothing changed."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HANG_S, SHAPE_REL, run_cli, tree_digest, write_user_config

from senpi_guard.demo import sample
from senpi_guard.prove import sandbox

REL = SHAPE_REL[2]


def assert_refused(capsys, pkg, *expected, command="apply", extra=()):
    before = tree_digest(pkg)
    code, out, err = run_cli(capsys, command, "--root", pkg, *extra)
    assert code == 1, out + err
    text = out.split("\nextension  ")[0] + err  # (the extension layer's own block is not about pkg)
    error_lines = [ln for ln in text.splitlines() if "error:" in ln]
    assert len(error_lines) == 1, text
    for phrase in expected:
        assert phrase in error_lines[0], error_lines[0]
    assert tree_digest(pkg) == before
    return error_lines[0]


def test_unreadable_target(npm_install, capsys):
    pkg = npm_install(2)
    (pkg / REL).chmod(0)
    assert_refused(capsys, pkg, "unreadable", "chmod a+r")


def test_read_only_dist(npm_install, capsys):
    pkg = npm_install(2)
    folder = (pkg / REL).parent
    folder.chmod(0o555)
    try:
        assert_refused(capsys, pkg, "read-only", str(folder))
    finally:
        folder.chmod(0o755)


def test_target_symlinked_outside_the_package(npm_install, capsys, tmp_path):
    pkg = npm_install(2)
    outside = tmp_path / "elsewhere.js"
    outside.write_bytes((pkg / REL).read_bytes())
    (pkg / REL).unlink()
    (pkg / REL).symlink_to(outside)
    before = outside.read_bytes()
    assert_refused(capsys, pkg, "outside the package")
    assert outside.read_bytes() == before


@pytest.mark.parametrize(
    ("source", "phrases"),
    [
        ("export function buildPromptBlocks(context) {\n    return [;\n}", ["syntax error at line 2"]),
        (
            "export function somethingElse(context) {\n    return [];\n}",
            ["no file under dist/ defines and exports buildPromptBlocks"],
        ),
        ("export function* buildPromptBlocks(context) {\n    yield 1;\n}", ["unknown return shape", "generator"]),
        (
            "export function buildPromptBlocks(context) {\n    context.x = 1;\n}",
            ["unknown return shape", "returns no value"],
        ),
    ],
)
def test_target_code_problems(custom_package, capsys, source, phrases):
    pkg = custom_package(source + "\n//# sourceMappingURL=prompt-bridge.js.map")
    assert_refused(capsys, pkg, *phrases)


def test_two_definitions(custom_package, capsys):
    pkg = custom_package(sample.prompt_bridge_source(2))
    extra = pkg / "dist/core/legacy/prompt-bridge-old.js"
    extra.parent.mkdir(parents=True)
    extra.write_text(sample.prompt_bridge_source(1))
    assert_refused(capsys, pkg, "2 definitions of buildPromptBlocks", "prompt-bridge-old.js")


def test_non_utf8_target(custom_package, capsys):
    pkg = custom_package(sample.prompt_bridge_source(2))
    target = pkg / REL
    target.write_bytes(target.read_bytes().replace(b"USER:", b"USER\xff:"))
    assert_refused(capsys, pkg, "not UTF-8")


def test_corrupt_backup_is_not_restored(npm_install, capsys, isolated_dirs):
    pkg = npm_install(2)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    (blob,) = (isolated_dirs / "xdg_data_home").rglob("*.orig")
    blob.write_bytes(b"garbage")
    line = assert_refused(capsys, pkg, "corrupt", "--from-edit", command="revert")
    assert str(blob) in line
    code, out, _ = run_cli(capsys, "revert", "--root", pkg, "--from-edit")
    assert code == 0 and "removed the edit" in out


def test_corrupt_state_file(npm_install, capsys, isolated_dirs):
    pkg = npm_install(2)
    state = isolated_dirs / "xdg_state_home" / "senpi-guard" / "state.json"
    state.parent.mkdir(parents=True)
    state.write_text("{not json")
    assert_refused(capsys, pkg, "state file", "corrupt", "delete it", command="status")
    assert_refused(capsys, pkg, "state file", "corrupt")


@pytest.mark.parametrize(
    ("config", "phrase"),
    [
        ("tags = [", "not valid TOML"),
        ('tagz = ["x"]', "unknown key 'tagz'"),
        ("tags = []", "non-empty list"),
        ('tags = ["<bad>"]', "not a plain tag name"),
        ('tags = ["a-very-long-tag-name-that-makes-the-marker-too-big"]', "not a plain tag name"),
        ('upstream_dedupe = "sometimes"', "'upstream_dedupe'"),
        ("verify_timeout = -1", "'verify_timeout'"),
    ],
)
def test_bad_config(npm_install, capsys, isolated_dirs, config, phrase):
    pkg = npm_install(2)
    write_user_config(isolated_dirs, config)
    assert_refused(capsys, pkg, phrase)


def test_node_missing(npm_install, capsys, monkeypatch, tmp_path):
    pkg = npm_install(2)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("SENPI_GUARD_NODE", raising=False)
    assert_refused(capsys, pkg, "node was not found on PATH")


def test_node_too_old(npm_install, capsys, monkeypatch, tmp_path):
    # A stand-in `node` that only answers --version: the real node cannot be made old here.
    pkg = npm_install(2)
    fake = tmp_path / "bin" / "node"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho v16.20.0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    assert_refused(capsys, pkg, "v16.20.0", "node >= 18")


def test_verification_timeout(custom_package, capsys, isolated_dirs):
    source = sample.prompt_bridge_source(2).replace(
        "    const messages = context.messages;", "    for (;;) { }\n    const messages = context.messages;"
    )
    pkg = custom_package(source)
    write_user_config(isolated_dirs, "verify_timeout = 3\n")
    started = time.monotonic()
    assert_refused(capsys, pkg, "timed out after 3s")
    assert time.monotonic() - started < 30


def test_file_changed_between_read_and_write(npm_install, isolated_dirs):
    """A real race: the target is rewritten while apply is verifying the candidate."""
    pkg = npm_install(2)
    target = pkg / REL
    # where its mirror lives: the state dir, or as root (replayed as nobody) the shared temp folder
    places = [isolated_dirs / "xdg_state_home" / "senpi-guard" / "verify", sandbox.shared_temp()]
    env = dict(os.environ)
    proc = subprocess.Popen(
        [sys.executable, "-m", "senpi_guard", "apply", "--root", str(pkg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + HANG_S
    while not any(place.is_dir() and list(place.glob(f"senpi-guard-verify-{proc.pid}-*")) for place in places):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.002)
    changed = target.read_bytes().replace(b"USER:\\n", b"HUMAN:\\n")
    target.write_bytes(changed)
    out, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 1, out + err
    assert "changed while senpi-guard was working on it" in out
    assert target.read_bytes() == changed
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".senpi-guard")]


def test_root_that_is_not_senpi(capsys, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "package.json").write_text(json.dumps({"name": "left-pad", "version": "1.0.0"}))
    code, _, err = run_cli(capsys, "apply", "--root", other)
    assert code == 1 and "not a @code-yeongyu/senpi package" in err and len(err.splitlines()) == 1
    code, _out, err = run_cli(capsys, "status", "--root", Path(tmp_path / "missing"))
    assert code == 1 and "no such directory" in err


def test_usage_error_exit_code(capsys):
    code, out, err = run_cli(capsys, "apply", "--bogus")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "--bogus" in err and "--help" in err


def test_candidate_rejected_by_node_check(custom_package, capsys):
    # tree-sitter accepts a duplicate `let`; V8 does not (an early error): node --check must refuse
    source = sample.prompt_bridge_source(2).replace(
        "const CONTINUE_INSTRUCTION", "let twice = 1;\nlet twice = 2;\nconst CONTINUE_INSTRUCTION"
    )
    pkg = custom_package(source)
    assert_refused(capsys, pkg, "node --check failed", "already been declared")
