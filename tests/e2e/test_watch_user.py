"""The watcher on a real machine: busy directories, the user's own actions, signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import (
    HANG_S,
    SHAPE_REL,
    add_path,
    field,
    harness_processes,
    node_check,
    patched,
    rows_of,
    run_cli,
    sha,
    wait_for,
    write_user_config,
)
from watching import ROUND_DONE, WatchProcess

from senpi_guard.io.store import Store, log_dir

EXTENSION = "senpi-guard-directive-dedupe.js"


@pytest.fixture
def reverted_by_hand(npm_install):
    """An install, patched once, whose target the test can put back to the original bytes."""
    pkg = npm_install(2)
    target = pkg / SHAPE_REL[2]
    original = target.read_bytes()

    def revert_target() -> None:
        scratch = target.with_name(".restore")
        scratch.write_bytes(original)
        os.replace(scratch, target)

    return pkg, target, original, revert_target


class Writer:
    """Touches one file every 0.1 s, as an editor, a log or a build would."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stop = threading.Event()
        self.count = 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while not self.stop.wait(0.1):
            self.path.write_text(str(self.count))
            self.count += 1

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)


def repatched_by_the_next_rescan(target: Path, whole: Callable[[], str] = str) -> Callable[[str], bool]:
    """Patched again, at the latest by the first rescan in the log given (from a mark taken after
    the change): a rescan round that ended with the target still unpatched fails (a watcher starved
    by the events), saying the whole log (`whole`) too: why an earlier round left it may be there."""

    def found(text: str) -> bool:
        start = text.find("round started (rescan)")
        over = start >= 0 and ROUND_DONE in text[start:]  # (read before the file: the round wrote first)
        if patched(target):
            return True
        assert not over, (
            f"a rescan round ended with the install still unpatched: {text[-3000:]}\n---\n{whole()[-6000:]}"
        )
        return False

    return found


@pytest.mark.parametrize("busy", ["notes.log", "dist/cache/build.tmp"])
def test_steady_writes_do_not_starve_the_watcher(reverted_by_hand, watch, busy):
    pkg, target, _original, revert_target = reverted_by_hand
    watcher = watch("--root", pkg, "--rescan-interval", "5")
    wait_for(lambda: patched(target), what="patched at start-up")
    writer = Writer(pkg / busy)
    try:
        wait_for(lambda: writer.count > 10, what="the writer to be busy")
        latencies = []
        for _ in range(2):
            revert_target()
            reverted, mark = time.monotonic(), watcher.mark()
            watcher.wait(repatched_by_the_next_rescan(target, watcher.text), f"re-patch while {busy} is busy", mark)
            latencies.append(time.monotonic() - reverted)
        assert writer.count > 20  # the writer really was busy throughout
    finally:
        writer.close()
    node_check(target)
    print(f"starvation ({busy}): re-patched after {', '.join(f'{x:.2f}' for x in latencies)} s")
    watcher.stop()


def test_revert_holds_the_install_until_apply(reverted_by_hand, watch, capsys):
    pkg, target, original, _ = reverted_by_hand
    watcher = watch("--root", pkg, "--rescan-interval", "1")
    wait_for(lambda: patched(target), what="patched at start-up")
    code, out, _ = run_cli(capsys, "revert", "--root", pkg, "--json")
    (row,) = rows_of(json.loads(out))
    assert code == 0 and row["held"] is True and row["state"] == "held"
    assert target.read_bytes() == original
    wait_for(lambda: watcher.text().count("after=held") >= 1, what="the watcher to see the hold")
    seen = watcher.text().count("after=held")
    for _ in range(2):  # two more rounds: still held
        watcher.next_round(watcher.mark())
    assert target.read_bytes() == original
    code, out, _ = run_cli(capsys, "status", "--root", pkg)
    assert code == 0 and "state     held" in out and "senpi-guard apply" in out  # (as asked: exit 0)
    assert "watcher   last" not in out  # (the running watcher's own, current and ok: said with -v)
    said = field(run_cli(capsys, "status", "-v", "--root", pkg)[1], "watcher")
    assert said.startswith("last reconcile") and " ago, by " not in said
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0  # lifts the hold
    assert patched(target)
    watcher.next_round(watcher.mark())
    assert patched(target) and watcher.text().count("after=held") >= seen
    watcher.stop()
    out = run_cli(capsys, "status", "--root", pkg)[1]  # a stopped watcher's last reconcile says when it was
    flat = " ".join(out.split())
    said = flat.count("watcher last reconcile")
    assert said and flat.count(" ago, by a watcher not running now): ") == said, out


