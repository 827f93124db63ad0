"""The README's first screen says what it does, who needs it and who does not, the check before
patching, install and run: within the first 30 lines, every run line a command senpi-guard's parser
accepts, every figure one the patch ships (layers/figures: measured again by the tests), and the
whole README at most 250 lines."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

from senpi_guard.audit.money import BYTES_PER_TOKEN
from senpi_guard.cli import build_parser
from senpi_guard.core.patch import definition
from senpi_guard.io.config import Config
from senpi_guard.layers import figures

ROOT = Path(__file__).resolve().parents[2]
FIRST_SCREEN = 30


def first_screen_commands() -> list[list[str]]:
    head = "\n".join((ROOT / "README.md").read_text("utf-8").splitlines()[:FIRST_SCREEN])
    blocks = re.findall(r"```sh\n(.*?)```", head, re.S)
    assert blocks, f"no closed ```sh block within the README's first {FIRST_SCREEN} lines"
    return [shlex.split(line.split("#", 1)[0]) for line in blocks[0].splitlines() if line.split("#", 1)[0].strip()]


def test_the_install_line_is_on_the_first_screen_and_installs_this_project():
    commands = first_screen_commands()
    assert commands[0] == ["bash", "scripts/install.sh"] and (ROOT / "scripts" / "install.sh").is_file()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    assert "senpi-guard" in project["scripts"]  # (what the run lines below call)


def test_three_or_more_run_lines_follow_and_the_parser_accepts_each():
    runs = [words for words in first_screen_commands()[1:] if words[0] == "senpi-guard"]
    assert len(runs) >= 3, runs
    for words in runs:
        args = build_parser(words[1]).parse_args(words[1:])  # (a usage error would exit 2 here)
        assert args.command == words[1]
    assert {"status", "apply"} <= {words[1] for words in runs}


def test_the_first_screen_says_who_needs_it_and_the_check_before_patching():
    head = "\n".join((ROOT / "README.md").read_text("utf-8").splitlines()[:FIRST_SCREEN])
    for said in ("**Who needs it:**", "**Who does not:**", "omo-senpi", "senpi ≤ 2026.8.4", "senpi 2026.8.4-2+"):
        assert said in head, said
    assert "Other providers" in head and 'upstream_dedupe = "defer"' in head
    runs = [words[1:] for words in first_screen_commands() if words[0] == "senpi-guard"]
    assert runs[0][0] == "audit" and runs.index(["apply"]) > 0  # (the saving seen before patching)


def _n(value: float) -> str:
    return f"{value:,.0f}"


def test_the_first_screens_figures_are_the_ones_the_patch_ships():
    head = " ".join(" ".join((ROOT / "README.md").read_text("utf-8").splitlines()[:FIRST_SCREEN]).split())
    patch = definition.load("directive-dedupe")
    older = figures.for_shape(patch, Config(), "2026.7.31-2 - 2026.8.4")[0]["incident-70"]
    keep_last = figures.for_shape(patch, Config(), "2026.8.4-2 and later")[0]
    resend, short = keep_last["incident-70"]["resend"], keep_last["incident-3"]
    calls = resend["calls"]
    writes = [_n(resend[c]["cacheWrite"] / BYTES_PER_TOKEN / calls) for c in ("installed", "patched")]
    extension = figures.extension_sizes(patch, Config())["incident-70"]
    expected = [
        f"{_n(older['originalBytes'])} → {_n(older['patchedBytes'])} bytes a full re-send",
        f"{writes[0]} → {writes[1]} cache-write tokens a call over {calls} calls",
        f"{_n(extension['before'])} → {_n(extension['after'])} text bytes a call",
        f"re-send is {_n(short['pipelineBytes'])} bytes against keep-last's {_n(short['upstreamOnly']['bytes'])}",
        f"({short['resend']['calls']} calls: `upstream_dedupe",
    ]
    for figure in expected:
        assert figure in head, figure


def test_the_readme_is_at_most_250_lines_of_at_most_100_characters():
    lines = (ROOT / "README.md").read_text("utf-8").splitlines()
    assert len(lines) <= 250 and not [line for line in lines if len(line) > 100]
