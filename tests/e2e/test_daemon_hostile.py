"""`daemon install | uninstall | status` against what a real machine can hold: a senpi-guard in a
folder with `$`, `%` and spaces in its name, environment values with line breaks, a file where the
systemd folder belongs, a folder where the unit belongs, a unit that is not text, and a senpi found
only through a prefix's bin folder on PATH.

The units are checked by systemd itself: `systemd-analyze verify`, then a real user manager
(`systemd --user`, in a private mount namespace where /run/systemd/system exists, since this
container was not booted with systemd) loads the unit and starts it, and the program it runs writes
down the argv and environment it received."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import HANG_S, add_path, run_cli, tree_entries, wait_for
from test_daemon import analyze, no_user_manager
from usermanager import user_manager

from senpi_guard.keep import service

SRC = Path(__file__).resolve().parents[2] / "src"
SYSTEMD = Path("/lib/systemd/systemd")


def unit_path(isolated_dirs: Path) -> Path:
    return isolated_dirs / "xdg_config_home" / "systemd" / "user" / service.UNIT_NAME


def start_under_user_manager(config_home: Path, work: Path, dump: Path) -> str:
    """Start senpi-guard.service (from config_home/systemd/user) under a real `systemd --user`;
    wait for its program to write `dump`; return `systemctl --user show` of the unit."""
    if os.geteuid() != 0 or shutil.which("unshare") is None or not SYSTEMD.exists():
        pytest.skip("a private user manager needs root, unshare and /lib/systemd/systemd")
    runtime = work / "runtime"
    runtime.mkdir(mode=0o700)
    script = textwrap.dedent(f"""\
        mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system || exit 90
        env -i XDG_RUNTIME_DIR={runtime} XDG_CONFIG_HOME={config_home} HOME={work} \\
            {SYSTEMD} --user > {work}/manager.log 2>&1 &
        manager=$!
        i=0; until [ -S {runtime}/systemd/private ]; do i=$((i+1)); [ $i -gt 100 ] && exit 91; sleep 0.1; done
        export XDG_RUNTIME_DIR={runtime}
        systemctl --user show -p LoadState -p LoadError -p ExecStart -p Environment {service.UNIT_NAME}
        systemctl --user start {service.UNIT_NAME} || exit 92
        i=0; until [ -s {dump} ]; do i=$((i+1)); [ $i -gt 100 ] && break; sleep 0.1; done
        systemctl --user stop {service.UNIT_NAME}
        kill $manager; wait $manager
        """)
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
    )
    if done.returncode == 90:
        pytest.skip(f"no private mount namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, f"{done.stdout}{done.stderr}{(work / 'manager.log').read_text()}"
    assert dump.exists(), f"the unit's program never ran: {done.stdout}"
    return done.stdout


def dumper(path: Path, dump: Path) -> Path:
    """A stand-in program that writes down the argv and environment it was started with."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"open({str(dump)!r}, 'w').write(json.dumps({{'argv': sys.argv, "
        "'env': dict(os.environ)}))\n"
    )
    path.chmod(0o755)
    return path


HOSTILE_ENV = {
    "NVM_DIR": "/n\r[Service]\rExecStartPre=/bin/false",  # a carriage return ends a systemd line
    "PNPM_HOME": "/p \"q\" 's' back\\slash %h %% $HOME ${HOME} $$ \t tab",
    "BUN_INSTALL": "/b\nEnvironment=INJECTED=1",
    "VOLTA_HOME": "/v\x1b[31m\x7f\u2028\x85 end\\",
}


def test_odd_path_and_values_reach_the_program_as_meant(tmp_path, monkeypatch, capsys, isolated_dirs):
    fake = dumper(tmp_path / "in $HOME ${X} 100% $$ ü;x" / "senpi-guard", tmp_path / "dump.json")
    monkeypatch.setattr(sys, "argv", [str(fake), "daemon", "install"])
    for name, value in HOSTILE_ENV.items():
        monkeypatch.setenv(name, value)
    meant = service.spec(service.SYSTEMD_PATH)
    assert meant.argv == [str(fake), "watch", "--quiet"]
    unit, dump = unit_path(isolated_dirs), tmp_path / "dump.json"

    # no user manager: nothing written, and the one command printed instead runs the same program
    no_user_manager(monkeypatch, tmp_path)
    code, out, err = run_cli(capsys, "daemon", "install")
    assert code == 1 and len(re.split(r"[\r\n]", err.strip())) == 1 and not unit.exists(), err
    [suggested] = out.splitlines()
    subprocess.run(["bash", "-c", suggested], check=True, timeout=HANG_S)
    assert json.loads(dump.read_text())["argv"] == [str(fake), "watch"]
    dump.unlink()

    # a real user manager: install writes the unit, systemd loads it and starts the program as meant
    with user_manager(monkeypatch, isolated_dirs / "xdg_config_home", tmp_path):
        code, _out, err = run_cli(capsys, "daemon", "install")
        assert code == 0 and unit.is_file(), err
        ran = wait_for(lambda: _dumped(dump), what="the unit's program to write down what it got")
        shown = subprocess.run(
            ["systemctl", "--user", "show", "-p", "LoadState", "-p", "ExecStart", service.UNIT_NAME],
            capture_output=True,
            text=True,
            timeout=HANG_S,
            check=True,
        ).stdout
    assert "LoadState=loaded" in shown and f"path={fake} ;" in shown, shown
    verified = analyze(unit, tmp_path / "run")
    assert verified.returncode == 0 and str(unit) not in verified.stderr, verified.stderr
    assert ran["argv"] == meant.argv
    assert {k: ran["env"].get(k) for k in meant.environment} == meant.environment
    assert {k: ran["env"][k] for k in HOSTILE_ENV} == HOSTILE_ENV and "INJECTED" not in ran["env"]


def _dumped(dump: Path) -> dict | None:
    """What the dumper wrote down, once it is all there."""
    try:
        return json.loads(dump.read_text())
    except (OSError, ValueError):
        return None


def test_argv0_of_a_program_with_a_dollar_is_its_path(tmp_path):
    """`python -m senpi_guard` finds its venv from argv[0]: systemd must pass the path as written."""
    python = tmp_path / "venv $HOME ${HOME} $$x" / "python"
    python.parent.mkdir()
    python.symlink_to(sys.executable)
    dump = tmp_path / "dump.json"
    code = f"import json; open({str(dump)!r}, 'w').write(json.dumps(open('/proc/self/cmdline').read().split('\\0')))"
    spec = service.ServiceSpec("argv0", [str(python), "-c", code, "$HOME", "100%"], {})
    config = tmp_path / "config"
    (config / "systemd" / "user").mkdir(parents=True)
    (config / "systemd" / "user" / service.UNIT_NAME).write_text(service.systemd_unit(spec))
    assert analyze(config / "systemd" / "user" / service.UNIT_NAME, tmp_path / "run").returncode == 0
    start_under_user_manager(config, tmp_path, dump)
    assert json.loads(dump.read_text())[:-1] == spec.argv


@pytest.mark.parametrize(
    ("folder", "named"),
    [
        ('q"uote', 'q"uote'),
        ("back\\slash", "back\\\\slash"),
        ("line\nbreak", "line\\nbreak"),
        ("bytes\udcff", "bytes\\udcff"),
    ],
)
def test_a_path_systemd_refuses_is_refused_and_nothing_written(
    tmp_path, monkeypatch, capsys, isolated_dirs, folder, named
):
    fake = tmp_path / folder / "senpi-guard"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setattr(sys, "argv", [str(fake)])
    code, _out, err = run_cli(capsys, "daemon", "install")
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert named in err and "install senpi-guard under a plain path" in err
    assert not (isolated_dirs / "xdg_config_home" / "systemd").exists()


def test_a_value_that_is_not_text_is_refused_by_name(monkeypatch, capsys, isolated_dirs):
    monkeypatch.setenv("NVM_DIR", "/home/u/.nvm\udcff")  # undecodable bytes in the environment
    code, _out, err = run_cli(capsys, "daemon", "install")
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "$NVM_DIR" in err and "not UTF-8" in err and "then run `senpi-guard daemon install` again" in err
    assert not (isolated_dirs / "xdg_config_home" / "systemd").exists()


# ---- a file where the folder belongs, a folder where the unit belongs, a unit that is not text ---
def _user_dir_is_a_file(unit: Path) -> Path:
    unit.parent.parent.mkdir(parents=True)
    unit.parent.write_text("not a folder\n")
    return unit.parent


def _systemd_dir_is_a_file(unit: Path) -> Path:
    unit.parents[2].mkdir(parents=True)
    unit.parents[1].write_text("not a folder\n")
    return unit.parents[1]


def _unit_is_a_folder(unit: Path) -> Path:
    unit.mkdir(parents=True)
    (unit / "kept").write_text("mine\n")
    return unit


def _unit_is_not_text(unit: Path) -> Path:
    unit.parent.mkdir(parents=True)
    unit.write_bytes(b"[Service]\nExecStart=/opt/\xff\xfe/senpi-guard watch\n")
    return unit


@pytest.mark.parametrize("action", ["install", "uninstall", "status"])
@pytest.mark.parametrize(
    ("layout", "advice"),
    [
        (_user_dir_is_a_file, "move that file aside"),
        (_systemd_dir_is_a_file, "move that file aside"),
        (_unit_is_a_folder, "move it aside"),
    ],
)
def test_a_blocked_unit_place_is_one_line_and_nothing_changes(capsys, isolated_dirs, action, layout, advice):
    unit = unit_path(isolated_dirs)
    blocker = layout(unit)
    before = tree_entries(isolated_dirs / "xdg_config_home")
    code, _out, err = run_cli(capsys, "daemon", action)
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert str(blocker) in err and advice in err and f"then run `senpi-guard daemon {action}` again" in err
    assert tree_entries(isolated_dirs / "xdg_config_home") == before


def test_a_unit_that_is_not_text(capsys, isolated_dirs, tmp_path, monkeypatch):
    """status says so in one line; install replaces it with a real unit; uninstall removes it."""
    unit = unit_path(isolated_dirs)
    _unit_is_not_text(unit)
    before = unit.read_bytes()
    code, _out, err = run_cli(capsys, "daemon", "status")
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert f"{unit} is not UTF-8 text" in err and "senpi-guard daemon install" in err
    assert unit.read_bytes() == before
    with user_manager(monkeypatch, isolated_dirs / "xdg_config_home", tmp_path):
        assert run_cli(capsys, "daemon", "install")[0] == 0
        assert service.read_systemd_unit(unit.read_text("utf-8"))[0][-2:] == ["watch", "--quiet"]
        unit.write_bytes(before)
        code, _out, err = run_cli(capsys, "daemon", "uninstall")
    assert code == 0 and not unit.exists(), err


# ---- the recorded PATH finds what `status` found -------------------------------------------------
def bare_status(argv: list[str], env: dict[str, str]) -> dict:
    """`status --json` with only the unit's environment (`env -i`), as the service would run it.
    PYTHONPATH only makes the checkout's code run rather than the venv's installed copy; discovery
    does not read it."""
    command = ["env", "-i", *(f"{k}={v}" for k, v in env.items()), f"PYTHONPATH={SRC}", *argv[:-2], "status", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=HANG_S, check=False)
    return json.loads(done.stdout)


def test_the_recorded_path_finds_a_senpi_found_only_on_path(
    env, npm_install, monkeypatch, capsys, isolated_dirs, tmp_path
):
    prefix = env / "only-on-path"
    pkg = npm_install(2, prefix=prefix)
    add_path(monkeypatch, prefix / "bin")  # the one way to this install: its prefix's bin folder
    _code, out, _err = run_cli(capsys, "status", "--json")
    found = sorted(row["package_dir"] for row in json.loads(out)["installs"])
    assert found == [str(pkg)], out
    with user_manager(monkeypatch, isolated_dirs / "xdg_config_home", tmp_path):
        assert run_cli(capsys, "daemon", "install")[0] == 0
    argv, recorded = service.read_systemd_unit(unit_path(isolated_dirs).read_text("utf-8"))
    bare = bare_status(argv, recorded)
    assert sorted(row["package_dir"] for row in bare["installs"]) == found, bare
    assert str(prefix / "bin") in recorded["PATH"].split(":")
    # the check can fail: the same run without that folder on PATH finds nothing
    without = ":".join(p for p in recorded["PATH"].split(":") if p != str(prefix / "bin"))
    assert bare_status(argv, {**recorded, "PATH": without})["installs"] == []
