"""status's watcher line: a last reconcile no running watcher did (the watcher stopped, or it came
before the running one started) says how long ago and by whom, rather than reading as current."""

from __future__ import annotations

import time

from senpi_guard.commands import status


def test_a_stopped_watchers_last_reconcile_says_when_it_was():
    now = time.time()
    assert status._stale(now - 3 * 3600 - 5, None) == " (3 h ago, by a watcher not running now)"
    assert status._stale(now - 2 * 86400, None).startswith(" (2 days ago,")
    assert status._stale(now - 90, {"pid": 1, "since": now - 10}) == (
        " (1 min ago, by an earlier watcher, before this one started)"
    )
    assert status._stale(now - 5, {"pid": 1, "since": now - 10}) == ""  # (the running watcher's own)
    assert status._stale(None, None) == "" and status._stale("x", None) == ""
