"""status as text: the watcher line of a last reconcile no running watcher did (the watcher stopped,
or it came before the running one started) says how long ago and by whom, rather than reading as
current; the `saves` figures fit three short lines with their basis; prose wraps at the width."""

from __future__ import annotations

import time

from senpi_guard import ui
from senpi_guard.commands import status_view as status


def test_a_stopped_watchers_last_reconcile_says_when_it_was():
    now = time.time()
    assert status._stale(now - 3 * 3600 - 5, None) == " (3 h ago, by a watcher not running now)"
    assert status._stale(now - 2 * 86400, None).startswith(" (2 days ago,")
    assert status._stale(now - 90, {"pid": 1, "since": now - 10}) == (
        " (1 min ago, by an earlier watcher, before this one started)"
    )
    assert status._stale(now - 5, {"pid": 1, "since": now - 10}) == ""  # (the running watcher's own)
    assert status._stale(None, None) == "" and status._stale("x", None) == ""


KEEP_LAST = {
    "source": "measured on 2026.8.22-2",
    "keep_last": True,
    "session": "incident-70",
    "dist": {
        "installed": {"cache_write_tokens": 6384.8, "prompt_tokens": 8987.1, "usd": 0.0412061},
        "patched": {"cache_write_tokens": 498.9, "prompt_tokens": 9014.3, "usd": 0.0073757},
    },
    "calls": 71,
    "model": "claude-opus-4-5",
    "priced": True,
    "extension": {"before": 1779942, "after": 59565},
}


def test_saves_says_the_figure_its_basis_and_both_layers_in_three_short_lines():
    lines = status.saves_lines(KEEP_LAST)
    assert lines == [
        "Claude: $0.0412 -> $0.0074 a call (-82%), 71 calls",
        "other providers: 1,779,942 -> 59,565 bytes a call (-97%)",
        "claude-opus-4-5 list price, full re-sends; measured on 2026.8.22-2",
    ]
    unpriced = status.saves_lines({**KEEP_LAST, "priced": False, "extension": None})
    assert unpriced == [
        "Claude: 6,385 -> 499 cache-write tokens a call (-92%), 71 calls",
        "unpriced, full re-sends; measured on 2026.8.22-2",
    ]
    older = {**KEEP_LAST, "keep_last": False, "dist": {"installed": 1790855, "patched": 70478}}
    assert status.saves_lines(older)[0] == "Claude: 1,790,855 -> 70,478 bytes (-96%) a full re-send"
    assert status.saves_lines(None) == []
    assert status.saves_lines({"source": "", "dist": None}) == [
        "no figure for these settings yet: `senpi-guard verify` measures it"
    ]
    for line in [*lines, *status.saves_lines(older)]:
        assert len(ui.field("saves", line, 80)) == 1  # (each fits one line of an 80-column terminal)


def test_prose_wraps_at_the_width_and_never_breaks_a_path_or_a_command():
    path = "/very/long/path/" + "x" * 90 + ".js"
    text = f"words before {path} and `senpi-guard apply --dry-run -v` then more words to wrap here"
    lines = ui.field("next", text, 50)
    assert lines[0].startswith("  next      words before")
    assert path in [line.strip() for line in lines]  # (on a line of its own, whole)
    assert any("`senpi-guard apply --dry-run -v`" in line for line in lines)
    assert all(len(line) <= 50 for line in lines if path not in line)
    assert " ".join(line.strip() for line in lines).replace("next ", "", 1).split() == text.split()
