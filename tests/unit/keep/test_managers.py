"""keep/managers: which package managers /proc shows at work on an install, with real processes
(a script named `npm`, a child of it in the install, held on a real FIFO)."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

import pytest
from conftest import HANG_S, wait_for

from senpi_guard.keep import managers

pytestmark = pytest.mark.skipif(not managers.available(), reason="no /proc here")
# `npm DIR FIFO`: itself in a folder of its own, its child (a shell, no manager) in DIR, both held
# until the FIFO is opened for writing and closed
FAKE_NPM = """#!/bin/sh
sh -c 'cd "$0" && read line < "$1"' "$1" "$2"
"""  # (run as `npm DIR FIFO install`)


def _detached(script: str, *args: object, cwd: Path) -> int:
    """The pid of `bash -c SCRIPT ARGS…` started in the background (not senpi-guard's own child)."""
    started = subprocess.run(
        ["bash", "-c", f"{script} >/dev/null 2>&1 & echo $!", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=True,
    )
    return int(started.stdout)


def test_a_command_line_is_told_by_its_first_words():
    assert managers.manager_name(b"npm install -g x" + b" " * 40) == "npm"  # (node's process.title)
    assert managers.manager_name(b"node\0/usr/lib/node_modules/pnpm/bin/pnpm.cjs\0add\0-g\0x\0") == "pnpm"
    assert managers.manager_name(b"/usr/bin/node\0/opt/yarn/bin/yarn.js\0global\0add\0") == "yarn"
    assert managers.manager_name(b"/root/.bun/bin/bun\0add\0-g\0") == "bun"
    assert managers.manager_name(b"node\0/usr/lib/node_modules/npm/bin/npm-cli.js\0ci\0") == "npm"
    assert managers.manager_name(b"npm --prefix /opt/x install\0") == "npm"
    assert managers.manager_name(b"node\0/usr/lib/node_modules/yarn/bin/yarn.js\0") == "yarn"  # (bare: installs)
    assert managers.manager_name(b"python3\0-m\0senpi_guard\0watch\0npm\0") is None
    # running a script is no package manager at work, however long what it runs holds node_modules
    assert managers.manager_name(b"npm run dev" + b" " * 20) is None
    assert managers.manager_name(b"node\0/usr/lib/node_modules/yarn/bin/yarn.js\0dev\0") is None
    assert managers.manager_name(b"npm exec vite" + b" " * 20) is None
    assert managers.manager_name(b"") is None  # (a zombie's)


def test_install_dirs_are_the_package_and_the_node_modules_above(tmp_path):
    pkg = tmp_path / "lib/node_modules/@code-yeongyu/senpi"
    pkg.mkdir(parents=True)
    assert managers.install_dirs(pkg) == (str(pkg), str(tmp_path / "lib/node_modules"))
    bare = tmp_path / "somewhere/senpi"
    assert managers.install_dirs(bare) == (str(bare), str(bare.parent))


def _orphan_npm(tmp_path: Path, pkg: Path, detach: bool = True) -> tuple[int, Path, subprocess.Popen | None]:
    """A process named npm whose child works in `pkg`; detached, it is not senpi-guard's own."""
    bindir, fifo, away = tmp_path / "bin", tmp_path / "release", tmp_path / "away"
    for folder in (bindir, away):
        folder.mkdir(exist_ok=True)
    script = bindir / "npm"
    script.write_text(FAKE_NPM)
    script.chmod(0o755)
    os.mkfifo(fifo)
    if not detach:
        return 0, fifo, subprocess.Popen([str(script), str(pkg), str(fifo), "install"], cwd=away)
    out = subprocess.run(
        ["sh", "-c", '"$0" "$1" "$2" install >/dev/null 2>&1 & echo $!', str(script), str(pkg), str(fifo)],
        cwd=away,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout), fifo, None


def _release(fifo: Path) -> None:
    with fifo.open("w"):
        pass


def _held_child(pid: int) -> bool:
    """Whether npm's child shell is in its read (in the install) yet."""
    return any(
        os.readlink(f"/proc/{child}/cwd").endswith("senpi")
        for child in _children(pid)
        if os.path.exists(f"/proc/{child}/cwd")
    )


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            if int(stat[stat.rfind(b")") + 2 :].split()[1]) == pid:
                found.append(int(entry))
    return found


def test_a_manager_is_at_work_while_it_runs_and_not_after(tmp_path, caplog):
    pkg = tmp_path / "lib/node_modules/@code-yeongyu/senpi"
    pkg.mkdir(parents=True)
    other = tmp_path / "elsewhere/node_modules/senpi"
    other.mkdir(parents=True)
    pid, fifo, _ = _orphan_npm(tmp_path, pkg)
    tracker = managers.Tracker(HANG_S, interval=0)
    try:
        wait_for(lambda: _held_child(pid), what="the fake npm's child in the install")
        with caplog.at_level(logging.INFO, logger="senpi-guard.watch"):
            working = tracker.at_work([pkg, other])
            assert tracker.at_work([pkg, other]) == working
        assert list(working) == [pkg] and working[pkg].pid == pid and working[pkg].name == "npm"
        assert [r.getMessage() for r in caplog.records] == [f"waiting for npm (pid {pid}) to finish with {pkg}"]
    finally:
        _release(fifo)
    wait_for(lambda: not os.path.exists(f"/proc/{pid}/cmdline") or not tracker.at_work([pkg]), what="npm gone")
    assert tracker.at_work([pkg]) == {}


def test_a_manager_past_the_ceiling_is_let_go_with_a_warning(tmp_path, caplog):
    pkg = tmp_path / "lib/node_modules/@code-yeongyu/senpi"
    pkg.mkdir(parents=True)
    pid, fifo, _ = _orphan_npm(tmp_path, pkg)
    tracker = managers.Tracker(0.0, interval=0)
    try:
        wait_for(lambda: _held_child(pid), what="the fake npm's child in the install")
        with caplog.at_level(logging.INFO, logger="senpi-guard.watch"):
            assert tracker.at_work([pkg]) == {}
            assert tracker.at_work([pkg]) == {}
        warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert warned == [f"npm (pid {pid}) has been at work on {pkg} for over 0s; not waiting for it any longer"]
    finally:
        _release(fifo)


def test_a_manager_senpi_guard_started_itself_is_not_waited_for(tmp_path):
    pkg = tmp_path / "lib/node_modules/@code-yeongyu/senpi"
    pkg.mkdir(parents=True)
    _, fifo, own = _orphan_npm(tmp_path, pkg, detach=False)
    try:
        wait_for(lambda: _held_child(own.pid), what="the own npm's child in the install")
        assert managers.Tracker(HANG_S, interval=0).at_work([pkg]) == {}
    finally:
        _release(fifo)
        own.wait(timeout=HANG_S)


def test_a_global_install_names_where_it_writes_before_it_writes():
    assert managers.global_root(0, b"npm install -g --prefix /opt/p x.tgz   ") == "/opt/p/lib/node_modules"
    assert managers.global_root(0, b"npm\0install\0--prefix=/opt/q\0-g\0x\0") == "/opt/q/lib/node_modules"
    node_prefix = os.path.dirname(os.path.dirname(os.readlink("/proc/self/exe")))
    assert managers.global_root(os.getpid(), b"npm i -g x") == os.path.join(node_prefix, "lib", "node_modules")
    assert managers.global_root(os.getpid(), b"npm install x") is None  # (a project's own: not global)


def test_a_global_install_into_the_prefix_is_at_work_before_it_opens_a_file_there(tmp_path):
    """npm downloads and unpacks before it opens anything in the install (seen under load: the
    watcher's rescan patched while npm was still at work); its command line names the prefix."""
    prefix = tmp_path / "prefix"
    package_dir = prefix / "lib" / "node_modules" / "@code-yeongyu" / "senpi"
    package_dir.mkdir(parents=True)
    # a process called `npm` asked to install into that prefix, its cwd elsewhere, not senpi-guard's own
    pid = _detached('exec -a npm sh -c "sleep 600; :" install -g --prefix "$0" x', prefix, cwd=tmp_path)
    try:
        tracker = managers.Tracker(ceiling=HANG_S)
        found = wait_for(lambda: tracker.at_work([package_dir]), what="the install asked of npm seen at work")
        assert found[package_dir].pid == pid and found[package_dir].name == "npm"
    finally:
        os.kill(pid, 9)


def test_npm_stays_at_work_on_its_prefix_after_its_title_hides_it(tmp_path):
    """npm's command line names its --prefix for a moment only: it sets its process title to bare
    `npm`, then to `npm install x.tgz`, every flag gone (seen under load: a rescan patched what such
    an npm had just unpacked). The target seen first is kept for as long as that npm runs."""
    prefix = tmp_path / "prefix"
    package_dir = prefix / "lib" / "node_modules" / "@code-yeongyu" / "senpi"
    package_dir.mkdir(parents=True)
    script = (
        "setTimeout(()=>{process.title='npm'},1500);"
        "setTimeout(()=>{process.title='npm install x.tgz'},3000);setTimeout(()=>{},600000)"
    )
    pid = _detached('exec -a npm node -e "$1" install -g --prefix "$0" x', prefix, script, cwd=tmp_path)
    try:
        tracker = managers.Tracker(ceiling=HANG_S, interval=0.0)
        wait_for(lambda: package_dir in tracker.at_work([package_dir]), what="npm seen while its flags show")
        phases = set()
        while (title := Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]) != b"npm install x.tgz":
            phases.add(title)
            assert tracker.at_work([package_dir])[package_dir].pid == pid, title
        assert tracker.at_work([package_dir])[package_dir].pid == pid  # (its title names no prefix now)
        assert b"npm" in phases  # (the bare title was seen, and it stayed a manager at work there)
    finally:
        os.kill(pid, 9)


def test_npm_seen_only_after_its_title_hid_its_flags_is_placed_by_the_debug_log_it_holds(tmp_path):
    """The watcher looks at processes once a file changes, after npm has set its title: where npm
    writes is then read from the `verbose argv` line of the debug log npm holds open (a relative
    --prefix is npm's, from its own working dir)."""
    prefix = tmp_path / "work" / "rel" / "prefix"
    package_dir = prefix / "lib" / "node_modules" / "@code-yeongyu" / "senpi"
    package_dir.mkdir(parents=True)
    logs = tmp_path / "home" / ".npm" / "_logs"
    logs.mkdir(parents=True)
    log_file = logs / "2026-12-07T21_57_29_274Z-debug-0.log"
    log_file.write_text(
        '0 verbose cli /usr/bin/node /usr/bin/npm\n8 verbose argv "install" "--prefix" "rel/prefix" "x.tgz"\n'
    )
    pid = _detached('exec -a "npm install x.tgz" sleep 600 3<"$0"', log_file, cwd=tmp_path / "work")
    try:
        assert managers.logged_argv(pid) == b"install\0--prefix\0rel/prefix\0x.tgz"
        tracker = managers.Tracker(ceiling=HANG_S)
        found = wait_for(lambda: tracker.at_work([package_dir]), what="the retitled npm placed by its log")
        assert found[package_dir].pid == pid
        elsewhere = tmp_path / "elsewhere" / "lib" / "node_modules" / "@code-yeongyu" / "senpi"
        assert managers.Tracker(ceiling=HANG_S).at_work([elsewhere]) == {}  # (its prefix only)
    finally:
        os.kill(pid, 9)


def test_where_npm_writes_is_read_from_its_log_once_for_as_long_as_it_runs(tmp_path):
    """A scan runs up to four times a second while files change: npm's debug log is read for its
    arguments the first time only; that npm is placed from then on (its log emptied meanwhile),
    until it ends."""
    prefix = tmp_path / "prefix"
    package_dir = prefix / "lib" / "node_modules" / "@code-yeongyu" / "senpi"
    package_dir.mkdir(parents=True)
    log_file = tmp_path / "_logs" / "2026-12-07T22_00_00_000Z-debug-0.log"
    log_file.parent.mkdir()
    log_file.write_text(f'8 verbose argv "install" "--prefix" "{prefix}" "x.tgz"\n')
    pid = _detached('exec -a "npm install x.tgz" sleep 600 3<"$0"', log_file, cwd=tmp_path)
    try:
        tracker = managers.Tracker(ceiling=HANG_S, interval=0.0)
        wait_for(lambda: tracker.at_work([package_dir]), what="npm placed by its log")
        log_file.write_text("")  # (what a second reading of the log would find: nothing)
        assert managers.logged_argv(pid) is None
        tracker.seen.clear()  # (not by what it was seen at before: by where it writes, known still)
        assert tracker.at_work([package_dir])[package_dir].pid == pid
        assert managers.Tracker(ceiling=HANG_S, interval=0.0).at_work([package_dir]) == {}
    finally:
        os.kill(pid, 9)
    wait_for(lambda: not tracker.at_work([package_dir]), what="npm gone")
    assert pid not in {key[0] for key in tracker.roots}  # (other managers on this machine may be known)