def test_revert_holds_the_extension_too_until_apply(npm_install, watch, capsys, isolated_dirs):
    pkg = npm_install(2)
    ours = isolated_dirs / "agent" / "extensions" / EXTENSION
    watcher = watch("--root", pkg, "--rescan-interval", "1")
    wait_for(ours.is_file, what="the extension installed at start-up")
    assert run_cli(capsys, "revert", "--root", pkg)[0] == 0
    assert not ours.exists()
    wait_for(
        lambda: f"extension layer {ours.parent.parent}: held" in watcher.text(),
        what="the watcher to see the extension's hold",
    )
    passes = watcher.text().count("reconcile started")
    for _ in range(2):  # two more full passes (each starts with a reconcile line, ends with the extension)
        (pkg / "package.json").touch()
        wait_for(lambda n=passes: watcher.text().count("reconcile started") > n, what="another pass")
        passes = watcher.text().count("reconcile started")
    assert not ours.exists()  # the watcher never undid the revert
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0  # lifts both holds
    assert ours.is_file()
    watcher.stop()


LOCK_WAIT = "waiting for the write lock"  # (what a senpi-guard that finds the lock taken says)


def _stopped(pid: int) -> bool:
    """Every thread of the process is stopped: SIGSTOP took effect, not only was sent."""
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        except (OSError, IndexError):
            continue  # (a thread that ended meanwhile)
    return bool(states) and all(state == "T" for state in states)


@contextmanager
def paused_at_the_write_lock(watcher: WatchProcess, start_pass: Callable[[], None]) -> Iterator[None]:
    """The watcher's next pass stopped where it has decided to write and waits for the write lock.
    The test holds the lock (as another senpi-guard writing), sets the pass off and, once the watcher
    says it waits, stops it (SIGSTOP) and lets the lock go: what the block runs takes the lock first
    (a stopped watcher takes nothing), and the pass goes on (SIGCONT) after it."""
    waits = watcher.text().count(LOCK_WAIT)
    with Store().lock():
        start_pass()
        wait_for(lambda: watcher.text().count(LOCK_WAIT) > waits, what="the watcher's pass to wait for the lock")
        watcher.proc.send_signal(signal.SIGSTOP)
        wait_for(lambda: _stopped(watcher.proc.pid), what="the watcher to stop")
    try:
        yield
    finally:
        watcher.proc.send_signal(signal.SIGCONT)


@pytest.mark.parametrize("layer", ["dist", "extension"])
def test_revert_wins_over_a_pass_that_decided_to_write_before_it(layer, reverted_by_hand, watch, capsys, isolated_dirs):
    """A pass that found a layer gone and not held (taken away by hand here) waits for the write lock
    to put it back while `revert` runs: the revert and its hold stand. (The extension layer's pass
    looked at the hold before it took the lock, and put the extension back after such a revert.)"""
    pkg, target, original, revert_target = reverted_by_hand
    agent = isolated_dirs / "agent"
    ours = agent / "extensions" / EXTENSION
    watcher = watch("--root", pkg, "--rescan-interval", "1")
    wait_for(lambda: patched(target) and "-> installed" in watcher.text(), what="both layers at start-up")
    dist_passes = watcher.text().count("reconcile started")
    done = " trigger=" if layer == "dist" else "extension layer "  # (the line the layer's pass ends with)
    with paused_at_the_write_lock(watcher, revert_target if layer == "dist" else ours.unlink):
        # the pass waiting is this layer's (the dist layer looks again only at an install that changed)
        assert watcher.text().count("reconcile started") == dist_passes + (layer == "dist")
        ended = watcher.text().count(done)
        assert run_cli(capsys, "revert", "--root", pkg)[0] == 0
        assert target.read_bytes() == original and not ours.exists()
    wait_for(lambda: watcher.text().count(done) > ended, what="the pass to go on")
    assert target.read_bytes() == original and not ours.exists()  # nothing put back: the revert stands
    assert LOCK_WAIT in (log_dir() / "watch.log").read_text()  # (its wait is in its log, not only on stderr)
    assert ("after=held" if layer == "dist" else f"extension layer {agent}: held") in watcher.text()
    code, out, _ = run_cli(capsys, "status", "--root", pkg)
    assert code == 0 and "state     held" in out and "extension held" in out  # (as asked: exit 0)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0  # lifts both holds
    assert patched(target) and ours.is_file()
    watcher.stop()


