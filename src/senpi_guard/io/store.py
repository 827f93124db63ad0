"""senpi-guard's own files: where they live, backups of original bytes, per-install records, the
watcher's pid file and the one write lock. Nothing here writes into a senpi install."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import platformdirs

from senpi_guard.errors import FatalError
from senpi_guard.io import flock, locks, made, statefile
from senpi_guard.io.logs import crash_log as crash_log  # (the commands' one import for it)
from senpi_guard.io.logs import log_dir as log_dir
from senpi_guard.io.write import os_error, private_dirs, write_private

APP = "senpi-guard"
RECORDS_VERSION = 3  # 1-2 kept one patch's fields on the install itself (see _migrate)
# Records of format 2 and older were all written for the one patch there was then.
LEGACY_PATCH = "directive-dedupe"
PER_PATCH = ("located", "last_verify", "last_reconcile", "backoff")
PROBES_FILE = "probes.json"  # package managers' remembered answers (read-only commands' cache)


def cache_dir() -> Path:
    """What senpi-guard keeps only to be faster (losing it costs time, never data): the one folder
    a read-only command such as `status` writes to."""
    return Path(platformdirs.user_cache_dir(APP))


class Backup(NamedTuple):
    path: Path
    data: bytes


def install_key(package_dir: Path) -> str:
    real = str(Path(package_dir).resolve())
    slug = re.sub(r"[^A-Za-z0-9]+", "-", real).strip("-")[-40:]
    return f"{hashlib.sha256(real.encode()).hexdigest()[:12]}-{slug}"


def safe_version(version: str) -> str:
    """A folder name that stays one folder: no separators, no `.`/`..`, bounded length."""
    safe = re.sub(r"[^A-Za-z0-9.+-]", "_", version)[:80]
    return safe if safe.strip(".") else f"_{len(version)}"


def trusted(folder: Path) -> Path:
    """`folder` if it may hold what senpi-guard trusts: not a symlink, owned by us, writable by no
    one else. A missing folder is fine (it will be made by us)."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return folder
    except OSError as exc:
        raise FatalError(f"cannot look at {folder}: {exc.strerror}; fix it, then retry") from exc
    if stat.S_ISLNK(st.st_mode):
        problem = "is a symbolic link"
    elif not stat.S_ISDIR(st.st_mode):
        problem = "is not a folder"
    elif st.st_uid != os.geteuid():
        problem = f"belongs to uid {st.st_uid}, not to you (uid {os.geteuid()})"
    elif st.st_mode & 0o022:
        problem = f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    elif (above := made.foreign(folder)) is not None:  # (as root: every folder above it root's own too)
        raise FatalError(made.foreign_text(folder, above))
    else:
        return folder
    raise FatalError(
        f"senpi-guard's folder {folder} {problem}; senpi-guard will not trust what is "
        "in it: remove it or make it yours (chown, chmod go-w), then retry"
    )


