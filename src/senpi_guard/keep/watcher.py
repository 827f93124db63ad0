"""The reconciling watcher: file events plus a periodic rescan, settle, then the same reconcile as
`apply` under the same lock. Failures back off per (version, target sha256). An installed
extension is proven again, after the round's dist layer and in a thread of its own
(keep/reprove), when the installs' loader stamp changed.

Signals: a handler only puts the signal on a queue.SimpleQueue (its put is reentrant: a handler
may interrupt the main thread anywhere, even inside a queue or an Event's lock, which a
queue.Queue or Event.set in the handler would then wait on forever); a relay thread logs it,
sets the stop or asks for the reload, and wakes the loop."""

from __future__ import annotations

import dataclasses
import os
import queue
import signal
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from senpi_guard import discover
from senpi_guard.core.patch.definition import Patch, check_config
from senpi_guard.errors import FatalError
from senpi_guard.io import config as config_mod
from senpi_guard.io import reader
from senpi_guard.io import store as store_mod
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.keep import managers
from senpi_guard.keep.notify import log, log_extension
from senpi_guard.keep.reprove import Reprover
from senpi_guard.keep.schedule import DistSchedule, Known, file_stat
from senpi_guard.layers import pipeline
from senpi_guard.prove import owners

# watchdog warns when a directory that was replaced (an update) is watched again at the same path;
# the old watch is gone with the old inode, so the warning carries no information here.
warnings.filterwarnings("ignore", message="Callback with id", category=RuntimeWarning)
STAGING_PREFIXES = (".senpi-", "_tmp_", ".staging")
MANAGER_ANSWER_MAX_AGE = 600.0  # seconds to reuse `npm root -g` & co. between rescans
SIGNAL_SLICE_S = 0.5  # the longest the main thread waits at once (see _next_trigger)
STABLE_PERIODS = 4  # quiet periods of unchanged targets that end a settle despite other events
MANAGER_POLL_S = 0.5  # how often a settle looks again whether a package manager is still at work
MANAGER_CEILING_S = 900.0  # the longest one is waited for: five times senpi's own `npm install -g`


