"""The extension's proof through senpi's own loader and runner, remembered by content: the bytes of
every file node loaded for it (senpi's loader, runner and their dependencies, as the harness lists
them with node's module.registerHooks), our rendered extension, the checks, fixtures and harness,
and node's version. A reinstall of the same senpi (new inodes, same bytes) reuses the proof; one
changed byte in any file it loaded, a new node or a new extension proves afresh. Without the list
(node < 22.15, or no senpi host) nothing is remembered here. `verify --fresh` never reuses one."""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from senpi_guard.errors import FatalError
from senpi_guard.io import locks, reader
from senpi_guard.io.write import write_private
from senpi_guard.prove import replays
from senpi_guard.prove.verify import VerifyReport

IMPORTED = "imported"  # (the stats field the harness's list travels in; never kept in a report)


def content_key(base: dict) -> str:
    return hashlib.sha256(json.dumps(base, sort_keys=True).encode()).hexdigest()


def _unchanged(imported: dict[str, str]) -> bool:
    """Every file still holds the bytes it held (thousands of files: plain strings, not Paths)."""
    for path, wanted in imported.items():
        try:
            digest = reader.sha256(path, reader.DIST)
        except (OSError, TypeError, ValueError, reader.Refused):
            return False
        if digest != wanted:
            return False
    return True


class ContentProofs:
    """Proofs by content in `<state dir>/extension-proofs.json`, the files each loaded beside it."""

    def __init__(self, path: Path) -> None:
        self.memo = replays.ReplayMemo(path)
        self.lists = path.with_name(path.stem + "-imports.json")

    def get(self, key: str) -> VerifyReport | None:
        report = self.memo.get(key, True)
        if report is None:
            return None
        imported = self._imports().get(key)
        if not isinstance(imported, dict) or not imported or not _unchanged(imported):
            return None
        return report

    def put(self, key: str, report: VerifyReport) -> VerifyReport:
        """Remember a passing proof with what it loaded; the report without that list."""
        imported = report.stats.get(IMPORTED)
        stats = {k: v for k, v in report.stats.items() if k != IMPORTED}
        report = VerifyReport(report.ok, report.failures, report.checks_run, stats, report.node_version)
        if report.ok and isinstance(imported, dict) and imported:
            with locks.memo_lock(self.lists.parent):  # (both files read and written as one)
                lists = self._imports()
                lists[key] = imported
                self.memo.put(key, report)
                kept = {k: v for k, v in lists.items() if k in self.memo._stored()}
                with contextlib.suppress(FatalError):  # not remembering only costs a later proof
                    write_private(self.lists, json.dumps(kept).encode())
        return report

    def _imports(self) -> dict:
        try:
            data = json.loads(reader.read(self.lists, reader.STATE))
        except (OSError, ValueError, reader.Refused):
            return {}
        return data if isinstance(data, dict) else {}
