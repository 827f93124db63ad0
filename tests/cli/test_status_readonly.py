"""`status` is read-only: after an apply (records, backups, the extension in the agent dir, a config),
running it, discovery included, changes no file or folder outside senpi-guard's cache folder, and
the package managers' answers it keeps land in that folder. `--exit-zero` turns "not patched" into
exit 0, never an error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_cli

from senpi_guard.demo import sample


def snapshot(*roots: Path, skip: Path) -> dict[str, tuple]:
    """Every file, folder and link under the roots: kind, mode, mtime and content."""
    seen: dict[str, tuple] = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            here = Path(folder)
            if here == skip or skip in here.parents:
                dirs.clear()
                continue
            st = here.lstat()
            seen[str(here)] = ("dir", st.st_mode, st.st_mtime_ns, tuple(sorted(dirs + files)))
            for name in files:
                path = here / name
                st = path.lstat()
                body = os.readlink(path) if path.is_symlink() else path.read_bytes()
                seen[str(path)] = ("file", st.st_mode, st.st_mtime_ns, body)
    return seen


@pytest.fixture
def applied(tmp_path, isolated_dirs, capsys) -> Path:
    pkg = tmp_path / "senpi"
    sample.write_sample_package(pkg, 2, fillers=3)
    (isolated_dirs / "xdg_config_home" / "senpi-guard").mkdir(parents=True)
    (isolated_dirs / "xdg_config_home" / "senpi-guard" / "config.toml").write_text('tags = ["ultrawork-mode"]\n')
    code, _, err = run_cli(capsys, "apply", "--root", pkg)
    assert code == 0, err
    return pkg


def test_status_writes_nothing_outside_the_cache_folder(applied, isolated_dirs, capsys):
    state = isolated_dirs / "xdg_state_home" / "senpi-guard"
    legacy = state / "probes.json"  # (where older versions kept the cache: left alone, not read)
    legacy.write_text("{not json")
    cache = isolated_dirs / "xdg_cache_home"
    cache.mkdir(exist_ok=True)  # (as ~/.cache is: making senpi-guard's folder in it is what the cache is for)
    assert (isolated_dirs / "agent" / "extensions").is_dir() and any(state.iterdir())
    before = snapshot(isolated_dirs, applied, skip=cache)
    for argv in (["status"], ["status", "--json"], ["status", "--root", applied], ["status", "-v"]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 0, (argv, out, err)
    assert snapshot(isolated_dirs, applied, skip=cache) == before
    kept = json.loads((cache / "senpi-guard" / "probes.json").read_text())
    assert kept and all(isinstance(v, list) for v in kept.values())  # discovery's answers, in the cache


def test_status_help_says_it_writes_only_to_the_cache(capsys):
    with pytest.raises(SystemExit):
        run_cli(capsys, "status", "--help")
    out = capsys.readouterr().out
    assert "writes nothing outside senpi-guard's cache folder" in " ".join(out.split())
    assert "--exit-zero" in out


def test_exit_zero_turns_not_patched_into_0_but_not_an_error(tmp_path, capsys):
    pkg = tmp_path / "senpi"
    sample.write_sample_package(pkg, 2, fillers=3)
    code, out, _ = run_cli(capsys, "status", "--root", pkg)
    assert code == 1 and "unpatched" in out
    code, out, _ = run_cli(capsys, "status", "--root", pkg, "--exit-zero")
    assert code == 0 and "unpatched" in out
    code, out, err = run_cli(capsys, "status", "--root", tmp_path / "missing", "--exit-zero", "--json")
    assert code == 1 and json.loads(out)["error"] and "no such directory" in err


def test_status_on_a_machine_senpi_guard_never_patched_makes_no_state_or_data_folder(tmp_path, isolated_dirs, capsys):
    """What status remembers (node's version, whose code a replay would run) is derived, so it is
    cache: measured before, a first status made the state folder with memo.json and its record of
    made folders."""
    pkg = tmp_path / "senpi"
    sample.write_sample_package(pkg, 2, fillers=3)
    cache = isolated_dirs / "xdg_cache_home"
    cache.mkdir(exist_ok=True)
    before = snapshot(isolated_dirs, pkg, skip=cache)
    for argv in (["status", "--root", pkg], ["status", "--root", pkg, "-v"], ["status"]):
        code, out, err = run_cli(capsys, *argv)
        assert code in (0, 1), (argv, out, err)  # ("not patched": 1)
    assert "not patched" in out or "no senpi install found" in err
    assert snapshot(isolated_dirs, pkg, skip=cache) == before
    assert (cache / "senpi-guard" / "memo.json").is_file()  # (what it remembered: in the cache)
