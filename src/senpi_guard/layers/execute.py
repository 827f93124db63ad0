"""The one executor: it carries out a plan's changes once they are proven, for both layers and every
command that writes (apply, the watcher, revert, uninstall). Each file is written only while it is
still the bytes the plan read (a compare-and-swap: io/write), a hand-edited one is kept aside first,
a file without senpi-guard's header is backed up first, and a hold is set once every write is done.

The caller proves the bytes before it hands them over, holds the write lock, and says what the
result means for its command (`Done` is data: what was written, kept and backed up, and the error
that stopped the run, never prose)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard.core.patch import apply
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io import write
from senpi_guard.io.store import Store
from senpi_guard.layers.change import Change, Want
from senpi_guard.layers.extension_kept import keep_aside
from senpi_guard.prove.verify import Cancelled


@dataclass(frozen=True)
class Ready:
    """One change made ready to carry out: the plan's `change` and the bytes to write (None: the
    file goes). A target file of an install (`install`, `snapshot`) is written only while it is what
    was read; the extension's file (`found`: its bytes as read, None when there was none) likewise."""

    change: Change
    data: bytes | None
    snapshot: write.Snapshot | None = None
    install: Install | None = None
    rel: str = ""  # the file's path inside its install (how it is named in the records)
    backup_under: str = ""  # a target file backed up first (no header of ours), filed under this original sha256
    found: bytes | None = None

    @property
    def name(self) -> str:
        return self.rel or str(self.change.where)


@dataclass
class Done:
    """What one run of the executor did; `error` is what stopped it (nothing after it was written)."""

    changed: list[str] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    final: dict[str, str] = field(default_factory=dict)  # each written file's new sha256 (by path)
    error: FatalError | OSError | None = None


def execute(ready: list[Ready], store: Store, cancel: threading.Event, hold: tuple[Path, str] | None = None) -> Done:
    """Carry out each change in turn; the first that fails stops the run (`Done.error`). `hold`
    (where, why): set once every change is made, as a revert asks."""
    done = Done()
    for item in ready:
        try:
            _carry_out(item, store, cancel, done)
        except (FatalError, OSError) as exc:
            done.error = exc
            return done
        done.changed.append(item.name)
        if item.data is not None:
            done.final[str(item.change.where)] = apply.sha256(item.data)
    if hold is not None:
        try:
            store.set_hold(*hold)
        except (FatalError, OSError) as exc:
            done.error = exc
    return done


def _go_on(cancel: threading.Event) -> None:
    """A stop asked for (the watcher's) ends the run before its next write: checked right before each."""
    if cancel.is_set():
        raise Cancelled("stopped before writing; nothing more was written")


def _carry_out(item: Ready, store: Store, cancel: threading.Event, done: Done) -> None:
    change = item.change
    if item.snapshot is not None:  # a target file of an install
        _write_target(item, store, cancel, done)
        return
    path = change.where
    there = item.found
    _go_on(cancel)  # (taking an edited extension aside takes it out: that is its first write)
    if change.keep_aside:  # (moved out of the extensions folder, where senpi would still load it)
        kept, pruned = keep_aside(path, store)
        done.kept.append(kept)
        done.pruned.extend(pruned)
        there = None
    if change.want == Want.WRITE and item.data is not None:
        write.place(path.parent, path.name, item.data, there)
    elif change.want == Want.REMOVE and there is not None:
        write.take(path.parent, path.name, there)


def _write_target(item: Ready, store: Store, cancel: threading.Event, done: Done) -> None:
    snapshot, install = item.snapshot, item.install
    assert snapshot is not None and install is not None and item.data is not None
    if item.change.keep_aside:
        done.kept.append(str(store.save_drifted(install.package_dir, install.version, item.rel, snapshot.data)))
    if item.backup_under:  # (the original, or hand-fixed: revert can give it back)
        saved = store.save_backup(install.package_dir, install.version, item.rel, snapshot.data, item.backup_under)
        done.backups.append(str(saved))
    _go_on(cancel)
    write.replace(snapshot, item.data)
