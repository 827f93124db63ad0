"""`senpi-guard uninstall` on real builds, as a user runs it: the dist-only 2026.8.9 and 2026.8.1 in
two npm prefixes (2026.8.1's `senpi` shadowed on PATH), the full 2026.8.22-2 with its extension in
the user's agent dir and, through `apply --here`, in a project's; the user service written. After it,
every file of every senpi is byte-exact and no file or folder senpi-guard made is left."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import HANG_S
from realsenpi import senpi_guard
from usermanager import user_manager

from senpi_guard.keep import service

pytestmark = pytest.mark.real

NAME = "senpi-guard-directive-dedupe.js"


def everything(*roots: Path) -> dict[str, str]:
    seen = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            if path.is_symlink():
                seen[str(path)] = "link:" + os.readlink(path)
            else:
                seen[str(path)] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return seen


def test_uninstall_on_real_builds_leaves_every_senpi_byte_exact_and_nothing_it_made(
    dist_only, full_senpi, env, isolated_dirs, monkeypatch, tmp_path_factory
):
    monkeypatch.delenv("SENPI_CODING_AGENT_DIR")  # senpi's default agent dir, and a project's
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    monkeypatch.setenv("npm_config_cache", str(tmp_path_factory.mktemp("npm-cache")))  # (npm's, not ours)
    newer, older = dist_only("2026.8.9", env / "prefix-8.9"), dist_only("2026.8.1", env / "prefix-8.1")
    bins = [env / "prefix-8.9" / "bin", env / "prefix-8.1" / "bin", full_senpi.prefix / "bin"]
    monkeypatch.setenv("PATH", os.pathsep.join([*map(str, bins), os.environ["PATH"]]))
    home = env / "home"
    project = home / "code" / "proj"
    (project / ".senpi" / "agent").mkdir(parents=True)  # the project's own agent dir
    roots = (env, isolated_dirs, full_senpi.package_dir)
    before = everything(*roots)
    try:
        applied = senpi_guard("apply", "--json")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        patched = {r["version"] for r in json.loads(applied.stdout)["installs"] if r["state"] == "patched"}
        assert {"2026.8.9", "2026.8.1", "2026.8.22-2"} <= patched
        here = senpi_guard("apply", "--here", cwd=project)
        assert here.returncode == 0, here.stdout + here.stderr
        assert (project / ".senpi" / "agent" / "extensions" / NAME).is_file()
        assert (home / ".senpi" / "agent" / "extensions" / NAME).is_file()
        with user_manager(monkeypatch, isolated_dirs / "xdg_config_home", tmp_path_factory.mktemp("manager")):
            installed = senpi_guard("daemon", "install")  # (enabled, then stopped: no watcher of its own runs)
            assert installed.returncode == 0 and service.systemd_unit_path().is_file(), installed.stderr
            stop = ["systemctl", "--user", "stop", service.UNIT_NAME]
            subprocess.run(stop, check=True, capture_output=True, timeout=HANG_S)
            assert everything(*roots) != before  # (the comparison below can fail)

            done = senpi_guard("uninstall", "--json")  # (disables the service)
        assert done.returncode == 0, done.stdout + done.stderr
        doc = json.loads(done.stdout)
        assert {str(newer), str(older), str(full_senpi.package_dir)} <= {
            r["package_dir"] for r in doc["installs"] if r["changed"]
        }
        after = everything(*roots)
        assert sorted(set(after) ^ set(before)) == []  # nothing made is left, nothing of senpi's is gone
        assert after == before  # every file byte-exact
    finally:
        senpi_guard("revert", "--root", full_senpi.package_dir)  # (the session's install, for the next test)
