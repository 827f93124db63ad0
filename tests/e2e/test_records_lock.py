"""The records (state.json) are changed under the write lock: they are read, changed and written
again, and an `apply` in another process writes them too. Without the lock, the record written last
would carry the records as they were before the other write, and that write would be lost. The
watcher's records of a round wait for the lock, until the watcher is stopped; `verify`'s record of
its replay too, and a verify that cannot have the lock still says what its replay found (the record
only spares a later apply), waiting once, not once per install."""

from __future__ import annotations

import json
import logging
import queue
import subprocess
import sys
import threading
import time

from conftest import HANG_S, run_cli, wait_for

from senpi_guard import discover
from senpi_guard.core.patch import definition
from senpi_guard.io import config as config_mod
from senpi_guard.io.store import Store, log_dir
from senpi_guard.keep.schedule import DistSchedule
from senpi_guard.layers import pipeline

PATCH = definition.load("directive-dedupe")
# another senpi-guard that writes: holds the write lock until told, then records, as apply does
HOLDER = """
import sys
from pathlib import Path
from senpi_guard.io.store import Store, log_dir
store = Store()
with store.lock():
    print("held", flush=True)
    sys.stdin.readline()
    store.update_install(Path(sys.argv[1]), patch="directive-dedupe", written_by="the other writer")
"""


def _hold_the_lock(pkg) -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(pkg)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline() == "held\n"
    return holder


def _a_watchers_round(pkg, stop: threading.Event | None = None):
    """The dist layer's outcome of a watcher's round over `pkg`, not yet recorded, and the schedule
    that records it (with the watcher's `stop`, as the watcher wires it)."""
    stop = stop or threading.Event()
    install = discover.describe(pkg)
    store = Store(stop=stop)
    flow = pipeline.build([PATCH], config_mod.load(), store, cancel=stop)
    run = pipeline.Run(keeping=pipeline.Keeping())
    (outcome,) = [r for layer in flow.keep_order() for r in layer.keep([install], run) if r.layer == "dist"]
    assert outcome.ok, outcome.detail
    return store, outcome, DistSchedule(store, stop, queue.SimpleQueue())


def _until_it_waits(caplog, alive) -> None:
    deadline = time.monotonic() + HANG_S  # (the wait ends on the log line)
    while not any("waiting for the write lock" in r.getMessage() for r in caplog.records):
        assert alive() and time.monotonic() < deadline, "it did not wait for the lock"
        time.sleep(0.02)


def test_the_watchers_record_waits_for_the_write_lock_and_loses_no_other_write(npm_install, caplog):
    pkg = npm_install(3)
    store, outcome, schedule = _a_watchers_round(pkg)

    holder = _hold_the_lock(pkg)
    try:
        caplog.set_level(logging.WARNING, logger="senpi-guard")
        recording = threading.Thread(target=schedule.recorded, args=(outcome, "test"))
        recording.start()
        _until_it_waits(caplog, recording.is_alive)
        assert "last_reconcile" not in store.install_record(pkg, patch=PATCH.name)  # (nothing written yet)
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.wait(timeout=HANG_S) == 0
        recording.join(timeout=HANG_S)
        assert not recording.is_alive()
    finally:
        holder.kill()
        holder.wait()
    record = store.install_record(pkg, patch=PATCH.name)
    assert record["written_by"] == "the other writer"  # (the other write is kept)
    assert record["last_reconcile"]["ok"] and record["last_reconcile"]["trigger"] == "test"


def test_a_verify_that_cannot_have_the_lock_still_says_what_its_replay_found(npm_install, capsys, monkeypatch, caplog):
    pkg = npm_install(3)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    monkeypatch.setenv("SENPI_GUARD_LOCK_TIMEOUT", "0.5")  # (how long it waits: the holder never lets go)
    holder = _hold_the_lock(pkg)
    try:
        code, out, err = run_cli(capsys, "verify", "--root", pkg, "--fresh", "--json")
    finally:
        holder.kill()
        holder.wait()
    assert code == 0, out + err
    (row,) = [r for r in json.loads(out)["installs"] if r["patch"] == PATCH.name]
    assert row["ok"] and row["verification"]["ok"] and row["verification"]["checks"] > 0
    assert "(not recorded: another senpi-guard holds the write lock" in row["detail"]
    assert any("waiting for the write lock" in r.getMessage() for r in caplog.records)  # (it said so)


