"""`--json` keeps its promise everywhere: for every command and sub-action that takes it (read from the
parser, so a new command is covered the day it is added), stdout is exactly one JSON document, on
success and on error alike, and the lines meant for a person go to stderr. Each case is a real
process in isolated XDG folders, on a sample senpi package and a sample session."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG_S

from senpi_guard.cli import build_parser
from senpi_guard.demo import sample, sample_session


def json_cases() -> list[tuple[str, ...]]:
    """(command,) or (command, action) for every subcommand with --json; one per choice of a
    positional that takes a fixed set (a sub-action, as `daemon install`)."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    cases = []
    for name, parser in sub.choices.items():
        if "--json" not in parser._option_string_actions:
            continue
        actions = [a for a in parser._actions if not a.option_strings and a.choices]
        cases += [(name, choice) for choice in actions[0].choices] if actions else [(name,)]
    return cases


CASES = json_cases()


def test_the_walk_finds_every_command_that_promises_json():
    assert ("daemon", "install") in CASES and ("daemon", "uninstall") in CASES and ("status",) in CASES
    assert {case[0] for case in CASES} >= {"apply", "status", "verify", "revert", "audit", "check", "paths"}


def _positional_values(case: tuple[str, ...], values: dict[str, Path]) -> list[str]:
    """What each of the command's other positionals gets (one this test does not know fails here:
    say in `values` what to pass)."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices[case[0]]
    out = []
    for action in parser._actions:
        if action.option_strings or action.choices:
            continue
        assert action.dest in values, f"{case[0]}: tell this test what to pass for its {action.dest!r}"
        out.append(str(values[action.dest]))
    return out


def _argv(case: tuple[str, ...], values: dict[str, Path], pkg: Path) -> list[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    takes_root = "--root" in sub.choices[case[0]]._option_string_actions
    return [*case, *_positional_values(case, values), *(["--root", str(pkg)] if takes_root else []), "--json"]


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "senpi_guard", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
        timeout=HANG_S,
    )


def one_document(stdout: str) -> dict:
    """stdout parsed as exactly one JSON document (json.loads refuses anything before or after it)."""
    doc = json.loads(stdout)
    assert isinstance(doc, dict), stdout
    return doc


@pytest.fixture
def inputs(tmp_path) -> tuple[dict[str, Path], Path]:
    pkg = tmp_path / "senpi"
    sample.write_sample_package(pkg, 2, fillers=3)
    session = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=3, directive_bytes=2000)
    return {"session": session, "release": pkg, "package_dir": tmp_path / "exported"}, pkg


@pytest.mark.parametrize("case", CASES, ids=" ".join)
def test_json_success_is_one_document_and_the_rest_goes_to_stderr(case, inputs):
    values, pkg = inputs
    done = _run(_argv(case, values, pkg))
    try:
        assert done.returncode in (0, 1), done.stderr  # (1: status of something not as wanted)
        doc = one_document(done.stdout)
        assert done.returncode == 1 or "error" not in doc
    finally:
        if case == ("daemon", "install"):  # (where a user service manager works, it was started)
            _run(["daemon", "uninstall"])


@pytest.mark.parametrize("case", CASES, ids=" ".join)
def test_json_usage_error_is_one_document(case, inputs):
    done = _run([*_argv(case, *inputs), "--no-such-option"])
    assert done.returncode == 2
    assert "no-such-option" in one_document(done.stdout)["error"]
    assert done.stderr.startswith("senpi-guard: ") and len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize("case", CASES, ids=" ".join)
def test_json_error_is_one_document(case, tmp_path):
    """Every folder senpi-guard uses is a file, the config is not TOML, and every path given is
    missing: whatever the command needs first fails, as one line on stderr and one document."""
    homes = {}
    for key in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "SENPI_CODING_AGENT_DIR"):
        homes[key] = str(tmp_path / key.lower())
        Path(homes[key]).write_text("a file where a folder belongs\n")
    config = tmp_path / "config.toml"
    config.write_text("not = [toml\n")
    missing = tmp_path / "missing"
    argv = [
        *_argv(
            case, {"session": missing / "s.jsonl", "release": missing, "package_dir": missing / "exported"}, missing
        ),
        "--config",
        str(config),
    ]
    done = _run(argv, env=homes)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert one_document(done.stdout)["error"]
    assert done.stderr.startswith("senpi-guard: ") and len(done.stderr.splitlines()) == 1, done.stderr
