"""The watcher's re-proofs of installed extensions, in a thread of their own.

A re-proof runs senpi's loader and runner through node (seconds, where the loader changed); in the
watcher's own loop it would hold up the dist layer's next round (another update landing meanwhile).
The extension layer's `keep` step hands over what is due after the round's dist layer
(layers/extension_reprove); here they run one at a time, cancelled by the watcher's stop, the
store's lock taken only to take an extension out. An agent dir being re-proven is left alone by
the rounds meanwhile (`Keeping.proving`); when its installs changed again during the proof, a
round is asked for, which finds the stamp changed and hands it over again."""

from __future__ import annotations

import queue
import threading

from senpi_guard.errors import FatalError
from senpi_guard.io import store as store_mod
from senpi_guard.io.store import Store
from senpi_guard.keep.notify import log, notify
from senpi_guard.keep.schedule import retry_after
from senpi_guard.layers import pipeline

JOIN_TIMEOUT = 1.5  # seconds a stop waits for a re-proof to end (node is killed within ~0.1 s)


class Reprover:
    def __init__(self, store: Store, stop: threading.Event, keeping: pipeline.Keeping, triggers) -> None:
        self.store = store
        self.stop = stop
        self.keeping = keeping
        self.triggers = triggers  # the watcher's (a round is asked for by putting one there)
        self.jobs: queue.SimpleQueue[pipeline.Reproof | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._work, name="senpi-guard re-proof", daemon=True)
        self.waits: dict[tuple[str, str], float] = {}  # agent dir -> the last wait after a passing failure

    def start(self) -> None:
        self.thread.start()

    def hand_over(self) -> None:
        """What the round's extension layer found due; each agent dir once at a time."""
        due, self.keeping.reproofs[:] = list(self.keeping.reproofs), []
        for job in due:
            if job.key not in self.keeping.proving:
                self.keeping.proving.add(job.key)
                self.jobs.put(job)

    def close(self) -> None:
        self.jobs.put(None)
        if self.thread.is_alive():
            self.thread.join(timeout=JOIN_TIMEOUT)

    def _work(self) -> None:
        while (job := self.jobs.get()) is not None:
            try:
                if not self.stop.is_set():
                    self._one(job)
            finally:
                self.keeping.proving.discard(job.key)

    def _one(self, job: pipeline.Reproof) -> None:
        try:
            outcome = pipeline.reprove(job, self.store, self.stop)
        except FatalError as exc:  # (the record or the lock: tried again on the next change)
            self.keeping.stamps[job.key] = job.stamp
            log.error("extension layer %s: re-proof failed: %s", job.agent_dir, exc)
            return
        except Exception as exc:  # a bug: logged with its traceback; the watcher goes on
            log.error(
                "extension layer %s: re-proof failed: unexpected %s: %s; the traceback is in %s",
                job.agent_dir,
                type(exc).__name__,
                exc,
                store_mod.crash_log(exc),
            )
            return
        if outcome is None:  # stopped
            return
        if outcome.passing:  # (not recorded as proven: the round asked for hands it over again)
            self._retry_later(job, outcome.detail)
            return
        self.waits.pop(job.key, None)
        self.keeping.stamps[job.key] = job.stamp
        if outcome.ok:
            log.info("extension layer %s: %s", outcome.path, outcome.detail)
        else:
            log.error("extension layer %s: %s", job.agent_dir, outcome.detail)
            notify("senpi-guard took its extension out", outcome.detail[:200])
        if pipeline.loader_stamp(job.installs, self.keeping.hosts) != job.stamp:
            self.triggers.put("retry changed-during-re-proof")

    def _retry_later(self, job: pipeline.Reproof, detail: str) -> None:
        """A re-proof that failed for a cause that passes (node out of time on a busy machine): the
        extension stays, and a round is asked for after a wait that doubles with each such failure."""
        self.waits[job.key] = wait = retry_after(self.triggers, self.waits.get(job.key))
        log.warning("extension layer %s: %s (in %gs)", job.agent_dir, detail, wait)
