"""The real front door (`python -m senpi_guard`) remembers what a `status`, and an `apply` with
nothing to change, said, and says it again without loading the rest of senpi-guard, but never once
anything it read has changed: a target put back by hand, a watcher started or gone. Whether a run
was replayed is seen from `python -X importtime`: a replay never imports senpi_guard.cli."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG_S, SHAPE_REL, patched

from senpi_guard.demo import sample

pytestmark = pytest.mark.usefixtures("steady_mount_table")  # (a replay needs the mount table still: tests/mounts.py)


def console(*args: str | Path, importtime: bool = False) -> subprocess.CompletedProcess[str]:
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run(
        [sys.executable, *flags, "-m", "senpi_guard", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
    )


def replayed(done: subprocess.CompletedProcess[str]) -> bool:
    assert "import time:" in done.stderr  # (the flag took)
    return "senpi_guard.cli" not in done.stderr


def said(done: subprocess.CompletedProcess[str]) -> str:
    return "".join(line + "\n" for line in done.stderr.splitlines() if not line.startswith("import time:"))


@pytest.fixture
def applied(tmp_path) -> tuple[Path, bytes]:
    """A sample install patched by the console (so node's version and the package managers' answers
    are in this test's own cache: the runs after it need start no process)."""
    pkg = tmp_path / "senpi"
    sample.write_sample_package(pkg, 2, fillers=3)
    original = (pkg / SHAPE_REL[2]).read_bytes()
    done = console("apply", "--root", pkg)
    assert done.returncode == 0, done.stderr
    return pkg, original


def put_back(target: Path, original: bytes) -> None:
    scratch = target.with_name(".by-hand")
    scratch.write_bytes(original)
    scratch.replace(target)


def test_status_again_is_replayed_and_a_target_put_back_is_seen_at_once(applied):
    pkg, original = applied
    first = console("status", "--root", pkg)
    again = console("status", "--root", pkg, importtime=True)
    assert first.returncode == 0 and "patched" in first.stdout, first.stderr
    assert replayed(again) and (again.returncode, again.stdout, said(again)) == (0, first.stdout, first.stderr)
    put_back(pkg / SHAPE_REL[2], original)
    after = console("status", "--root", pkg, importtime=True)
    assert not replayed(after) and after.returncode == 1 and "unpatched" in after.stdout


def test_an_apply_with_nothing_to_change_is_replayed_until_a_target_is_put_back(applied):
    pkg, original = applied
    target = pkg / SHAPE_REL[2]
    first = console("apply", "--root", pkg)
    again = console("apply", "--root", pkg, importtime=True)
    assert first.returncode == 0 and "nothing changed" in first.stdout, first.stdout + first.stderr
    assert replayed(again) and (again.stdout, said(again)) == (first.stdout, first.stderr)
    put_back(target, original)
    repaired = console("apply", "--root", pkg, importtime=True)
    assert not replayed(repaired) and repaired.returncode == 0 and "-> patched" in repaired.stdout
    assert patched(target)
    settled = console("apply", "--root", pkg)  # (the repair wrote: not remembered; this one is)
    assert "nothing changed" in settled.stdout and replayed(console("apply", "--root", pkg, importtime=True))


def test_a_watcher_started_or_gone_is_seen_at_once(applied, isolated_dirs):
    pkg, _ = applied
    pid_file = isolated_dirs / "xdg_state_home" / "senpi-guard" / "watcher.json"
    assert "watcher: not running" in console("status", "--root", pkg).stdout
    assert "watcher: not running" in console("status", "--root", pkg).stdout
    hold = (  # (a watcher, as status knows one: the watcher lock held, its pid in the pid file)
        "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600); "
        f"fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep({HANG_S})"
    )
    lock = pid_file.with_name("watcher.lock")
    stand_in = subprocess.Popen([sys.executable, "-c", hold, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert stand_in.stdout.readline() == "held\n"
        pid_file.write_text(json.dumps({"pid": stand_in.pid, "since": 1e9, "roots": [str(pkg)]}))
        assert f"watcher: running, pid {stand_in.pid}" in console("status", "--root", pkg).stdout
        assert replayed(console("status", "--root", pkg, importtime=True))
    finally:
        stand_in.kill()
        stand_in.wait()
        stand_in.stdout.close()
    gone = console("status", "--root", pkg, importtime=True)  # (its pid file stays behind)
    assert not replayed(gone) and "watcher: not running" in gone.stdout


def test_a_replayed_answer_into_a_closed_pipe_is_quiet(applied):
    pkg, _ = applied
    first = console("status", "-v", "--root", pkg)
    read_end, write_end = os.pipe()
    os.close(read_end)  # (the reader is gone before a byte is written: `| head` that has had enough)
    try:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "senpi_guard", "status", "-v", "--root", str(pkg)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=HANG_S,
            check=False,
        )
    finally:
        os.close(write_end)
    assert first.returncode == 0 and first.stdout, first.stderr
    assert "senpi_guard.cli" not in done.stderr, said(done)  # (replayed)
    assert done.returncode == 1 and said(done) == "", said(done)


def test_metrics_carry_the_time_of_their_run_and_are_never_replayed(applied, tmp_path):
    pkg, _ = applied

    def stamp(text: str) -> str:
        return next(line for line in text.splitlines() if line.startswith("senpi_guard_status_timestamp_seconds"))

    first = console("status", "--root", pkg, "--format", "prometheus")
    again = console("status", "--root", pkg, "--format", "prometheus", importtime=True)
    assert first.returncode == again.returncode == 0 and not replayed(again), said(again)
    assert stamp(first.stdout) != stamp(again.stdout)
    textfile = tmp_path / "metrics"
    textfile.mkdir()
    for _ in range(2):
        done = console("status", "--root", pkg, "--textfile", textfile, importtime=True)
        assert not replayed(done) and (textfile / "senpi_guard.prom").is_file(), said(done)


def test_an_agent_dir_that_is_a_link_is_remembered_until_it_points_elsewhere(applied, isolated_dirs, tmp_path):
    """A dotfiles setup (the agent dir a link into a dotfiles folder): status is remembered, and a
    link pointed at another folder is seen at once."""
    pkg, _ = applied
    agent = isolated_dirs / "agent"
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    if agent.exists():  # (apply put the extension there)
        shutil.move(agent, dotfiles / "agent")
    else:
        (dotfiles / "agent").mkdir()
    agent.symlink_to(dotfiles / "agent")
    first = console("status", "--root", pkg)
    second = console("status", "--root", pkg, importtime=True)
    assert replayed(second) and second.stdout == first.stdout, said(second)
    (tmp_path / "empty").mkdir()
    agent.unlink()
    agent.symlink_to(tmp_path / "empty")
    moved = console("status", "--root", pkg, importtime=True)
    assert not replayed(moved) and moved.stdout != first.stdout, said(moved)
