"""The watcher as the tests run it: `senpi-guard watch -v` in a process of its own, its output in a
log file, stopped with SIGTERM (the `watch` fixture kills whatever a test left running). The one
place that waits on the watcher: on a line of its log, on its next round, on its exit; each under
the one ceiling only a hang reaches (conftest's HANG_S), never a length a busy machine can reach."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import HANG_S, wait_for

ROUND_STARTED, ROUND_DONE = "round started (", "round done ("  # (what -v logs around each round)


class WatchProcess:
    def __init__(self, *args: str | Path, log: Path):
        self.log = log
        self.handle = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "senpi_guard", "watch", "-v", "--quiet-period", "0.4", *map(str, args)],
            stdout=self.handle,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # (SIGABRT: every thread's stack to the log)
        )

    def text(self) -> str:
        return self.log.read_text()

    def mark(self) -> int:
        """Where the log is now: what a wait `after` it looks at comes later."""
        return len(self.text())

    def wait(self, found: Callable[[str], object], what: str, after: int = 0):
        """Until `found(the log from `after` on)` is true; fails at once when the watcher exited."""

        def seen():
            text = self.text()[after:]
            value = found(text)
            if not value and self.proc.poll() is not None:
                raise AssertionError(f"the watcher exited ({self.proc.returncode}) before {what}: {text[-3000:]}")
            return value

        try:
            return wait_for(seen, what=what)
        except AssertionError as exc:  # (a wait that timed out shows what the watcher did meanwhile)
            if "timed out" not in str(exc):
                raise
            raise AssertionError(f"{exc}; the watcher's log since: {self.text()[after:][-4000:]}") from None

    def next_round(self, after: int, what: str = "the watcher's next round") -> str:
        """Until a round that started after `after` (a mark taken once a change was made) is done:
        that round has looked at the change. The log from the mark on."""

        def done(text: str) -> bool:
            start = text.find(ROUND_STARTED)
            return start >= 0 and ROUND_DONE in text[start:]

        self.wait(done, what, after)
        return self.text()[after:]

    def stop(self) -> float:
        """SIGTERM, and the seconds until the watcher exited; one that has not when only a hang
        would keep it is aborted, and the failure shows where each of its threads was."""
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=HANG_S)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGABRT)
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.proc.kill()  # (the fault handler could not run: no stacks, the log alone)
                    self.proc.wait()
                self.handle.close()
                raise AssertionError(
                    f"the watcher did not stop within {HANG_S:g} s of SIGTERM; the end of its log, with every thread's "
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
