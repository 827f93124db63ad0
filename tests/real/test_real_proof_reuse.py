"""On the real 2026.8.22-2: the extension's proof through senpi's own loader is remembered by the
bytes of every file node loaded for it. A reinstall of the same build (new inodes, same bytes)
reuses it; one changed byte in a file the loader imported proves afresh. `verify` right after
`apply` runs neither layer's replay again (the dist replay apply ran before its write shares a key
with verify's after it); one byte in a script beside the patched module, or `--fresh`, runs it.
Whatever the proof's node writes to its temp folder (jiti's cache of the extension senpi's loader
transpiled) stays in its replay folder: the user's temp folder gets nothing of it."""

from __future__ import annotations

import json
import os
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


def test_the_loader_proof_follows_the_bytes_it_loaded(full_senpi, tmp_path, monkeypatch, isolated_dirs, given_tmp):
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

    result = senpi_guard("verify", "--root", package_dir, "--fresh", "--json")
    assert result.returncode == 0 and REUSED not in result.stdout, result.stdout + result.stderr
    # three fresh proofs through senpi's loader, and none left jiti's cache in the user's temp folder
    # (as root, its replays run as `nobody`: a /tmp/jiti made by them is one every later senpi reads)
    left = {p.name: p.lstat().st_uid for p in given_tmp.iterdir()}
    assert "jiti" not in left and set(left.values()) <= {os.geteuid()}, left


def verify_reused(package_dir: Path, *extra: str) -> dict[str, bool]:
    """Which layers' replays `verify` did not run again (the dist layer's directive-dedupe line)."""
    result = senpi_guard("verify", "--root", package_dir, "--json", *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    shown = json.loads(result.stdout)
    (dist,) = [row for row in shown["installs"] if row["patch"] == "directive-dedupe"]
    (layer,) = shown["extension"]
    reused = {"dist": dist["verification"]["reused_from"], "extension": layer["verification"]["reused_from"]}
    for name, row in (("dist", dist), ("extension", layer)):
        assert (reused[name] is not None) == (REUSED in row["detail"]), row  # (the line says it as JSON does)
    return {name: when is not None for name, when in reused.items()}


def test_verify_after_apply_runs_no_replay_again_until_a_byte_or_fresh_says_so(
    full_senpi, tmp_path, monkeypatch, isolated_dirs
):
    prefix = tmp_path / "prefix"
    shutil.copytree(full_senpi.prefix, prefix, symlinks=True)
    package_dir = prefix / SCOPED
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    applied = senpi_guard("apply", "--root", package_dir)
    assert applied.returncode == 0 and REUSED not in applied.stdout, applied.stdout + applied.stderr
    assert verify_reused(package_dir) == {"dist": True, "extension": True}
    assert verify_reused(package_dir, "--fresh") == {"dist": False, "extension": False}

    folder = package_dir / "dist" / "core" / "extensions" / "builtin" / "claude-sdk-oauth"
    neighbour = next(p for p in sorted(folder.glob("*.js")) if b"senpi-guard" not in p.read_bytes())
    neighbour.write_bytes(neighbour.read_bytes() + b"\n")  # what the patched module could import changed
    assert verify_reused(package_dir)["dist"] is False
