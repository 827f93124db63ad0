"""keep/reprove: the watcher's re-proof thread. A round's due agent dirs are handed over once each
(not again while being re-proven); after the watcher's stop a job is dropped undone; a re-proof that
passes leaves the extension and records its stamp; one that fails takes the extension out and
records why; one that fails for a cause that passes (node out of time) leaves it in place and asks
for a round after a wait that doubles; a failure to record, or a bug, is logged and the thread goes
on. Real re-proofs on a sample senpi (node runs in well under a second), a real Store and Event."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from senpi_guard.core.patch.definition import Patch, load
from senpi_guard.demo import sample
from senpi_guard.discover import Install
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.keep.reprove import Reprover
from senpi_guard.keep.schedule import RETRY_S
from senpi_guard.layers import extension, extension_reprove, pipeline

HANG_S = 600.0  # (only a hang reaches it: tests/conftest.py)


@pytest.fixture
def patch() -> Patch:
    return load("directive-dedupe")


@pytest.fixture
def install(tmp_path, monkeypatch) -> Install:
    """A sample senpi 2026.8.5 whose loader and runner the proof runs through."""
    monkeypatch.chdir(tmp_path)
    sample.write_sample_package(tmp_path / "senpi", 3, fillers=3)
    return Install(tmp_path / "senpi", sample.SHAPE_VERSIONS[3], "npm")


class Said(logging.Handler):
    """The watcher's log lines, as they come: each re-proof that runs ends with one."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []
        self.grew = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self.grew:
            self.records.append(record)
            self.grew.notify_all()

    def wait_for(self, count: int) -> list[tuple[int, str]]:
        with self.grew:
            assert self.grew.wait_for(lambda: len(self.records) >= count, HANG_S)
            return [(r.levelno, r.getMessage()) for r in self.records]


class Watcher:
    """What the watcher gives the re-proof thread: its store, stop, memory and trigger queue."""

    def __init__(self, tmp_path: Path, said: Said) -> None:
        self.store = Store(tmp_path / "data", tmp_path / "state")
        self.stop = threading.Event()
        self.keeping = pipeline.Keeping()
        self.triggers: queue.Queue[str] = queue.Queue()
        self.reprover = Reprover(self.store, self.stop, self.keeping, self.triggers)
        self.said = said

    def run(self, *jobs: pipeline.Reproof) -> list[tuple[int, str]]:
        """Hand the jobs over as a round's extension layer does; what was logged once they ran."""
        before = len(self.said.records)
        self.keeping.reproofs.extend(jobs)
        self.reprover.hand_over()
        said = self.said.wait_for(before + len(jobs))[before:]
        keys, deadline = {j.key for j in jobs}, time.monotonic() + HANG_S
        while keys & self.keeping.proving:  # (let go just after its line is logged)
            assert time.monotonic() < deadline
            threading.Event().wait(0.005)
        return said

    def asked(self) -> list[str]:
        out = []
        while not self.triggers.empty():
            out.append(self.triggers.get_nowait())
        return out


@pytest.fixture
def watcher(tmp_path) -> Iterator[Watcher]:
    said, logger = Said(), logging.getLogger("senpi-guard.watch")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(said)
    made = Watcher(tmp_path, said)
    made.reprover.start()
    yield made
    made.reprover.close()
    made.reprover.thread.join(HANG_S)
    logger.removeHandler(said)
    logger.setLevel(level)


def installed(patch: Patch, agent: Path) -> Path:
    path = extension.target_path(patch, agent)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(patch.render_extension(Config()))
    return path


def job(patch: Patch, install: Install, agent: Path, config: Config | None = None, stamp=None) -> pipeline.Reproof:
    stamp = pipeline.loader_stamp([install], {}) if stamp is None else stamp
    return pipeline.Reproof(patch, config or Config(), agent, [install], stamp)


def test_each_due_agent_dir_is_handed_over_once_and_not_again_while_it_is_proven(tmp_path, patch, install):
    keeping = pipeline.Keeping()
    reprover = Reprover(Store(tmp_path / "data", tmp_path / "state"), threading.Event(), keeping, queue.Queue())
    first, second = job(patch, install, tmp_path / "a"), job(patch, install, tmp_path / "b")
    keeping.reproofs.extend([first, job(patch, install, tmp_path / "a"), second])
    reprover.hand_over()
    assert keeping.reproofs == [] and keeping.proving == {first.key, second.key}
    handed = [reprover.jobs.get_nowait(), reprover.jobs.get_nowait()]
    assert handed == [first, second] and reprover.jobs.empty()
    keeping.reproofs.append(job(patch, install, tmp_path / "a"))  # (due again while being proven)
    reprover.hand_over()
    assert keeping.reproofs == [] and reprover.jobs.empty()


