"""On the real 2026.8.22-2: the extension's proof through senpi's own loader is remembered by the
bytes of every file node loaded for it. A reinstall of the same build (new inodes, same bytes)
reuses it; one changed byte in a file the loader imported proves afresh; `verify` always does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from realsenpi import SCOPED, senpi_guard

pytestmark = pytest.mark.real

REUSED = "the identical replay passed at"


def reinstall(package_dir: Path) -> None:
    """What npm does on a reinstall: the new package copied beside, then renamed into place."""
    fresh = package_dir.with_name("senpi.new")
    shutil.copytree(package_dir, fresh, symlinks=True)
    old = package_dir.rename(package_dir.with_name("senpi.old"))
    fresh.rename(package_dir)
    shutil.rmtree(old)


def extension_detail(package_dir: Path) -> str:
    result = senpi_guard("apply", "--root", package_dir, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    (layer,) = json.loads(result.stdout)["extension"]
    assert layer["ok"] and layer["verification"]["host"] == "senpi", layer
    return layer["detail"]


def test_the_loader_proof_follows_the_bytes_it_loaded(full_senpi, tmp_path, monkeypatch, isolated_dirs):
    prefix = tmp_path / "prefix"
    shutil.copytree(full_senpi.prefix, prefix, symlinks=True)  # (ours to change: the shared one is read-only)
    package_dir = prefix / SCOPED
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    assert REUSED not in extension_detail(package_dir)
    lists = json.loads(next(isolated_dirs.rglob("extension-proofs-imports.json")).read_text())
    (imported,) = lists.values()
    dependency = package_dir / "node_modules" / "@earendil-works" / "pi-agent-core" / "dist" / "index.js"
    assert str(dependency) in imported and str(package_dir / "dist" / "core" / "extensions" / "loader.js") in imported

    senpi_guard("revert", "--root", package_dir)
    reinstall(package_dir)
    assert REUSED in extension_detail(package_dir)  # same bytes, new inodes: the proof holds

    senpi_guard("revert", "--root", package_dir)
    dependency.write_bytes(dependency.read_bytes() + b"\n// one byte more\n")
    reinstall(package_dir)
    assert REUSED not in extension_detail(package_dir)  # a file it loaded changed: proven afresh

    result = senpi_guard("verify", "--root", package_dir, "--json")
    assert result.returncode == 0 and REUSED not in result.stdout, result.stdout + result.stderr
