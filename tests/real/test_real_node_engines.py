"""The real senpi 2026.8.22-2 asks for node >= 24 (`engines` in its package.json); with an older
node of this machine's first on PATH (the system's node 20), `status` and `verify` name that node as
too old for it, and say what to do. With node 24 first, neither says anything of it."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import HANG_S
from realsenpi import path_with, senpi_guard

pytestmark = pytest.mark.real


def older_node() -> Path:
    """The folder of a node older than 24 on this machine (PATH, then the system's)."""
    folders = [*os.environ.get("PATH", "").split(os.pathsep), "/usr/local/bin", "/usr/bin"]
    for folder in dict.fromkeys(f for f in folders if f):
        node = Path(folder) / "node"
        if node.is_file() and os.access(node, os.X_OK):
            out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=HANG_S).stdout
            if (major := re.match(r"v(\d+)\.", out)) and int(major[1]) < 24:
                return node.parent
    pytest.skip("no node older than 24 on this machine")


def test_a_node_older_than_senpis_engines_is_named_in_status_and_verify(full_senpi, monkeypatch):
    monkeypatch.delenv("SENPI_GUARD_NODE", raising=False)
    manifest = json.loads((full_senpi.package_dir / "package.json").read_text())
    assert manifest["version"] == "2026.8.22-2" and manifest["engines"]["node"] == ">=24.0.0"
    old = {"PATH": path_with(older_node())}
    status = senpi_guard("status", "--root", full_senpi.package_dir, "--json", env=old)
    (row,) = json.loads(status.stdout)["installs"]
    said = (
        f"{row['node']['version']} is older than senpi 2026.8.22-2 needs (>=24.0.0); "
        "put node 24 first on PATH or set SENPI_GUARD_NODE"
    )
    assert row["node"]["problem"] == said, row["node"]
    status = senpi_guard("status", "--root", full_senpi.package_dir, env=old)
    assert f"  node      {said}" in status.stdout.splitlines(), status.stdout
    verify = senpi_guard("verify", "--fresh", "--root", full_senpi.package_dir, env=old)
    assert f"node     {said}" in verify.stdout.splitlines(), verify.stdout + verify.stderr

    # node 24 first on PATH: nothing to say (the check can pass)
    status = senpi_guard(
        "status", "--root", full_senpi.package_dir, "--json", env={"PATH": path_with(full_senpi.node_bin)}
    )
    (row,) = json.loads(status.stdout)["installs"]
    assert row["node"]["version"].startswith("v24.") and row["node"]["problem"] is None, row["node"]
