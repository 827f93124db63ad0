"""Classify a target file by its content; keep backups of original bytes and verification records."""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any, NamedTuple

from senpi_guard import edit, fsio, paths
from senpi_guard.config import Config
from senpi_guard.errors import FatalError
from senpi_guard.patchset import Patch

UNPATCHED, PATCHED, STALE, HAND_PATCHED, DRIFTED = (
    "unpatched", "patched", "stale", "hand-patched", "drifted")


class Classified(NamedTuple):
    state: str
    base: bytes | None  # the unpatched bytes, when they can be recovered
    header: edit.Header | None
    detail: str


def classify(data: bytes, patch: Patch, config: Config, render) -> Classified:
    """`render(base) -> bytes` gives what the current patch would make of `base`."""
    header = edit.read_header(data)
    if header is not None:
        try:
            base = edit.remove_edit(data, patch.callees)
        except ValueError as exc:  # EditError, or a syntax error once the payload is cut
            return Classified(DRIFTED, None, header, f"carries a senpi-guard header but {exc}")
        if render(base) == data:
            return Classified(PATCHED, base, header, "")
        if header.version != patch.version or header.config_sha256 != patch.config_digest(config):
            return Classified(STALE, base, header, f"patched by {header.name} v{header.version} "
                              "with other settings; apply re-patches it from the original")
        return Classified(DRIFTED, base, header, "the senpi-guard edit was changed by hand")
    if patch.hand_fix_function and patch.hand_fix_function.encode() in data:
        try:
            base = edit.remove_hand_fix(data, patch.hand_fix_function)
        except ValueError as exc:  # EditError, JsSyntaxError
            return Classified(HAND_PATCHED, None, None, str(exc))
        return Classified(HAND_PATCHED, base, None, f"carries the hand-applied "
                          f"{patch.hand_fix_function}; apply replaces it")
    return Classified(UNPATCHED, data, None, "")


# ---- backups -------------------------------------------------------------------------------

def _install_key(package_dir: Path) -> str:
    real = str(Path(package_dir).resolve())
    slug = re.sub(r"[^A-Za-z0-9]+", "-", real).strip("-")[-40:]
    return f"{hashlib.sha256(real.encode()).hexdigest()[:12]}-{slug}"


def backup_dir(package_dir: Path, version: str) -> Path:
    safe_version = re.sub(r"[^A-Za-z0-9.+-]", "_", version)
    return paths.backups_dir() / _install_key(package_dir) / safe_version


def save_backup(package_dir: Path, version: str, rel: str, found: bytes, base_sha: str) -> Path:
    folder = backup_dir(package_dir, version)
    sha = hashlib.sha256(found).hexdigest()
    blob = folder / f"{sha}.orig"
    meta = folder / f"{sha}.json"
    if not blob.exists():
        fsio.write_private(blob, found)
    record = {"package_dir": str(package_dir), "version": version, "file": rel, "sha256": sha,
              "base_sha256": base_sha, "saved": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    fsio.write_private(meta, json.dumps(record, indent=2).encode())
    return blob


class Backup(NamedTuple):
    path: Path
    data: bytes


def find_backup(package_dir: Path, version: str, rel: str, base_sha: str) -> Backup | None:
    """The bytes found before senpi-guard first patched `rel`, for the edit whose original is
    base_sha. A backup whose content no longer matches its recorded sha256 is an error."""
    folder = backup_dir(package_dir, version)
    matches = []
    for meta in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = json.loads(meta.read_text("utf-8"))
            if record["file"] == rel and record["base_sha256"] == base_sha:
                matches.append((record["saved"], meta.with_suffix(".orig"), record["sha256"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise FatalError(f"backup record {meta} is corrupt ({exc}); nothing was changed: "
                             "delete it, or revert with --from-edit") from exc
    if not matches:
        return None
    _, blob, sha = max(matches)
    try:
        data = blob.read_bytes()
    except OSError as exc:
        raise FatalError(f"backup {blob} is unreadable ({exc.strerror}); nothing was changed: "
                         "revert with --from-edit to remove the edit instead") from exc
    if hashlib.sha256(data).hexdigest() != sha:
        raise FatalError(f"backup {blob} is corrupt (its sha256 is not the recorded {sha[:12]}…); "
                         "nothing was changed: revert with --from-edit to remove the edit instead")
    return Backup(blob, data)


# ---- records (last verification, last reconcile, back-off) --------------------------------

def load_records() -> dict[str, Any]:
    path = paths.state_file()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {"installs": {}}
    except OSError as exc:
        raise FatalError(f"cannot read state file {path}: {exc.strerror}") from exc
    try:
        data = json.loads(raw)
        if not isinstance(data, dict) or not isinstance(data.get("installs", {}), dict):
            raise ValueError("unexpected layout")
    except ValueError as exc:
        raise FatalError(f"state file {path} is corrupt ({exc}); nothing was changed: delete it "
                         "(it only holds verification records) and run the command again") from exc
    data.setdefault("installs", {})
    return data


def save_records(data: dict[str, Any]) -> None:
    fsio.write_private(paths.state_file(), json.dumps(data, indent=2, sort_keys=True).encode())


def update_install_record(package_dir: Path, **fields: Any) -> None:
    data = load_records()
    entry = data["installs"].setdefault(str(Path(package_dir).resolve()), {})
    entry.update(fields)
    save_records(data)


def install_record(package_dir: Path, records: dict[str, Any] | None = None) -> dict[str, Any]:
    data = records if records is not None else load_records()
    return data["installs"].get(str(Path(package_dir).resolve()), {})
