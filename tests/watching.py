"""The watcher as the tests run it: `senpi-guard watch` in a process of its own, its output in a log
file, stopped with SIGTERM (the `watch` fixture kills whatever a test left running)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


class WatchProcess:
    def __init__(self, *args: str | Path, log: Path):
        self.log = log
        self.handle = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "senpi_guard", "watch", "--quiet-period", "0.4", *map(str, args)],
            stdout=self.handle,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # (SIGABRT: every thread's stack to the log)
        )

    def text(self) -> str:
        return self.log.read_text()

    def stop(self) -> float:
        """SIGTERM, and the seconds until the watcher exited; one that has not after 10 s is aborted,
        and the failure shows where each of its threads was."""
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGABRT)
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.proc.kill()  # (the fault handler could not run: no stacks, the log alone)
                    self.proc.wait()
                self.handle.close()
                raise AssertionError(
                    "the watcher did not stop within 10 s of SIGTERM; the end of its log, with every thread's "
                    f"stack at the SIGABRT:\n{self.text()[-8000:]}"
                ) from None
        self.handle.close()
        return time.monotonic() - started


@pytest.fixture
def watch(tmp_path):
    running: list[WatchProcess] = []

    def start(*args: str | Path) -> WatchProcess:
        process = WatchProcess(*args, log=tmp_path / f"watch{len(running)}.log")
        running.append(process)
        return process

    yield start
    for process in running:
        if process.proc.poll() is None:
            process.proc.kill()
            process.proc.wait()
