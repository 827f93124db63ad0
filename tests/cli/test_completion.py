"""`senpi-guard completion`: the scripts parse in their shell and complete what the parser knows."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import HANG_S, run_cli

from senpi_guard.cli import COMMANDS


def script(capsys, shell: str) -> str:
    code, out, err = run_cli(capsys, "completion", shell)
    assert code == 0 and err == ""
    return out


def complete(bash_script: str, *words: str) -> list[str]:
    """What bash offers for the last word of `senpi-guard WORDS…`, through the real `complete -F`."""
    line = " ".join(["senpi-guard", *words])
    probe = (
        f"{bash_script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words)}\n"
        "_senpi_guard; printf '%s\\n' \"${COMPREPLY[@]}\""
    )
    done = subprocess.run(["bash", "--norc", "-c", probe], capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_script_parses_and_completes_commands_options_and_choices(capsys, tmp_path):
    bash = script(capsys, "bash")
    assert subprocess.run(["bash", "-n"], input=bash, text=True, capture_output=True).returncode == 0
    assert complete(bash, "") == [
        *COMMANDS,
        "-h",
        "--help",
        "-V",
        "--version",
        "-q",
        "--quiet",
        "-v",
        "--verbose",
        "--config",
        "--color",
    ]
    assert complete(bash, "ap") == ["apply"]
    assert complete(bash, "apply", "--dr") == ["--dry-run"]
    assert complete(bash, "--config", "x.toml", "status", "--j") == ["--json"]  # (a value is no command)
    assert complete(bash, "--color", "") == ["auto", "always", "never"]
    assert complete(bash, "daemon", "")[-4:] == ["install", "uninstall", "status", "--json"]
    assert complete(bash, "audit", "--reconstruction", "s") == ["senpi"]
    (tmp_path / "senpi-x.tgz").write_text("")
    assert f"{tmp_path}/senpi-x.tgz" in complete(bash, "check", f"{tmp_path}/senpi-")  # a file to check


def test_zsh_and_fish_scripts_are_well_formed(capsys):
    zsh = script(capsys, "zsh")
    assert zsh.startswith("#compdef senpi-guard\n") and "bashcompinit" in zsh and "complete -F _senpi_guard" in zsh
    fish = script(capsys, "fish")
    lines = [line for line in fish.splitlines() if line and not line.startswith("#")]
    assert all(line.startswith("complete -c senpi-guard") for line in lines)
    assert {line.split(" -a ")[1].split()[0] for line in lines if " -a " in line} == set(COMMANDS)
    assert "-l dry-run" in fish and "-xa 'auto always never'" in fish
    assert "__fish_seen_subcommand_from daemon' -xa 'install uninstall status'" in fish
    assert "__fish_seen_subcommand_from completion' -xa 'bash zsh fish'" in fish
    for shell, text in (("zsh", zsh), ("fish", fish)):
        if shutil.which(shell) is None:
            continue  # (not installed here: the structure above is what is checked)
        flag = ["-n"] if shell == "zsh" else ["--no-execute"]
        assert subprocess.run([shell, *flag], input=text, text=True, capture_output=True).returncode == 0


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_every_command_is_in_every_script(capsys, shell):
    text = script(capsys, shell)
    assert all(name in text for name in COMMANDS)
