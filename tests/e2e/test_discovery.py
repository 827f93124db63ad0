"""Discovery through the real package managers' own global layouts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import SHAPE_REL, add_path, run_cli, sha, tool
from realsenpi import node24_bin

from senpi_guard.demo import sample


def discovered(capsys) -> list[dict]:
    _code, out, err = run_cli(capsys, "status", "--json")
    assert out, err
    return json.loads(out)["installs"]


def test_npm_global_prefix_is_honoured(env, tarballs, capsys):
    sample.npm_install_global(tarballs[2], env / "npm-global")
    (row,) = discovered(capsys)
    assert row["manager"] == "npm" and row["version"] == "2026.8.1"
    assert row["package_dir"] == str(env / "npm-global/lib/node_modules/@code-yeongyu/senpi")


def test_status_leaves_no_package_manager_logs(env, tarballs, capsys, monkeypatch, given_tmp):
    """A read-only command asks npm where its global root is; npm must not leave a debug log
    behind (one file per run in ~/.npm/_logs otherwise), nor, on node 24, node's compile cache in
    the temp folder (a /tmp/node-compile-cache made by root's or one user's npm is one no other
    user's node can keep its cache in)."""
    monkeypatch.delenv("npm_config_cache", raising=False)
    monkeypatch.delenv("NPM_CONFIG_CACHE", raising=False)
    sample.npm_install_global(tarballs[2], env / "npm-global")
    add_path(monkeypatch, node24_bin())  # (npm on node >= 22 keeps a compile cache)
    logs = env / "home" / ".npm" / "_logs"
    before = sorted(logs.iterdir()) if logs.is_dir() else []
    for _ in range(2):
        assert len(discovered(capsys)) == 1
        monkeypatch.setenv("XDG_STATE_HOME", str(env / f"fresh-state-{_}"))  # (no cached answers)
    assert (sorted(logs.iterdir()) if logs.is_dir() else []) == before
    assert list(given_tmp.iterdir()) == []


def test_nothing_installed_still_says_the_extension_is_there(env, tarballs, capsys, isolated_dirs):
    """senpi uninstalled after `apply`: the extension left in the agent dir still works for a senpi
    that comes back; status says it is there."""
    pkg = sample.npm_install_global(tarballs[2], env / "npm-global")
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    subprocess.run(["npm", "uninstall", "-g", "@code-yeongyu/senpi"], check=True, capture_output=True)
    code, _, err = run_cli(capsys, "status")
    installed = isolated_dirs / "agent" / "extensions" / "senpi-guard-directive-dedupe.js"
    assert code == 1 and "no senpi install found" in err and f"installed at {installed}" in err
    assert len(err.splitlines()) == 1


def test_nothing_installed_revert_and_uninstall_still_take_the_extension_out(env, tarballs, capsys, isolated_dirs):
    """senpi uninstalled after `apply`: revert takes out the extension apply wrote (measured before:
    "no senpi install found", and uninstall left the file for a senpi that comes back to load)."""
    pkg = sample.npm_install_global(tarballs[2], env / "npm-global")
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    subprocess.run(["npm", "uninstall", "-g", "@code-yeongyu/senpi"], check=True, capture_output=True)
    installed = isolated_dirs / "agent" / "extensions" / "senpi-guard-directive-dedupe.js"
    assert installed.is_file()
    code, _, err = run_cli(capsys, "status")
    assert code == 1 and f"installed at {installed} (`senpi-guard revert` takes senpi-guard's own file out)" in err, err
    code, _, err = run_cli(capsys, "revert", "--root", pkg)  # (a named install that is gone: refused)
    assert code == 1 and installed.is_file(), err
    code, out, err = run_cli(capsys, "revert")
    assert code == 0 and not installed.exists(), out + err
    flat = " ".join(out.split())  # (the path on a line of its own where the terminal is narrower)
    assert f"extension {installed}" in flat and "installed -> absent" in flat, out
    code, _, err = run_cli(capsys, "revert")  # (nothing left anywhere: as before, no install found)
    assert code == 1 and "no senpi install found" in err
    assert run_cli(capsys, "apply", "--root", sample.npm_install_global(tarballs[2], env / "again"))[0] == 0
    subprocess.run(["npm", "uninstall", "-g", "@code-yeongyu/senpi"], check=True, capture_output=True)
    code, out, err = run_cli(capsys, "uninstall")
    assert code == 0 and not installed.exists(), out + err


def test_nothing_installed_lists_every_place_searched(env, capsys):
    code, _out, err = run_cli(capsys, "status")
    assert code == 1
    assert "no senpi install found" in err and "senpi-guard demo" in err and len(err.splitlines()) == 1
    for place in ("npm root -g", "$BUN_INSTALL", "`senpi` in every PATH folder"):
        assert place in err


def test_nvm_versions_are_all_found(env, tarballs, capsys, monkeypatch):
    nvm = env / "nvm"
    for version, shape in (("v22.1.0", 1), ("v24.3.0", 2)):
        sample.npm_install_global(tarballs[shape], nvm / "versions/node" / version)
    monkeypatch.setenv("NVM_DIR", str(nvm))
    rows = discovered(capsys)
    assert sorted(r["version"] for r in rows) == ["2026.7.30", "2026.8.1"]
    assert {r["manager"] for r in rows} == {"npm (nvm)"}


@pytest.mark.parametrize(
    ("variable", "layout", "manager"),
    [
        ("FNM_DIR", "node-versions/v24.3.0/installation", "npm (fnm)"),
        ("VOLTA_HOME", "tools/image/packages/@code-yeongyu/senpi", "npm (volta)"),
        ("ASDF_DATA_DIR", "installs/nodejs/24.3.0", "npm (asdf)"),
    ],
)
def test_node_version_managers(env, tarballs, capsys, monkeypatch, variable, layout, manager):
    home = env / variable.lower()
    sample.npm_install_global(tarballs[2], home / layout)
    monkeypatch.setenv(variable, str(home))
    (row,) = discovered(capsys)
    assert row["manager"] == manager and row["version"] == "2026.8.1"
    assert row["package_dir"] == str(home / layout / "lib/node_modules/@code-yeongyu/senpi")


def test_senpi_on_path_symlink_is_followed(env, tarballs, capsys, monkeypatch):
    prefix = env / "elsewhere"
    sample.npm_install_global(tarballs[2], prefix)
    add_path(monkeypatch, prefix / "bin")
    (row,) = discovered(capsys)
    assert Path(row["package_dir"]).resolve() == (prefix / "lib/node_modules/@code-yeongyu/senpi").resolve()


def test_pnpm_global_install_found_once_and_store_untouched(env, tarballs, capsys, monkeypatch):
    pnpm = tool("pnpm")
    home = env / "pnpm-home"
    monkeypatch.setenv("PNPM_HOME", str(home))
    add_path(monkeypatch, Path(pnpm).parent, home / "bin")
    subprocess.run([pnpm, "add", "-g", str(tarballs[3])], check=True, capture_output=True)
    (row,) = discovered(capsys)  # project dir, its hash symlink and the PATH shim: one install
    assert row["manager"] == "pnpm" and row["state"] == "unpatched"
    target = Path(row["package_dir"]) / SHAPE_REL[3]
    inode = target.stat().st_ino
    store_files = [
        p for p in (home / "store").glob("v*/files/**/*") if p.is_file() and p.stat().st_ino == inode
    ]  # the content-addressed copies
    assert store_files and target.stat().st_nlink >= 2
    before = sha(target)
    assert run_cli(capsys, "apply")[0] == 0
    assert all(sha(p) == before for p in store_files)
    assert sha(target) != before
    assert discovered(capsys)[0]["state"] == "patched"


def test_a_pnpm_install_removed_after_apply_is_reverted_in_pnpms_store(env, tarballs, capsys, monkeypatch):
    """pnpm keeps a removed (or updated) version's folder in its store and gives it back to the next
    install of that version: senpi-guard's edit there is reverted by `revert` (and `uninstall`), or
    the next install would come back patched, its backup gone (measured before: left patched)."""
    pnpm = tool("pnpm")
    home = env / "pnpm-home"
    monkeypatch.setenv("PNPM_HOME", str(home))
    add_path(monkeypatch, Path(pnpm).parent, home / "bin")
    subprocess.run([pnpm, "add", "-g", str(tarballs[3])], check=True, capture_output=True)
    (row,) = discovered(capsys)
    target = Path(row["package_dir"]).resolve() / SHAPE_REL[3]
    before = sha(target)
    assert run_cli(capsys, "apply")[0] == 0 and sha(target) != before
    subprocess.run([pnpm, "remove", "-g", "@code-yeongyu/senpi"], check=True, capture_output=True)
    assert target.is_file()  # (the store keeps it)
    code, out, err = run_cli(capsys, "revert")
    assert code == 0, out + err
    assert sha(target) == before
    subprocess.run([pnpm, "add", "-g", str(tarballs[3])], check=True, capture_output=True)
    (again,) = discovered(capsys)  # (held by the revert until the next apply, and as it was installed)
    assert again["state"] == "held" and sha(Path(again["package_dir"]) / SHAPE_REL[3]) == before


def test_bun_global_install_and_launcher(env, tarballs, capsys, monkeypatch):
    bun = tool("bun")
    home = env / "bun-home"
    monkeypatch.setenv("BUN_INSTALL", str(home))
    subprocess.run([bun, "add", "-g", str(tarballs[2])], check=True, capture_output=True)
    (row,) = discovered(capsys)
    assert row["manager"] == "bun"
    target = Path(row["package_dir"]) / SHAPE_REL[2]
    cache = [p for p in (home / "install/cache").rglob("prompt-bridge.js")]
    before = sha(target)
    assert run_cli(capsys, "apply")[0] == 0
    assert cache and all(sha(p) == before for p in cache)
    # `senpi update` rewrites ~/.bun/bin/senpi into a launcher script: still found, still one
    launcher = home / "bin" / "senpi"
    launcher.unlink()
    launcher.write_text(f"#!/bin/sh\nexec '{bun}' '{row['package_dir']}/dist/cli.js' \"$@\"\n")
    launcher.chmod(0o755)
    add_path(monkeypatch, home / "bin")
    monkeypatch.setenv("BUN_INSTALL", str(env / "no-bun-here"))
    (row2,) = discovered(capsys)
    assert row2["package_dir"] == row["package_dir"] and row2["state"] == "patched"


def test_yarn_global_dir(env, tarballs, capsys, monkeypatch):
    yarn = tool("yarn")
    monkeypatch.setenv("YARN_GLOBAL_FOLDER", str(env / "yarn-global"))
    add_path(monkeypatch, Path(yarn).parent)
    subprocess.run(
        [yarn, "global", "add", "--prefix", str(env / "yarn-bin"), str(tarballs[1])], check=True, capture_output=True
    )
    (row,) = discovered(capsys)
    assert row["manager"] == "yarn" and row["version"] == "2026.7.30"


def test_bun_compiled_binary_is_unsupported_and_untouched(env, capsys, monkeypatch, tmp_path):
    bun = tool("bun")
    src = tmp_path / "entry.js"
    src.write_text('console.log("@code-yeongyu/senpi single binary");')
    bindir = tmp_path / "compiled"
    bindir.mkdir()
    subprocess.run(  # (in the test's folder: bun writes its scratch binary in the folder it runs in)
        [bun, "build", "--compile", str(src), "--outfile", str(bindir / "pi")],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    before = sha(bindir / "pi")
    add_path(monkeypatch, bindir)
    (row,) = discovered(capsys)
    assert row["state"] == "unsupported" and "single binary" in row["detail"]
    code, out, _ = run_cli(capsys, "apply")
    assert code == 1 and "unsupported" in out
    assert sha(bindir / "pi") == before
