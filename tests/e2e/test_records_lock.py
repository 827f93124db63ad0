"""The records (state.json) are changed under the write lock: they are read, changed and written
again, and an `apply` in another process writes them too. Without the lock, the record written last
would carry the records as they were before the other write, and that write would be lost. The
watcher's records of a round wait for the lock; `verify`'s record of its replay too, and a verify
that cannot have the lock still says what its replay found (the record only spares a later apply)."""

from __future__ import annotations

import json
import logging
import queue
import subprocess
import sys
import threading
import time

from conftest import run_cli

from senpi_guard import discover
from senpi_guard.core.patch import definition
from senpi_guard.io import config as config_mod
from senpi_guard.io.store import Store
from senpi_guard.keep.schedule import DistSchedule
from senpi_guard.layers import pipeline

PATCH = definition.load("directive-dedupe")
# another senpi-guard that writes: holds the write lock until told, then records, as apply does
HOLDER = """
import sys
from pathlib import Path
from senpi_guard.io.store import Store
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


def _a_watchers_round(pkg):
    """The dist layer's outcome of a watcher's round over `pkg`, not yet recorded, and the schedule
    that records it."""
    install = discover.describe(pkg)
    store = Store()
    flow = pipeline.build([PATCH], config_mod.load(), store, cancel=threading.Event())
    run = pipeline.Run(keeping=pipeline.Keeping())
    (outcome,) = [r for layer in flow.keep_order() for r in layer.keep([install], run) if r.layer == "dist"]
    assert outcome.ok, outcome.detail
    return store, outcome, DistSchedule(store, threading.Event(), queue.SimpleQueue())


def test_the_watchers_record_waits_for_the_write_lock_and_loses_no_other_write(npm_install, caplog):
    pkg = npm_install(3)
    store, outcome, schedule = _a_watchers_round(pkg)

    holder = _hold_the_lock(pkg)
    try:
        caplog.set_level(logging.WARNING, logger="senpi-guard")
        recording = threading.Thread(target=schedule.recorded, args=(outcome, "test"))
        recording.start()
        deadline = time.monotonic() + 60  # (a bound on a busy machine; the wait ends on the log line)
        while not any("waiting for the write lock" in r.getMessage() for r in caplog.records):
            assert recording.is_alive() and time.monotonic() < deadline, "the record did not wait for the lock"
            time.sleep(0.02)
        assert "last_reconcile" not in store.install_record(pkg, patch=PATCH.name)  # (nothing written yet)
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.wait(timeout=60) == 0
        recording.join(timeout=60)
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
        schedule.recorded(outcome, "test")  # (raised the lock's timeout into the round before)
    finally:
        holder.kill()
        holder.wait()
    assert "last_reconcile" not in store.install_record(pkg, patch=PATCH.name)
    assert any("not recorded: another senpi-guard holds the write lock" in r.getMessage() for r in caplog.records)
    assert (outcome.install.real_dir, PATCH.name) in schedule.known  # (the watcher's own memory has the round)