def test_a_hand_edit_is_kept_and_reported_not_thrown_away(
    npm_install, watch, tmp_path, monkeypatch, capsys, isolated_dirs
):
    calls = tmp_path / "notifications"  # a stand-in notify-send records what the user is told
    fake = tmp_path / "bin" / "notify-send"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    fake.chmod(0o755)
    add_path(monkeypatch, fake.parent)
    pkg = npm_install(2)
    target = pkg / SHAPE_REL[2]
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    watcher = watch("--root", pkg, "--rescan-interval", "1")
    wait_for(lambda: "reconcile" in watcher.text() or "watching" in watcher.text(), what="watcher start")
    edited = target.read_bytes().replace(b'"ultrawork-mode"', b'"ultrawork-mode","my-own-tag"', 1)
    scratch = target.with_name(".edit")
    scratch.write_bytes(edited)
    os.replace(scratch, target)
    watcher.wait(lambda text: "could not be patched" in text, "the drift to be reported")
    watcher.next_round(watcher.mark())  # (a round after the report: it leaves the edit too)
    assert target.read_bytes() == edited  # not rebuilt: on_drift = "report"
    copies = list((isolated_dirs / "xdg_data_home").rglob("*.drifted"))
    assert len(copies) == 1 and copies[0].read_bytes() == edited
    assert str(copies[0]) in watcher.text() and str(copies[0]) in calls.read_text()
    code, _out, _ = run_cli(capsys, "apply", "--root", pkg)  # by hand: rebuilt, the copy stays
    assert code == 0 and patched(target) and target.read_bytes() != edited and copies[0].exists()
    watcher.stop()


def test_a_second_watcher_is_refused_with_the_first_ones_pid(npm_install, watch):
    pkg = npm_install(2)
    first = watch("--root", pkg)
    wait_for(lambda: patched(pkg / SHAPE_REL[2]), what="first watcher patched")
    second = subprocess.run(
        [sys.executable, "-m", "senpi_guard", "watch", "--root", str(pkg)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert second.returncode == 1
    assert len(second.stderr.strip().splitlines()) == 1
    assert f"pid {first.proc.pid}" in second.stderr and "already running" in second.stderr
    assert first.proc.poll() is None
    assert first.stop() < 2.0


def test_a_pid_file_a_killed_watcher_left_names_no_watcher_once_its_pid_is_reused(npm_install, watch, capsys):
    """A watcher killed with -9 leaves its pid file; once another process has that pid, status,
    its metric and uninstall must not take that process for the watcher (before: "running", and
    uninstall refused, telling the user to kill it). The watcher lock decides: it goes with the
    process that held it."""
    from senpi_guard.io.store import Store

    pkg = npm_install(2)
    watcher = watch("--root", pkg)
    wait_for(lambda: patched(pkg / SHAPE_REL[2]), what="the watcher's first round")
    assert json.loads(run_cli(capsys, "status", "--root", pkg, "--json")[1])["watcher"]["pid"] == watcher.proc.pid
    watcher.proc.kill()
    watcher.proc.wait()
    other = subprocess.Popen(["sleep", "120"])  # (the pid reused: written into the file the watcher left)
    try:
        pid_file = Store().pid_file
        pid_file.write_text(json.dumps({**json.loads(pid_file.read_text()), "pid": other.pid}))
        code, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
        assert json.loads(out)["watcher"] is None, out
        out = run_cli(capsys, "status", "--root", pkg)[1]
        assert "watcher: not running" in out and str(other.pid) not in out, out
        out = run_cli(capsys, "status", "--root", pkg, "--format", "prometheus")[1]
        assert "senpi_guard_watcher_running 0" in out, out
        code, out, err = run_cli(capsys, "uninstall", "--dry-run")
        assert code == 0 and f"kill {other.pid}" not in out + err, out + err
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_sighup_reloads_the_config_and_reconciles(npm_install, watch, isolated_dirs, capsys):
    pkg = npm_install(2)
    target = pkg / SHAPE_REL[2]
    extension = isolated_dirs / "agent" / "extensions" / "senpi-guard-directive-dedupe.js"
    watcher = watch("--root", pkg, "--rescan-interval", "300")
    wait_for(lambda: patched(target) and extension.exists(), what="both layers at start-up")
    # a change that leaves sent text alone is made (here the extension's budget)...
    write_user_config(isolated_dirs, "[patches.directive-dedupe.budget]\nwarn_at = 0.5\n")
    watcher.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: '"budget.warn_at":0.5' in extension.read_text(), what="re-rendered with the new config")
    assert watcher.proc.poll() is None and "received SIGHUP" in watcher.text()
    # ...one that changes what sent messages look like (the tag list) is left to `apply`, and said
    before = target.read_bytes()
    write_user_config(isolated_dirs, '[patches.directive-dedupe]\ntags = ["ultrawork-mode", "sighup-tag"]\n')
    watcher.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: watcher.text().count("left as it is") >= 2, what="both layers left to apply")
    assert target.read_bytes() == before and '"sighup-tag"' not in extension.read_text()
    assert "run `senpi-guard apply` to make that change" in watcher.text()
    _code, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    assert json.loads(out)["watcher"]["pid"] == watcher.proc.pid  # the pid file is still right
    watcher.stop()


