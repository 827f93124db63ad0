"""The README's uninstall block, run as written by a user whose HOME holds a senpi that senpi-guard
patched, its extension and its service: afterwards every file and folder is as before senpi-guard
came (senpi's own bytes and folders too). `pipx` and `uv` are stand-ins that log their arguments:
the tool itself is what they would remove."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import HANG_S
from usermanager import user_manager

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def uninstall_block() -> str:
    text = README.read_text()
    section = text[text.index("## Uninstall") :]
    return re.search(r"```sh\n(.*?)```", section, re.S)[1]


def everything(root: Path, skip: Path) -> dict[str, str]:
    """Every file (its digest) and folder under root, but what is under `skip`."""
    return {
        str(p): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in [root, *root.rglob("*")]
        if not p.is_relative_to(skip) and not p.is_symlink()
    }


def test_the_readme_names_the_command_and_each_way_to_remove_the_tool():
    block = uninstall_block()
    assert "senpi-guard uninstall" in block and "rm -rf" not in block
    assert "bash scripts/install.sh --uninstall" in block  # (the README's own install line's undo)
    assert "pipx uninstall senpi-guard" in block and "uv tool uninstall senpi-guard" in block


def test_the_readme_uninstall_leaves_nothing_senpi_guard_made(tmp_path, npm_install, monkeypatch, tmp_path_factory):
    home = tmp_path / "home"
    (home / ".senpi" / "agent" / "sessions").mkdir(parents=True)  # senpi's own: kept
    pkg = npm_install(2, prefix=tmp_path / "prefix")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    log = tmp_path / "npm-cache" / "tools.log"  # (outside what is compared, as npm's cache)
    cache = log.parent
    cache.mkdir()
    (stubs / "senpi-guard").write_text(f'#!/bin/sh\nexec {sys.executable} -m senpi_guard "$@"\n')
    for name in ("pipx", "uv"):
        (stubs / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n')
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    node_dirs = {str(Path(shutil.which(t)).parent) for t in ("node", "npm")}
    path = os.pathsep.join([str(stubs), str(tmp_path / "prefix" / "bin"), *sorted(node_dirs), "/usr/bin", "/bin"])
    # (npm, which discovery asks where its globals are, keeps its cache and logs outside what is compared)
    env = {"HOME": str(home), "PATH": path, "LANG": "C.UTF-8", "npm_config_cache": str(tmp_path / "npm-cache")}
    before = everything(tmp_path, cache)

    def user(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["senpi-guard", *args], capture_output=True, text=True, timeout=HANG_S, env=env)

    applied = user("apply")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert (home / ".senpi" / "agent" / "extensions" / "senpi-guard-directive-dedupe.js").is_file()
    with user_manager(monkeypatch, home / ".config", tmp_path_factory.mktemp("manager")) as runtime:
        env["XDG_RUNTIME_DIR"] = str(runtime)  # (a user service manager: install enables, uninstall disables)
        installed = user("daemon", "install")
        assert installed.returncode == 0, installed.stderr
        stop = ["systemctl", "--user", "stop", "senpi-guard.service"]  # (enabled still; its watcher stopped)
        subprocess.run(stop, env=env, check=True, capture_output=True, timeout=HANG_S)
        assert (home / ".config" / "systemd" / "user" / "senpi-guard.service").is_file()
        assert everything(tmp_path, cache) != before  # (the check can fail)
        assert everything(pkg, cache) != {k: v for k, v in before.items() if k.startswith(str(pkg))}

        done = subprocess.run(
            ["sh", "-e", "-c", uninstall_block()], capture_output=True, text=True, timeout=HANG_S, env=env, cwd=ROOT
        )
    assert done.returncode == 0 and done.stderr == "", done.stdout + done.stderr
    assert everything(tmp_path, cache) == before
    assert not log.exists()  # (pipx and uv are named for those who installed with them, not run)
