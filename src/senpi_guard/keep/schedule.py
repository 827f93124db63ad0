"""The watcher's schedule of the dist layer: what it remembers of each (install, patch) between
rounds (the files it found and their stat, so an unchanged install is not looked at again), and
its back-off: an install that failed on bytes that are not still changing is not tried again until
its version or bytes change, or `senpi-guard apply` is run. It says which installs are due; the
dist layer's `keep` step does the work (layers/pipeline)."""

from __future__ import annotations

import hashlib
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from senpi_guard import discover
from senpi_guard.core import locate
from senpi_guard.core.patch.definition import Patch
from senpi_guard.errors import FatalError
from senpi_guard.io import reader
from senpi_guard.io.store import Store
from senpi_guard.keep.notify import log, notify
from senpi_guard.layers import pipeline
from senpi_guard.prove import replays

file_stat = replays.file_identity  # (the watcher's name for it)
# a failure that passes (a full disk) is tried again after this many seconds, twice as long after
# each failure in a row, up to the last
RETRY_S = (5.0, 600.0)


def retry_after(triggers: queue.Queue, waited: float | None) -> float:
    """Ask for a round after a wait that doubles with each failure that passes in a row (`waited`:
    the last such wait, None after none), up to RETRY_S's ceiling; returns the wait."""
    first, longest = RETRY_S
    wait = min(longest, waited * 2) if waited else first
    timer = threading.Timer(wait + 0.1, triggers.put, ("retry after a passing failure",))
    timer.daemon = True
    timer.start()
    return wait


def _sha(path: Path) -> str:
    try:
        return reader.sha256(path, reader.DIST)
    except (OSError, reader.Refused):
        return "missing"


def _content_key(inst: discover.Install, target: str | None) -> str:
    """What a failure is keyed on: the target file's sha256 or, when no target could be located,
    a signature of every .js file under dist/ (so any change there lifts the back-off)."""
    if target:
        return _sha(Path(target))
    digest = hashlib.sha256()
    try:
        files = locate.js_files(inst.package_dir / "dist")
    except FatalError:  # (gone, or unreadable, since it was found)
        return "dist:missing"
    for path in files:
        digest.update(f"{path}\0{file_stat(path)}\0".encode())
    return "dist:" + digest.hexdigest()


@dataclass
class Known:
    """What the watcher remembers of an install between reconciles."""

    files: list[Path] = field(default_factory=list)
    fingerprint: tuple = ()


def fingerprint(inst: discover.Install, files: list[Path]) -> tuple:
    return (
        str(inst.real_dir),
        inst.version,
        file_stat(inst.package_dir / "package.json"),
        tuple((str(f), file_stat(f)) for f in files),
    )