def test_a_watcher_record_not_written_is_logged_and_the_round_goes_on(npm_install, monkeypatch, caplog):
    pkg = npm_install(3)
    store, outcome, schedule = _a_watchers_round(pkg)
    monkeypatch.setenv("SENPI_GUARD_LOCK_TIMEOUT", "0.5")  # (the holder never lets go)
    holder = _hold_the_lock(pkg)
    try:
        schedule.recorded(outcome, "test")  # (the round goes on: it raised the lock's timeout into the round before)
    finally:
        holder.kill()
        holder.wait()
    assert "last_reconcile" not in store.install_record(pkg, patch=PATCH.name)
    assert any("not recorded: another senpi-guard holds the write lock" in r.getMessage() for r in caplog.records)


def test_a_watchers_record_waiting_for_the_lock_ends_when_the_watcher_stops(npm_install, monkeypatch, caplog):
    """A SIGTERM sets the watcher's stop: a wait for the lock ends with it, never after the lock's
    timeout (longer than systemd's stop timeout, which would SIGKILL the watcher)."""
    pkg = npm_install(3)
    stop = threading.Event()
    store, outcome, schedule = _a_watchers_round(pkg, stop)
    monkeypatch.setenv("SENPI_GUARD_LOCK_TIMEOUT", f"{2 * HANG_S:g}")  # (outlasts every wait here)
    caplog.set_level(logging.INFO, logger="senpi-guard")
    holder = _hold_the_lock(pkg)
    try:
        recording = threading.Thread(target=schedule.recorded, args=(outcome, "test"))
        recording.start()
        _until_it_waits(caplog, recording.is_alive)
        stop.set()
        recording.join(timeout=HANG_S)
        assert not recording.is_alive(), "the record still waits for the lock after the stop"
    finally:
        holder.kill()
        holder.wait()
    assert any("not recorded: stopped while waiting for the write lock" in r.getMessage() for r in caplog.records)
    assert "last_reconcile" not in store.install_record(pkg, patch=PATCH.name)


def test_a_watcher_waiting_for_the_lock_stops_at_once_on_sigterm(npm_install, watch, monkeypatch):
    pkg = npm_install(3)
    monkeypatch.setenv("SENPI_GUARD_LOCK_TIMEOUT", f"{2 * HANG_S:g}")  # (outlasts every wait here)
    holder = _hold_the_lock(pkg)
    try:
        watcher = watch("--root", pkg)
        wait_for(lambda: "waiting for the write lock" in watcher.text(), what="the watcher's round to wait")
        watcher.stop()  # (SIGTERM; fails when the watcher waits out the lock's timeout)
    finally:
        holder.kill()
        holder.wait()
    assert watcher.proc.returncode == 0 and "stopped" in watcher.text(), watcher.text()
    assert " ERROR " not in (log_dir() / "watch.log").read_text()  # (a stop is no failure)
    assert discover.describe(pkg) is not None and "before=unpatched after=patched" not in watcher.text()


def test_a_verify_of_many_installs_waits_for_the_lock_once(npm_install, capsys, monkeypatch, caplog):
    pkgs = [npm_install(3), npm_install(3)]
    roots = [arg for pkg in pkgs for arg in ("--root", pkg)]
    assert run_cli(capsys, "apply", *roots)[0] == 0
    monkeypatch.setenv("SENPI_GUARD_LOCK_TIMEOUT", "0.5")
    holder = _hold_the_lock(pkgs[0])
    try:
        code, out, err = run_cli(capsys, "verify", *roots, "--json")
    finally:
        holder.kill()
        holder.wait()
    assert code == 0, out + err
    rows = [r for r in json.loads(out)["installs"] if r["patch"] == PATCH.name]
    assert len(rows) == 2 and all(r["ok"] and "(not recorded: another senpi-guard holds" in r["detail"] for r in rows)
    assert sum("waiting for the write lock" in r.getMessage() for r in caplog.records) == 1