class _Events(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        self.watcher.event(str(event.src_path))


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


class Watcher:
    def __init__(
        self, patches: list[Patch], config: Config, roots: list[Path], overrides: dict[str, float] | None = None
    ) -> None:
        self.patches = patches
        self.stop = threading.Event()  # also cancels a running replay, any write not started, a lock's wait
        self.store = Store(stop=self.stop)
        self.overrides = overrides or {}
        self.config_problem = ""  # what the last reload refused the config for (logged once)
        self.config = dataclasses.replace(config, **self.overrides)
        self.roots = roots
        self.triggers: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.signals: queue.SimpleQueue[int | None] = queue.SimpleQueue()  # (what the handlers put)
        self.last_event = 0.0  # of an event that can change a target (dist/, package.json, above)
        self.observer = Observer()
        self.watches: dict[Path, tuple[object, int | None, bool]] = {}
        self.schedule = DistSchedule(self.store, self.stop, self.triggers)
        self.seen: dict[Path, None] = {}
        self._real_packages: tuple[str, ...] = ()
        self.reload_requested = False
        self.keeping = pipeline.Keeping()  # the layers' memory between rounds
        self.reprover = Reprover(self.store, self.stop, self.keeping, self.triggers)
        self.managers = managers.Tracker(MANAGER_CEILING_S)

    # ---- events and watches ------------------------------------------------------------
    def event(self, path: str) -> None:
        """An event under a package dir matters only in dist/ or for package.json; one above it
        (a package dir replaced, a staging dir) always does."""
        for package in self._real_packages:
            if path.startswith(package + os.sep):
                rel = path[len(package) + 1 :]
                if rel != "package.json" and rel != "dist" and not rel.startswith("dist" + os.sep):
                    return
                break
        self.last_event = time.monotonic()
        self.triggers.put(f"event {path}")

    def installs(self) -> list[discover.Install]:
        if self.roots:
            found = []
            for root in self.roots:
                described = discover.describe(root) if (root / "package.json").is_file() else None
                if described is not None:
                    found.append(described)
        else:  # (and every install the state records, as status and apply: one patched with --root, say)
            found = discover.discover(max_age=MANAGER_ANSWER_MAX_AGE, recorded=self.store.recorded_installs()).installs
        for inst in found:
            if not inst.unsupported:
                self.seen.setdefault(inst.package_dir, None)
        return found

    def watched_packages(self) -> list[Path]:
        """--root dirs and every package dir ever found: an update moves a package dir aside or
        swaps it, and discovery must not make the watcher forget where senpi lives meanwhile.
        A dir whose parent is gone too (pnpm removed the whole project dir) is let go."""
        for gone in [d for d in self.seen if not d.exists() and not d.parent.exists()]:
            del self.seen[gone]
        return list(dict.fromkeys([*self.roots, *self.seen]))

    def _wanted_watches(self) -> dict[Path, bool]:
        wanted: dict[Path, bool] = {}
        for package_dir in self.watched_packages():
            # ancestors, non-recursive: node_modules/@code-yeongyu survives an npm swap; pnpm's
            # global dir (four levels up) sees a new project dir appear
            for ancestor in list(package_dir.parents)[:4]:
                wanted.setdefault(ancestor, False)
            if package_dir.is_dir():
                wanted[Path(os.path.realpath(package_dir))] = True
        resolved: dict[Path, bool] = {}
        for path, recursive in wanted.items():
            while not path.is_dir() and path != path.parent:
                path, recursive = path.parent, False
            resolved[path] = resolved.get(path, False) or recursive
        return resolved

    def rearm(self) -> None:
        """Watch what exists now; a directory that was replaced (new inode) is watched anew."""
        wanted = self._wanted_watches()
        self._real_packages = tuple(os.path.realpath(p) for p in self.watched_packages())
        for path in list(self.watches):
            handle, inode, recursive = self.watches[path]
            if path not in wanted or _inode(path) != inode or wanted[path] != recursive:
                self.observer.unschedule(handle)
                del self.watches[path]
        for path, recursive in wanted.items():
            if path not in self.watches:
                try:
                    handle = self.observer.schedule(_Events(self), str(path), recursive=recursive)
                except OSError as exc:
                    log.warning("cannot watch %s: %s", path, exc)
                    continue
                self.watches[path] = (handle, _inode(path), recursive)

    # ---- settle ------------------------------------------------------------------------
    def _package_state(self, package_dir: Path) -> tuple:
        """What must hold still before patching; `busy` when an update is visibly under way."""
        try:
            staging = tuple(sorted(e for e in os.listdir(package_dir.parent) if e.startswith(STAGING_PREFIXES)))
        except OSError:
            staging = ()
        try:
            manifest = discover.read_manifest(package_dir)
            version = manifest.get("version") if manifest else None
        except FatalError as exc:  # (one senpi-guard will not read, a FIFO say: no update under way)
            version = str(exc)
        present = package_dir.exists()
        real = Path(os.path.realpath(package_dir))
        files = [f for patch in self.patches for f in self.schedule.known.get((real, patch.name), Known()).files]
        busy = bool(staging) or (present and version is None)
        return (str(package_dir), present, version, staging, tuple(file_stat(f) for f in files)), busy

    def settle(self, rescan_at: float) -> bool:
        """Wait until every install looks the same twice and either no relevant event came for
        quiet_period, or package.json and the targets held still for STABLE_PERIODS of them
        while other files under dist/ kept changing. Gives up at settle_timeout, and returns at
        `rescan_at` so that a rescan is never postponed; but while a package manager is at work on
        an install (keep/managers) it waits past both, for at most MANAGER_CEILING_S: a round then
        would patch what the manager is still writing, and settle_timeout counts from its exit."""
        deadline = min(time.monotonic() + self.config.settle_timeout, rescan_at)
        previous, stable_since, worked_until = None, time.monotonic(), float("-inf")
        while not self.stop.is_set():
            self.installs()
            self.rearm()
            packages = self.watched_packages()
            states = [self._package_state(d) for d in packages]
            current = [fingerprint for fingerprint, _ in states]
            busy = any(flag for _, flag in states)
            if working := self.managers.at_work(packages):
                now = time.monotonic()
                if worked_until < deadline <= now:  # (said once: why neither a WARNING nor a round comes)
                    package_dir, manager = next(iter(working.items()))
                    log.debug("%s (pid %d) still at work on %s; waiting on", manager.name, manager.pid, package_dir)
                previous, stable_since, worked_until = current, now, now
                self.stop.wait(MANAGER_POLL_S)
                continue
            now = time.monotonic()
            quiet_for = now - self.last_event
            if current != previous or busy:
                stable_since = now
            stable = current == previous and not busy
            if stable and (
                quiet_for >= self.config.quiet_period or now - stable_since >= STABLE_PERIODS * self.config.quiet_period
            ):
                return True
            previous = current
            if now >= rescan_at:
                return False
            if now > max(deadline, worked_until + self.config.settle_timeout):
                log.warning(
                    "installs did not settle within %gs; will retry on the next trigger", self.config.settle_timeout
                )
                return False
            self.stop.wait(max(0.05, min(self.config.quiet_period - quiet_for, rescan_at - now)))
        return False

    # ---- reconcile ---------------------------------------------------------------------
    def reload_config(self, force: bool = False) -> None:
        """Pick up a changed config file, so the watcher never undoes an `apply` made with it;
        `force` (SIGHUP) also forgets what it knew, so every install is looked at again."""
        if force:
            self.schedule.known.clear()
            self.keeping.stamps.clear()  # (and every installed extension is proven again, memo allowed)
        try:
            fresh = config_mod.load()
            check_config(self.patches, fresh)
        except FatalError as exc:  # (said once until it changes: every round reloads)
            if force or str(exc) != self.config_problem:
                log.error("config not reloaded, keeping the previous one: %s", exc)
            self.config_problem = str(exc)
            return
        self.config_problem = ""
        fresh = dataclasses.replace(fresh, **self.overrides)
        if fresh != self.config:
            log.info(
                "config changed; reconciling every install with it (%s)",
                "; ".join(f"{p.name}: {p.settings(fresh)}" for p in self.patches),
            )
            self.config = fresh
            reader.use(fresh)
            self.schedule.known.clear()

    def reconcile_all(self, trigger: str) -> None:
        self.reload_config()
        installs = self.installs()
        self.rearm()
        # the same layers, in the same order, as apply; each keeps its own policy (layers/pipeline's
        # `keep` step): the watcher only says which installs are due and logs what comes back
        flow = pipeline.build(self.patches, self.config, self.store, cancel=self.stop)
        run = pipeline.Run(keeping=self.keeping)
        with owners.step():  # (one judgement of whose code a replay runs, per round)
            for layer in flow.keep_order():
                if self.stop.is_set():
                    return
                self.schedule.trigger = trigger
                self.schedule.quiet_period = self.config.quiet_period
                for result in self._kept(layer, installs, run):
                    if result.layer == "dist":
                        self.schedule.recorded(result, trigger)
                    else:
                        log_extension(result)

    def _kept(self, layer: pipeline.Layer, installs: list[discover.Install], run: pipeline.Run) -> Iterator:
        """One layer's round: the dist layer's one install at a time, each only when the schedule
        says it is due, asked after the one before was recorded (the schedule judges a failure by
        the bytes it failed on, and its quiet-period wait comes between the installs)."""
        if layer.name != "dist":
            yield from layer.keep(installs, run)
            return
        for install in installs:
            if self.stop.is_set():
                return
            if self.schedule.due(layer.patch, install):
                yield from layer.keep([install], run)

    # ---- main loop ---------------------------------------------------------------------
    def run(self, logfile: Path | None = None) -> int:
        with self.store.watcher_lock():
            log.info(
                "watching (rescan every %gs, quiet period %gs, log %s)",
                self.config.rescan_interval,
                self.config.quiet_period,
                logfile,
            )
            self.store.write_pid(self.roots)
            self.observer.start()
            self.reprover.start()
            try:
                self._loop()
            finally:
                self.stop.set()
                self.reprover.close()
                self.observer.stop()
                self.observer.join(timeout=2)
                self.store.clear_pid()
                self.signals.put(None)
        log.info("stopped")
        return 0

    def _round(self, trigger: str) -> None:
        """One reconcile of everything, then the re-proofs it found due handed over; a failure is
        logged and the watcher goes on (exiting would be a crash loop under the service's Restart=).
        Under -v its start and end are logged too: a round that started after a change has seen it."""
        log.debug("round started (%s)", trigger.split(" ", 1)[0])
        try:
            self.reconcile_all(trigger)
        except FatalError as exc:  # (a stop that came while the round waited for the lock: no failure)
            (log.info if self.stop.is_set() else log.error)("reconcile failed: %s", exc)
        except Exception as exc:  # a bug: logged with its traceback, and the next round still comes
            log.error(
                "reconcile failed: unexpected %s: %s; the traceback is in %s",
                type(exc).__name__,
                exc,
                store_mod.crash_log(exc),
            )
        self.reprover.hand_over()
        log.debug("round done (%s)", trigger.split(" ", 1)[0])

    def _next_trigger(self, next_rescan: float) -> str:
        # in slices: Python runs a signal's handler in the main thread, and only once that thread runs
        # again; a SIGTERM the kernel hands to another thread (watchdog's, the relay) would otherwise
        # wait out the whole rescan interval (seen: a watcher that did not stop, its main thread here)
        while (left := next_rescan - time.monotonic()) > 0:
            try:
                return self.triggers.get(timeout=min(left, SIGNAL_SLICE_S))
            except queue.Empty:
                continue
        return "rescan"

    def _drain(self) -> None:
        while True:
            try:
                self.triggers.get_nowait()
            except queue.Empty:
                return

    def _reload_if_asked(self, trigger: str) -> str:
        if not self.reload_requested:
            return trigger
        self.reload_requested = False
        self.reload_config(force=True)
        return "sighup"

    def _loop(self) -> None:
        self._round("startup")
        next_rescan = time.monotonic() + self.config.rescan_interval
        while not self.stop.is_set():
            trigger = self._next_trigger(next_rescan)
            if self.stop.is_set():
                break
            if self.reload_requested:
                trigger = self._reload_if_asked(trigger)
            elif time.monotonic() >= next_rescan:
                trigger = "rescan"  # due: no stream of events may postpone it, a package manager at work may
                if self.managers.at_work(self.watched_packages()):
                    self.settle(next_rescan)
            else:
                log.info("settling (%s; quiet period %gs)", trigger.split(" ", 1)[0], self.config.quiet_period)
                if not self.settle(next_rescan) and time.monotonic() < next_rescan and not self.reload_requested:
                    continue
            if trigger == "rescan" or time.monotonic() >= next_rescan:
                if trigger != "sighup":  # (settling ran into the rescan: this round is it)
                    trigger = "rescan"
                next_rescan = time.monotonic() + self.config.rescan_interval
            self._drain()
            # a SIGHUP while settling: its trigger went with the drain, its reload must not
            trigger = self._reload_if_asked(trigger)
            if self.stop.is_set():
                break
            self._round(trigger)

    def install_signal_handlers(self) -> None:
        """The handlers put the signal on a SimpleQueue, nothing else; the relay thread does the rest."""

        def handler(signum, _frame) -> None:
            self.signals.put(signum)

        threading.Thread(target=self._relay, name="senpi-guard signals", daemon=True).start()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, handler)

    def _relay(self) -> None:
        while (signum := self.signals.get()) is not None:
            if signum == signal.SIGHUP:
                log.info("received SIGHUP: reloading the config and looking at every install again")
                self.reload_requested = True
                self.triggers.put("sighup")
            else:
                log.info("received %s, stopping", signal.Signals(signum).name)
                self.stop.set()
                self.triggers.put("stop")
