"""What a plain `status` pays: package managers asked at most once per ten minutes, the targets
looked for in the known shapes' folders before the rest of dist/ is walked."""

import json
import os
import shutil
import traceback
from pathlib import Path

from conftest import run_cli

from senpi_guard.demo import sample


def fake_npm(folder: Path, root: Path) -> Path:
    """An `npm` that answers `root -g` and counts how often it was asked."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "npm"
    script.write_text(f"#!/bin/sh\necho asked >> {folder / 'calls'}\necho {root}\n")
    script.chmod(0o755)
    return folder / "calls"


def test_status_asks_npm_at_most_once_per_ten_minutes(tmp_path, capsys, monkeypatch, isolated_dirs):
    home, root = tmp_path / "home", tmp_path / "global"
    home.mkdir()
    sample.write_sample_package(root / "@code-yeongyu" / "senpi", 2, fillers=0)
    calls = fake_npm(tmp_path / "bin", root)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/bin")
    for _ in range(3):
        code, out, err = run_cli(capsys, "status", "--json")
        assert code == 1 and json.loads(out)["installs"][0]["state"] == "unpatched", err
    assert calls.read_text().count("asked") == 1
    cache = next(isolated_dirs.rglob("probes.json"))
    answers = json.loads(cache.read_text())
    for entry in answers.values():  # eleven minutes later the answer is asked again
        entry[0] -= 660
    cache.write_text(json.dumps(answers))
    run_cli(capsys, "status")
    assert calls.read_text().count("asked") == 2
    (root / "@code-yeongyu" / "senpi" / "package.json").unlink()
    root.rename(tmp_path / "moved")  # the remembered folder is gone: asked again at once
    run_cli(capsys, "status")
    assert calls.read_text().count("asked") == 3
    code, _, _ = run_cli(capsys, "apply")  # apply never trusts the remembered answer
    assert calls.read_text().count("asked") == 4


def test_status_looks_in_the_shapes_folders_before_walking_dist(tmp_path, capsys, isolated_dirs):
    pkg = tmp_path / "pkg"
    sample.write_sample_package(pkg, 2, fillers=0)
    # a file elsewhere that mentions the function but cannot be read as UTF-8: a walk of all of
    # dist/ stops on it, a look in the shapes' folders never opens it
    (pkg / "dist" / "vendor").mkdir()
    (pkg / "dist" / "vendor" / "odd.js").write_bytes(b'const name = "buildPromptBlocks"; // \xff\xfe')
    code, out, err = run_cli(capsys, "status", "--root", pkg, "--json")
    assert code == 1 and json.loads(out)["installs"][0]["state"] == "unpatched", err
    code, out, err = run_cli(capsys, "apply", "--root", pkg)  # apply walks everything, and says so
    assert code == 1 and "odd.js mentions buildPromptBlocks but is not UTF-8" in out + err


def test_a_global_folder_that_was_never_made_is_not_asked_for_again(tmp_path, capsys, monkeypatch, isolated_dirs):
    """npm on a node whose global folder does not exist yet (a fresh node, node 24 from a package)
    answers a folder that is not there: remembered as such, not asked again on every status; once
    senpi is installed there, the remembered folder finds it."""
    home, root = tmp_path / "home", tmp_path / "global"
    home.mkdir()
    calls = fake_npm(tmp_path / "bin", root)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/bin")
    for _ in range(3):
        code, out, err = run_cli(capsys, "status", "--json")
        assert json.loads(out)["installs"] == [], err
    assert calls.read_text().count("asked") == 1
    sample.write_sample_package(root / "@code-yeongyu" / "senpi", 2, fillers=0)
    code, out, err = run_cli(capsys, "status", "--json")
    assert code == 1 and json.loads(out)["installs"][0]["state"] == "unpatched", err
    assert calls.read_text().count("asked") == 1


def test_apply_walks_dist_once_for_every_patch_and_reads_no_file_again_on_a_reinstall(
    tmp_path, capsys, monkeypatch, isolated_dirs
):
    """After an update nothing is remembered of where the targets are: one walk of dist/ per layer
    (the first patch's walk looks for every patch's targets; the next patch takes its answer from
    it). A reinstall of the same release (new inodes, the same bytes, here in another folder) reads
    only the files that defined them before. A second definition is still refused."""
    from senpi_guard.core import locate

    pkg = tmp_path / "pkg"
    sample.write_sample_package(pkg, 2, fillers=0)
    options = pkg / "dist" / "core" / "extensions" / "builtin" / "claude-sdk-oauth" / "options.js"
    options.write_text("export function buildClaudeSdkOauthQueryOptions(o) {\n  return { ...o };\n}\n")
    walkers: list[str] = []
    scanned: list[int] = []
    real_walk, real_find = locate.js_files, locate.find_exported_functions

    def walk(dist):
        walkers.append(traceback.extract_stack(limit=2)[0].name)
        return real_walk(dist)

    def find(files, names, also=()):
        files = list(files)
        scanned.append(len(files))
        return real_find(files, names, also)

    monkeypatch.setattr(locate, "js_files", walk)
    monkeypatch.setattr(locate, "find_exported_functions", find)
    pristine = tmp_path / "pristine"
    shutil.copytree(pkg, pristine, symlinks=True)
    code, out, err = run_cli(capsys, "apply", "--root", pkg, "--json")
    assert code == 0, out + err
    states = {row["patch"]: row["state"] for row in json.loads(out)["installs"]}
    assert states == {"directive-dedupe": "patched", "hand-fix-hooks": "clean"}, out
    assert walkers == ["locate_targets", "_find_host"]
    files = len(real_walk(pristine / "dist"))
    assert max(scanned) == files  # (the first time, every .js file is read)
    shutil.copytree(pristine, tmp_path / "again", symlinks=True)
    walkers.clear(), scanned.clear()
    code, out, err = run_cli(capsys, "apply", "--root", tmp_path / "again", "--json")
    assert code == 0 and [row["state"] for row in json.loads(out)["installs"]] == ["patched", "clean"], out + err
    assert max(scanned) <= 3 < files, scanned
    (pristine / "dist" / "copy.js").write_text(options.read_text())
    walkers.clear()
    code, out, err = run_cli(capsys, "apply", "--root", pristine)
    assert code == 1 and "2 definitions of buildClaudeSdkOauthQueryOptions" in out + err, out + err
    assert "copy.js" in out + err
