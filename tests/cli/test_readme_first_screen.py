"""The README's first screen says what, why, install and run: its install line and its run lines are
within the first 30 lines, and every run line is a command senpi-guard's parser accepts."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

from senpi_guard.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
FIRST_SCREEN = 30


def first_screen_commands() -> list[list[str]]:
    head = "\n".join((ROOT / "README.md").read_text("utf-8").splitlines()[:FIRST_SCREEN])
    blocks = re.findall(r"```sh\n(.*?)```", head, re.S)
    assert blocks, f"no closed ```sh block within the README's first {FIRST_SCREEN} lines"
    return [shlex.split(line.split("#", 1)[0]) for line in blocks[0].splitlines() if line.split("#", 1)[0].strip()]


def test_the_install_line_is_on_the_first_screen_and_installs_this_project():
    commands = first_screen_commands()
    assert commands[0] in (["pipx", "install", "."], ["uv", "tool", "install", "."]), commands[0]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    assert "senpi-guard" in project["scripts"]  # (what the run lines below call)


def test_three_or_more_run_lines_follow_and_the_parser_accepts_each():
    runs = [words for words in first_screen_commands()[1:] if words[0] == "senpi-guard"]
    assert len(runs) >= 3, runs
    for words in runs:
        args = build_parser(words[1]).parse_args(words[1:])  # (a usage error would exit 2 here)
        assert args.command == words[1]
    assert {"status", "apply"} <= {words[1] for words in runs}


def test_the_first_screen_says_what_it_saves_per_senpi_version():
    head = "\n".join((ROOT / "README.md").read_text("utf-8").splitlines()[:FIRST_SCREEN])
    for version in ("senpi ≤ 2026.8.4", "senpi 2026.8.4-2+", "Other providers"):
        assert version in head, version
    assert 'upstream_dedupe = "defer"' in head  # where upstream's keep-last is cheaper, it says so
    assert "(docs/layers.md)" in head and (ROOT / "docs" / "layers.md").is_file()
