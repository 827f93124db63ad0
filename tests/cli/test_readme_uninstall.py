"""The README's uninstall block, run as written on a machine where senpi-guard never wrote a config
(the commands it names are stand-ins that succeed: the tool itself is what is being removed)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def uninstall_block() -> str:
    text = README.read_text()
    section = text[text.index("### Uninstall") :]
    return re.search(r"```sh\n(.*?)```", section, re.S)[1]


def test_the_uninstall_runs_clean_without_a_config_folder_and_leaves_no_empty_folders(tmp_path):
    home = tmp_path / "home"
    (home / ".local" / "state" / "senpi-guard").mkdir(parents=True)
    (home / ".senpi" / "agent" / "extensions").mkdir(parents=True)  # emptied by `revert`
    (home / ".config" / "systemd" / "user").mkdir(parents=True)  # emptied by `daemon uninstall`
    (home / ".senpi" / "agent" / "sessions").mkdir()  # senpi's own: kept
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name in ("senpi-guard", "pipx", "uv"):
        (stubs / name).write_text("#!/bin/sh\nexit 0\n")
        (stubs / name).chmod(0o755)
    done = subprocess.run(
        ["sh", "-e", "-c", uninstall_block()],
        capture_output=True,
        text=True,
        timeout=60,
        env={"HOME": str(home), "PATH": f"{stubs}:/usr/bin:/bin"},
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert not (home / ".local" / "state" / "senpi-guard").exists()
    assert not (home / ".senpi" / "agent" / "extensions").exists()
    assert not (home / ".config" / "systemd" / "user").exists()
    assert (home / ".senpi" / "agent" / "sessions").is_dir()