class DistSchedule:
    def __init__(self, store: Store, stop: threading.Event, triggers: queue.SimpleQueue[str]) -> None:
        self.store = store
        self.stop = stop
        self.triggers = triggers  # (a retry is asked for by putting one here)
        self.known: dict[tuple[Path, str], Known] = {}  # (install, patch) -> what was seen
        self.trigger = "startup"  # what started the round under way, for the log
        self.quiet_period = 0.0  # (the config's: how long an update still landing may take)
        self.retries: dict[tuple[Path, str], tuple[float, float]] = {}  # -> (when due again, last wait)

    def backed_off(self, patch: Patch, inst: discover.Install) -> bool:
        backoff = self.store.install_record(inst.package_dir, patch=patch.name).get("backoff")
        return (
            isinstance(backoff, dict)
            and backoff.get("version") == inst.version
            and _content_key(inst, backoff.get("target")) == backoff.get("sha256")
        )

    def due(self, patch: Patch, inst: discover.Install) -> bool:
        """Whether an install is due for the dist layer this round: changed since it was last seen
        and not backed off (its version and bytes failed before)."""
        key = (inst.real_dir, patch.name)
        known = self.known.get(key)
        if known and known.fingerprint == fingerprint(inst, known.files):
            return False  # nothing changed since the last reconcile
        if inst.unsupported:
            log.info("install=%s unsupported: %s", inst.package_dir, inst.unsupported)
            self.known[key] = Known([], fingerprint(inst, []))
            return False
        if self.backed_off(patch, inst) or time.monotonic() < self.retries.get(key, (0.0, 0.0))[0]:
            return False
        log.info(
            "reconcile started install=%s patch=%s (%s)", inst.package_dir, patch.name, self.trigger.split(" ", 1)[0]
        )
        return True

    def recorded(self, outcome: pipeline.Outcome, trigger: str) -> None:
        """What the dist layer did to an install: logged, remembered, and backed off when it failed
        on bytes that are not still changing."""
        inst, patch_name = outcome.install, outcome.patch
        key = (inst.real_dir, patch_name)
        if self.stop.is_set() and not outcome.ok:
            log.info("install=%s stopped: %s", inst.package_dir, outcome.detail)
            return
        log.info(
            "patch=%s trigger=%s install=%s version=%s before=%s after=%s ok=%s ms=%d%s",
            patch_name,
            trigger.split(" ", 1)[0],
            inst.package_dir,
            inst.version,
            outcome.before,
            outcome.after,
            outcome.ok,
            outcome.millis,
            f" wrote={','.join(outcome.changed)}" if outcome.changed else "",
        )
        if outcome.ok and outcome.reason is pipeline.Reason.RESHAPE_LEFT:
            log.warning("install=%s %s", inst.package_dir, outcome.detail)
        result = {
            "time": time.time(),
            "trigger": trigger[:200],
            "before": outcome.before,
            "after": outcome.after,
            "ok": outcome.ok,
            "millis": outcome.millis,
            "detail": outcome.detail[:500],
        }
        if outcome.ok and any(_sha(Path(path)) != sha for path, sha in outcome.final_shas.items()):
            # changed after it was read (and we did not write it): what we would remember is stale
            log.info("install=%s changed while reconciling; will look again", inst.package_dir)
            self.triggers.put("retry changed-during-reconcile")
            return
        if outcome.ok:
            self.retries.pop(key, None)
            self.known[key] = Known(outcome.files, fingerprint(inst, outcome.files))
            self._record(inst, patch_name, last_reconcile=result, backoff=None)
            return
        self._record(inst, patch_name, last_reconcile=result)
        if outcome.passing:
            self._retry_later(outcome)
        else:
            self._back_off(outcome)

    def _retry_later(self, outcome: pipeline.Outcome) -> None:
        """A failure that passes (the disk or quota was full): no back-off recorded, the install is
        tried again after a wait that doubles with each such failure in a row (notified once)."""
        inst, key = outcome.install, (outcome.install.real_dir, outcome.patch)
        waited = self.retries.get(key, (0.0, 0.0))[1]
        wait = retry_after(self.triggers, waited)
        self.retries[key] = (time.monotonic() + wait, wait)
        self.known[key] = Known(outcome.files, ())
        log.error(
            "install=%s version=%s could not be patched: %s (tried again in %gs)",
            inst.package_dir,
            inst.version,
            outcome.detail,
            wait,
        )
        if not waited:
            notify(
                "senpi-guard could not patch senpi", f"senpi {inst.version}: {outcome.detail[:200]}; tried again later"
            )

    def _record(self, inst: discover.Install, patch_name: str, **fields: Any) -> None:
        """Fields of the install's record (under the write lock: it may wait for an apply). A
        record not written is logged; the round goes on (the watcher's own memory has it)."""
        try:
            self.store.update_install(inst.package_dir, patch=patch_name, **fields)
        except FatalError as exc:
            log.error("install=%s not recorded: %s", inst.package_dir, exc)

    def _back_off(self, outcome: pipeline.Outcome) -> None:
        """A failure: retried when the install was still changing (an update landing), else not
        tried again until its version or bytes change (a note says so, once)."""
        inst, patch_name = outcome.install, outcome.patch
        target = str(outcome.files[0]) if outcome.files else None
        failed = (inst.version, _content_key(inst, target))
        self.stop.wait(self.quiet_period)  # was it an update still landing?
        now = discover.describe(inst.package_dir)
        if now is None or (now.version, _content_key(inst, target)) != failed:
            log.info("install=%s changed while reconciling; will retry", inst.package_dir)
            self.triggers.put("retry changed-during-reconcile")
            return
        log.error(
            "install=%s version=%s could not be patched: %s (not retried until it changes "
            "or `senpi-guard apply` is run)",
            inst.package_dir,
            inst.version,
            outcome.detail,
        )
        kept = f"a copy of the hand-edited file is at {outcome.backups[0]}; " if outcome.backups else ""
        notify("senpi-guard could not patch senpi", f"senpi {inst.version}: {kept}{outcome.detail[:200]}")
        backoff = {
            "version": inst.version,
            "sha256": failed[1],
            "target": target,
            "error": outcome.detail[:500],
            "time": time.time(),
        }
        self._record(inst, patch_name, backoff=backoff)
        self.known[(inst.real_dir, patch_name)] = Known(outcome.files, ())
