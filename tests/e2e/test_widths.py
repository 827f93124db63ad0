"""No default line of `status`, `apply`, `verify` (or their dry runs) is wider than the terminal,
except a line holding only a path or a command (never broken: on a line of its own), at 80 and 120
columns (COLUMNS, as a pipe gets it), on installs of both compiled shapes with and without upstream's
keep-last, before and after apply. (Measured before: status's `changes` line ran to ~330 columns,
apply's state and diff lines to ~110.)"""

from __future__ import annotations

import re

import pytest
from conftest import run_console

ALONE = re.compile(r"\s*(`[^`]+`|\S+)[,;:.)]*")  # (one path or command, its punctuation after it)


def too_wide(out: str, columns: int) -> list[str]:
    return [line for line in out.splitlines() if len(line) > columns and not ALONE.fullmatch(line)]


@pytest.mark.parametrize("columns", [80, 120])
def test_no_default_line_is_wider_than_the_terminal(npm_install, columns):
    roots = [arg for pkg in (npm_install(2), npm_install(3)) for arg in ("--root", str(pkg))]
    env = {"COLUMNS": str(columns)}
    steps = [("status",), ("verify",), ("apply", "--dry-run"), ("apply",), ("status",), ("verify",)]
    for step in steps:
        said = run_console(*step, *roots, env=env)
        assert said.returncode in (0, 1), said.stdout + said.stderr
        assert not too_wide(said.stdout, columns), (step, too_wide(said.stdout, columns))
        assert any(len(line) > 60 for line in said.stdout.splitlines())  # (the check can fail)
