"""The watcher writes its records of a round (the last reconcile, a back-off) under the write lock:
the records are read, changed and written again, and an `apply` in another process writes them too.
Without the lock, the record written last would carry the records as they were before the other
write, and that write would be lost."""

from __future__ import annotations

import logging
import queue
import subprocess
import sys
import threading
import time

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


def test_the_watchers_record_waits_for_the_write_lock_and_loses_no_other_write(npm_install, caplog):
    pkg = npm_install(3)
    install = discover.describe(pkg)
    store = Store()
    flow = pipeline.build([PATCH], config_mod.load(), store, cancel=threading.Event())
    run = pipeline.Run(keeping=pipeline.Keeping())
    (outcome,) = [r for layer in flow.keep_order() for r in layer.keep([install], run) if r.layer == "dist"]
    assert outcome.ok, outcome.detail
    schedule = DistSchedule(store, threading.Event(), queue.SimpleQueue())

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(pkg)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "held\n"
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