def test_after_the_watchers_stop_a_job_is_dropped_undone(tmp_path, watcher, patch, install):
    agent = tmp_path / "agent"
    path = installed(patch, agent)
    watcher.stop.set()
    watcher.keeping.reproofs.append(job(patch, install, agent, stamp=()))
    watcher.reprover.hand_over()
    watcher.reprover.close()
    watcher.reprover.thread.join(HANG_S)
    assert not watcher.reprover.thread.is_alive()
    assert watcher.keeping.proving == set() and watcher.keeping.stamps == {} and watcher.asked() == []
    assert path.read_text() == patch.render_extension(Config()) and watcher.said.records == []
    assert not (tmp_path / "state").exists()  # (no proof was begun: nothing made for one)


def test_a_passing_reproof_keeps_the_extension_and_records_its_stamp(tmp_path, watcher, patch, install):
    agent = tmp_path / "agent"
    path = installed(patch, agent)
    due = job(patch, install, agent)
    ((level, line),) = watcher.run(due)
    assert level == logging.INFO and line.startswith(f"extension layer {path}: re-proven")
    assert "checks passed" in line
    assert watcher.keeping.stamps == {due.key: due.stamp} and watcher.keeping.proving == set()
    assert path.read_text() == patch.render_extension(Config())
    assert watcher.asked() == []  # (nothing changed meanwhile: no round asked for)


def test_a_failed_reproof_takes_the_extension_out_and_says_why(tmp_path, watcher, patch, install, monkeypatch):
    monkeypatch.setenv("SENPI_GUARD_NODE", str(tmp_path / "no-node"))  # (the proof cannot run)
    agent = tmp_path / "agent"
    path = installed(patch, agent)
    due = job(patch, install, agent)
    ((level, line),) = watcher.run(due)
    assert level == logging.ERROR and line.startswith(f"extension layer {agent}: re-proof FAILED")
    assert "cannot run node" in line and "senpi-guard apply" in line
    assert not path.exists()
    record = extension_reprove.taken_out(watcher.store, patch, agent)
    assert record is not None and "cannot run node" in record["problem"]
    assert watcher.keeping.stamps == {due.key: due.stamp} and watcher.asked() == []


def test_when_the_loader_changed_during_the_reproof_a_round_is_asked_for(
    tmp_path, watcher, patch, install, monkeypatch
):
    monkeypatch.setenv("SENPI_GUARD_NODE", str(tmp_path / "no-node"))
    agent = tmp_path / "agent"
    installed(patch, agent)
    stale = job(patch, install, agent, stamp=(("an", "older", "loader"),))
    watcher.run(stale)
    assert watcher.keeping.stamps == {stale.key: stale.stamp}  # (what was proven; the round finds it moved)
    assert watcher.asked() == ["retry changed-during-re-proof"]


def test_a_failure_that_passes_leaves_the_extension_and_waits_longer_each_time(tmp_path, watcher, patch, install):
    agent = tmp_path / "agent"
    path = installed(patch, agent)
    hurried = Config(verify_timeout=0.01)  # (node out of time, as on a busy machine)
    first, _longest = RETRY_S
    for wait in (first, first * 2, first * 4):
        ((level, line),) = watcher.run(job(patch, install, agent, hurried))
        assert level == logging.WARNING and f"(in {wait:g}s)" in line and "left in place" in line
        assert watcher.reprover.waits == {(patch.name, str(agent)): wait}
    assert path.exists() and extension_reprove.taken_out(watcher.store, patch, agent) is None
    assert watcher.keeping.stamps == {}  # (not proven: the round asked for hands it over again)
    watcher.run(job(patch, install, agent))
    assert watcher.reprover.waits == {}  # (proven at last: the next passing failure waits the first wait again)


def test_a_failure_to_record_leaves_the_extension_and_is_not_tried_again_until_it_changes(
    tmp_path, watcher, patch, install, monkeypatch
):
    monkeypatch.setenv("SENPI_GUARD_NODE", str(tmp_path / "no-node"))
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / extension_reprove.TAKEN_OUT).write_text("{not json")
    agent = tmp_path / "agent"
    path = installed(patch, agent)
    due = job(patch, install, agent)
    ((level, line),) = watcher.run(due)
    assert level == logging.ERROR and line.startswith(f"extension layer {agent}: re-proof failed: ")
    assert extension_reprove.TAKEN_OUT in line and path.exists()
    assert watcher.keeping.stamps == {due.key: due.stamp}


def test_a_bug_is_logged_with_where_its_traceback_is_and_the_thread_goes_on(tmp_path, watcher, patch, install):
    without = load("hand-fix-hooks")  # (no extension layer: its re-proof is a bug)
    assert without.extension is None
    agent = tmp_path / "agent"
    path = installed(patch, agent)
    broken = job(without, install, agent)
    ((level, line),) = watcher.run(broken)
    assert level == logging.ERROR and "re-proof failed: unexpected AttributeError" in line
    crash = Path(line.rsplit("the traceback is in ", 1)[1])
    assert "AttributeError" in crash.read_text()
    assert watcher.keeping.stamps == {} and watcher.keeping.proving == set()
    ((level, line),) = watcher.run(job(patch, install, agent))  # (the next job still runs)
    assert level == logging.INFO and str(path) in line
