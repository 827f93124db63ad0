"""Every command that prints, piped into a reader that goes away early (`senpi-guard status --json |
head -1`): it ends quietly, with the exit code it has when read to the end. Each runs as the real
console entry point (`python -m senpi_guard`) on a sample install the real npm put in place."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import HANG_S, cli

from senpi_guard.demo import sample_session

# (each command's arguments on a patched install, PKG, or an unpatched one, UNPATCHED; SESSION: a
# sample session)
PRINTING = {
    "status": ["status", "--root", "PKG"],
    "status --json": ["status", "--json", "--root", "PKG"],
    "verify": ["verify", "--root", "PKG"],
    "apply --dry-run": ["apply", "--dry-run", "--root", "UNPATCHED"],
    "apply --dry-run -v": ["apply", "--dry-run", "-v", "--root", "UNPATCHED"],  # (more than a pipe holds)
    "audit": ["audit", "--root", "PKG", "SESSION"],
    "audit --json": ["audit", "--json", "--root", "PKG", "SESSION"],
    "check": ["check", "UNPATCHED"],
    "paths": ["paths"],
    "completion": ["completion", "bash"],
    "--help": ["--help"],
    "a usage error": ["staus"],
}
BROKEN = ("Traceback", "BrokenPipe", "Exception ignored", "Errno 32")


def _command(name: str, where: dict[str, Path]) -> list[str]:
    return [sys.executable, "-m", "senpi_guard", *(str(where.get(arg, arg)) for arg in PRINTING[name])]


def _read_to_the_end(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=HANG_S)


def _reader_gone_before_the_first_line(command: list[str], stderr_too: bool = False) -> tuple[int, str]:
    """The command's exit code and stderr, its stdout a pipe whose reader has already closed it."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            command,
            stdout=write_end,
            stderr=write_end if stderr_too else subprocess.PIPE,
            text=True,
            timeout=HANG_S,
        )
    finally:
        os.close(write_end)
    return done.returncode, done.stderr or ""


def _head_1(command: list[str]) -> tuple[int, str, str]:
    """`command | head -n 1`: the command's exit code and stderr, and what head printed."""
    with tempfile.TemporaryFile() as errors:
        writer = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors)
        assert writer.stdout is not None
        head = subprocess.run(["head", "-n", "1"], stdin=writer.stdout, capture_output=True, text=True, timeout=HANG_S)
        writer.stdout.close()  # (head held the only other read end: the pipe has no reader now)
        code = writer.wait(timeout=HANG_S)
        errors.seek(0)
        return code, errors.read().decode(), head.stdout


@pytest.fixture
def where(request, npm_install, isolated_dirs, tmp_path) -> dict[str, Path]:
    """PKG and UNPATCHED: the one install (patched, with the real apply, for a command that names PKG)."""
    pkg = npm_install(2)
    if "PKG" in PRINTING[request.node.callspec.params["name"]]:
        assert cli("apply", "--root", pkg) == 0
    session = sample_session.write_sample_session(tmp_path / "session.jsonl", turns=30, lanes=True)
    return {"PKG": pkg, "UNPATCHED": pkg, "SESSION": session}


@pytest.mark.parametrize("name", PRINTING)
def test_a_reader_that_goes_early_leaves_the_command_quiet_with_its_own_exit_code(name, where):
    command = _command(name, where)
    whole = _read_to_the_end(command)
    own = whole.returncode
    assert own == (2 if name == "a usage error" else 0), whole.stdout + whole.stderr
    assert whole.stdout or name == "a usage error", whole.stderr  # (a command that prints)

    code, stderr = _reader_gone_before_the_first_line(command)
    assert code == own and not any(word in stderr for word in BROKEN), (code, stderr)

    code, stderr, first = _head_1(command)
    assert code == own and not any(word in stderr for word in BROKEN), (code, stderr)
    assert len(first.splitlines()) == (1 if whole.stdout else 0), first


@pytest.mark.parametrize("name", ["status --json", "a usage error"])
def test_stdout_and_stderr_into_a_reader_already_gone_keep_the_exit_code(name, where):
    """`senpi-guard … 2>&1 | head -1`: what goes to stderr finds no reader either."""
    command = _command(name, where)
    own = _read_to_the_end(command).returncode
    assert _reader_gone_before_the_first_line(command, stderr_too=True)[0] == own