class Store:
    """Owns the data dir (backups) and the state dir (records, pid file, write lock). Every
    folder on the way to what it reads or writes is checked with `trusted`."""

    def __init__(
        self, data_dir: Path | None = None, state_dir: Path | None = None, stop: threading.Event | None = None
    ) -> None:
        self.data_dir = data_dir or Path(platformdirs.user_data_dir(APP))
        self.state_dir = state_dir or Path(platformdirs.user_state_dir(APP))
        self.stop = stop  # (the watcher's: a wait for the write lock ends when it is set)
        # why a record could not be written in this run (verify's records are not waited for again)
        self.unrecorded: str | None = None

    def _trusted_chain(self, top: Path, folder: Path) -> Path:
        """Check `top` and every folder below it down to `folder`."""
        current = trusted(top)
        for part in folder.relative_to(top).parts:
            current = trusted(current / part)
        return folder

    @property
    def backups_dir(self) -> Path:
        return self.data_dir / "backups"

    @property
    def records_file(self) -> Path:
        return self.state_dir / "state.json"

    @property
    def lock_file(self) -> Path:
        return self.state_dir / "write.lock"

    def _lock_path(self, path: Path) -> str:
        self._trusted_chain(self.state_dir, self.state_dir)
        try:
            private_dirs(self.state_dir)
        except OSError as exc:
            raise os_error(exc, "make", self.state_dir, "fix that folder, then retry") from exc
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise FatalError(
                f"{path} is not a plain file (a symbolic link?); senpi-guard will not "
                "lock through it: remove it, then retry"
            )
        return str(path)

    @property
    def pid_file(self) -> Path:
        return self.state_dir / "watcher.json"

    # ---- the write lock ------------------------------------------------------------------
    def lock(self) -> contextlib.AbstractContextManager[None]:
        """One writer at a time across apply, revert, demo and the watcher (io/locks): says when
        it waits; the thread that holds it takes it again at once (see update_install)."""
        return locks.write_lock(self.lock_file, lambda: self._lock_path(self.lock_file), self.stop)

    # ---- backups -------------------------------------------------------------------------
    def backup_dir(self, package_dir: Path, version: str) -> Path:
        folder = self.backups_dir / install_key(package_dir) / safe_version(version)
        return self._trusted_chain(self.data_dir, folder)

    def save_backup(self, package_dir: Path, version: str, rel: str, found: bytes, base_sha: str) -> Path:
        folder = self.backup_dir(package_dir, version)
        sha = hashlib.sha256(found).hexdigest()
        blob = folder / f"{sha}.orig"
        if not blob.exists():
            write_private(blob, found)
        record = {
            "package_dir": str(package_dir),
            "version": version,
            "file": rel,
            "sha256": sha,
            "base_sha256": base_sha,
            "saved": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        write_private(folder / f"{sha}.json", json.dumps(record, indent=2).encode())
        return blob

    def find_backup(self, package_dir: Path, version: str, rel: str, base_sha: str) -> Backup | None:
        """The bytes found before senpi-guard first patched `rel`, for the edit whose original is
        base_sha. A backup whose content no longer matches its recorded sha256 is an error."""
        folder = self.backup_dir(package_dir, version)
        matches = []
        for meta in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                record = json.loads(meta.read_text("utf-8"))
                if record["file"] == rel and record["base_sha256"] == base_sha:
                    matches.append((str(record["saved"]), meta.with_suffix(".orig"), record["sha256"]))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise FatalError(
                    f"backup record {meta} is corrupt ({exc}); nothing was changed: "
                    "delete it, or revert with --from-edit"
                ) from exc
        if not matches:
            return None
        _, blob, sha = max(matches)
        try:
            data = blob.read_bytes()
        except OSError as exc:
            raise FatalError(
                f"backup {blob} is unreadable ({exc.strerror}); nothing was changed: "
                "revert with --from-edit to remove the edit instead"
            ) from exc
        if hashlib.sha256(data).hexdigest() != sha:
            raise FatalError(
                f"backup {blob} is corrupt (its sha256 is not the recorded {sha[:12]}…); "
                "nothing was changed: revert with --from-edit to remove the edit instead"
            )
        return Backup(blob, data)

    def kept_copies(self) -> list[Path]:
        """The hand-edited files kept aside (a patched target edited by hand, with the note of what it
        was; an edited extension): the user's, kept when the rest of the data folder goes."""
        found = [
            *self.backups_dir.glob("*/*/drifted/*.drifted"),
            *self.backups_dir.glob("*/*/drifted/*.about.json"),
            *(self.data_dir / "extension-kept").glob("*"),
        ]
        return sorted(p for p in found if p.is_file() and not p.is_symlink())

    def save_drifted(self, package_dir: Path, version: str, rel: str, found: bytes) -> Path:
        """Keep a hand-edited patched file before anything replaces it."""
        sha = hashlib.sha256(found).hexdigest()
        copy = self.backup_dir(package_dir, version) / "drifted" / f"{sha}.drifted"
        if not copy.exists():
            write_private(copy, found)
            write_private(
                copy.with_name(f"{sha}.about.json"),
                json.dumps(
                    {
                        "package_dir": str(package_dir),
                        "version": version,
                        "file": rel,
                        "sha256": sha,
                        "saved": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    },
                    indent=2,
                ).encode(),
            )
        return copy

    # ---- holds: `revert` asks the watcher to leave an install alone until `apply` -----------
    def hold_file(self, package_dir: Path) -> Path:
        folder = self._trusted_chain(self.data_dir, self.backups_dir / install_key(package_dir))
        return folder / "hold.json"

    def hold(self, package_dir: Path) -> dict[str, Any] | None:
        try:
            return statefile.load(self.hold_file(package_dir), HOLD, missing=None)
        except FatalError as exc:  # unreadable: treat as held, never patch against it
            return {"reason": f"hold file unreadable ({exc})"}

    def set_hold(self, package_dir: Path, reason: str) -> None:
        held = {"reason": reason, "time": time.time(), "package_dir": str(package_dir)}
        path = self.hold_file(package_dir)
        if (encoded := statefile.encode(path, HOLD, held)) is not None:
            write_private(path, encoded)

    def clear_hold(self, package_dir: Path) -> bool:
        try:
            self.hold_file(package_dir).unlink()
        except FileNotFoundError:
            return False
        return True

    # ---- records (last verification, last reconcile, back-off) ------------------------------
    def load_records(self) -> dict[str, Any]:
        data = statefile.load(self._trusted_chain(self.state_dir, self.state_dir) / "state.json", RECORDS)
        if not isinstance(data.setdefault("installs", {}), dict):
            raise FatalError(f"state file {self.records_file} is not senpi-guard's; {RECORDS.fix}")
        return data

    def save_records(self, data: dict[str, Any]) -> None:
        if (encoded := statefile.encode(self.records_file, RECORDS, data)) is not None:
            write_private(self.records_file, encoded)

    def update_install(self, package_dir: Path, patch: str | None = None, **fields: Any) -> None:
        """Record fields of an install (with `patch`: of that patch on it), under the write lock:
        the records are read, changed and written again, and another writer's change made
        meanwhile (an apply, the watcher, a verify) would be lost."""
        with self.lock():
            self._update_install(package_dir, patch, fields)

    def _update_install(self, package_dir: Path, patch: str | None, fields: dict[str, Any]) -> None:
        data = self.load_records()
        key = str(Path(package_dir).resolve())
        entry = data["installs"].get(key)
        if not isinstance(entry, dict):
            entry = data["installs"][key] = {}
        if patch is not None:
            patches = entry.get("patches")
            patches = entry["patches"] = patches if isinstance(patches, dict) else {}
            record = patches.get(patch)
            entry = patches[patch] = record if isinstance(record, dict) else {}
        entry.update(fields)
        self.save_records(data)

    def install_record(
        self, package_dir: Path, records: dict[str, Any] | None = None, patch: str | None = None
    ) -> dict[str, Any]:
        data = records if records is not None else self.load_records()
        entry = data["installs"].get(str(Path(package_dir).resolve()), {})
        entry = entry if isinstance(entry, dict) else {}
        if patch is not None:
            patches = entry.get("patches")
            entry = patches.get(patch, {}) if isinstance(patches, dict) else {}
        return entry if isinstance(entry, dict) else {}

    def recorded_installs(self) -> list[Path]:
        """The package dirs the records name that still hold a package.json (an install removed
        since is not one any more)."""
        return [
            Path(key)
            for key in self.load_records().get("installs", {})
            if isinstance(key, str) and Path(key).is_absolute() and (Path(key) / "package.json").is_file()
        ]

    # ---- agent dirs: added by `apply --here` (a project's own .senpi/agent, served from then on),
    # and every one an extension file was written to (`revert` and `uninstall` look there too)
    def agent_dirs(self, key: str = "agent_dirs") -> list[Path]:
        found = self.load_records().get(key, [])
        return [Path(p) for p in found if isinstance(p, str)] if isinstance(found, list) else []

    def remember_agent_dir(self, path: Path, keep: bool = True, key: str = "agent_dirs") -> None:
        with self.lock():  # (as update_install)
            data = self.load_records()
            known = [p for p in data.get(key, []) if isinstance(p, str) and p != str(path)]
            data[key] = [*known, str(path)] if keep else known
            self.save_records(data)

    # ---- the watcher: one per state dir, and its pid file ------------------------------------
    @contextmanager
    def watcher_lock(self) -> Iterator[None]:
        """Held for a watcher's lifetime: a second watcher is refused with the first one's pid."""
        import filelock

        lock = filelock.FileLock(self._lock_path(self.state_dir / "watcher.lock"))
        try:
            # (a moment's wait: a status probing whether a watcher runs holds it shared for an instant)
            locks.acquire(lock, 1.0, self.state_dir / "watcher.lock")
        except filelock.Timeout:
            running = self.running_watcher()
            who = f"pid {running['pid']}" if running else "a process that is starting or stopping"
            stop = f"kill {running['pid']}" if running else "kill it"
            raise FatalError(
                f"another watcher is already running for {self.state_dir} ({who}); stop it first "
                f"(`senpi-guard daemon uninstall` if the service runs it, else {stop})"
            ) from None
        try:
            yield
        finally:
            lock.release()

    def write_pid(self, roots: list[Path]) -> None:
        write_private(
            self.pid_file,
            json.dumps({"pid": os.getpid(), "since": time.time(), "roots": [str(r) for r in roots]}).encode(),
        )

    def clear_pid(self) -> None:
        try:
            if json.loads(self.pid_file.read_text()).get("pid") == os.getpid():
                self.pid_file.unlink()
        except (OSError, ValueError, AttributeError):
            pass

    def running_watcher(self) -> dict[str, Any] | None:
        """The pid file's content while a watcher holds the watcher lock and that process is alive,
        else None: the pid file a killed watcher left names no watcher, even once another process
        has its pid (the lock goes with the process that held it)."""
        try:
            data = json.loads(self.pid_file.read_text())
            os.kill(int(data["pid"]), 0)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return data if flock.held_elsewhere(self.state_dir / "watcher.lock") else None


def _migrated(data: dict[str, Any], version: int) -> None:
    data.setdefault("installs", {})
    if version < 3 and isinstance(data["installs"], dict):
        _migrate(data)


RECORDS = statefile.Kind(
    "verification records",
    RECORDS_VERSION,
    None,
    dict,
    "delete it (it only holds verification records) and run the command again",
    migrate=_migrated,
)
# a revert's hold on an install (no `version` before format 1 had one: the same fields)
HOLD = statefile.Kind("a revert's hold", 1, None, dict, "delete it to lift the hold, or run `senpi-guard apply`")


def _migrate(data: dict[str, Any]) -> None:
    """Format 2 -> 3: the per-patch fields move under `patches.<the one patch of then>`."""
    for entry in data["installs"].values():
        if isinstance(entry, dict) and any(key in entry for key in PER_PATCH):
            moved = {key: entry.pop(key) for key in PER_PATCH if key in entry}
            entry.setdefault("patches", {}).setdefault(LEGACY_PATCH, {}).update(moved)
