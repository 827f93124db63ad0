"""The README's install line, `bash scripts/install.sh`, on a machine with Python and node alone:
run as a user with a bare environment (env -i: HOME, PATH, LANG), no pipx, no uv, no root's HOME.
It makes its venv, links `senpi-guard` into ~/.local/bin and says how to put that on PATH; run again
it upgrades; a `senpi-guard` it did not link is refused and left; `--uninstall` takes out what it
made. The real pip and the real build backend (from PyPI, as a user's would be)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import HANG_S

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install.sh"
pytestmark = pytest.mark.slow


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    folders = dict.fromkeys(str(Path(shutil.which(t)).parent) for t in ("python3", "node"))
    path = ":".join([*folders, "/usr/bin", "/bin"])
    env = {"HOME": str(home), "PATH": path, "LANG": "C.UTF-8"}
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=HANG_S, env=env, cwd=home
    )


def test_install_from_nothing_then_upgrade_then_uninstall(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    done = run(home)
    assert done.returncode == 0, done.stdout + done.stderr
    link = home / ".local" / "bin" / "senpi-guard"
    venv = home / ".local" / "share" / "senpi-guard-venv"
    assert link.is_symlink() and Path(link.readlink()) == venv / "bin" / "senpi-guard"
    version = subprocess.run([str(link), "--version"], capture_output=True, text=True, timeout=HANG_S)
    assert version.returncode == 0 and version.stdout.startswith("senpi-guard ")
    assert f"{home}/.local/bin is not on your PATH" in done.stdout
    assert f'export PATH="{home}/.local/bin:$PATH"' in done.stdout and "next: senpi-guard status" in done.stdout
    again = run(home)  # (after a `git pull`: the same venv, upgraded)
    assert again.returncode == 0 and link.resolve() == (venv / "bin" / "senpi-guard").resolve(), again.stderr
    gone = run(home, "--uninstall")
    assert gone.returncode == 0 and not link.exists() and not venv.exists(), gone.stdout + gone.stderr


def test_a_senpi_guard_it_did_not_link_is_refused_and_left(tmp_path):
    home = tmp_path / "home"
    theirs = home / ".local" / "bin" / "senpi-guard"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("#!/bin/sh\necho pipx's\n")
    done = run(home)
    assert done.returncode == 1 and done.stdout == "", done.stdout
    assert done.stderr.count("\n") == 1 and f"{theirs} is there and is not this installer's link" in done.stderr
    assert theirs.read_text() == "#!/bin/sh\necho pipx's\n"
    assert not (home / ".local" / "share").exists()  # (nothing made)
    assert run(home, "--bogus").returncode == 1