def test_a_bad_config_is_said_in_the_watchers_log_once_per_sighup_and_at_start(npm_install, watch, isolated_dirs):
    """The service's watcher is read in its log: a config it cannot start with is said there too
    (before: stderr alone), and one a SIGHUP cannot load is said once for it, not again by the
    round that reloads it (before: twice per SIGHUP, and again on every rescan)."""
    from senpi_guard.io import store

    pkg = npm_install(2)
    watcher = watch("--root", pkg, "--rescan-interval", "300")
    wait_for(lambda: patched(pkg / SHAPE_REL[2]), what="the start-up round")
    write_user_config(isolated_dirs, "rescan_interval = 0\n")  # (a busy loop: refused)
    watcher.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "patch=hand-fix-hooks trigger=sighup" in watcher.text(), what="the SIGHUP's round")
    assert watcher.text().count("config not reloaded, keeping the previous one") == 1, watcher.text()
    watcher.stop()
    done = subprocess.run(
        [sys.executable, "-m", "senpi_guard", "watch", "--root", str(pkg)],  # (not --quiet: stderr has its log too)
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    logged = (store.log_dir() / "watch.log").read_text()
    assert done.returncode == 1 and "rescan_interval" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # (said once there, not by the log too)
    assert "ERROR not started: " in logged and "rescan_interval" in logged.splitlines()[-1], logged[-2000:]


SLOW = f"""\
export function buildPromptBlocks(context) {{
    const until = Date.now() + {2 * HANG_S * 1000:.0f};
    while (Date.now() < until) {{
        // a replay that outlasts every wait of the tests: a stop that waited for it would fail
    }}
    return context.messages.map((m) => ({{ type: "text", text: JSON.stringify(m) }}));
}}
//# sourceMappingURL=prompt-bridge.js.map"""


def test_sigterm_during_a_slow_replay_stops_without_waiting_for_it_and_writes_nothing(custom_package, watch):
    pkg = custom_package(SLOW, version="2026.9.1")
    target = pkg / SHAPE_REL[2]
    before = sha(target)
    watcher = watch("--root", pkg)
    wait_for(lambda: "reconcile started" in watcher.text(), what="the reconcile to start")
    pid = watcher.proc.pid
    replays = wait_for(lambda: harness_processes(pid), what="node to be replaying")
    watcher.stop()  # (fails when the watcher waits for the replay: it outlasts the ceiling)
    assert sha(target) == before
    assert not list(target.parent.glob(".*.senpi-guard"))
    wait_for(lambda: not any(Path(f"/proc/{r}").exists() for r in replays), what="the replay to be killed")
