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


def _row(**over) -> dict:
    extension = {
        "state": "installed",
        "wanted": True,
        "detail": "",
        "agent_dir": "/home/u/.senpi/agent",
        "how": "default",
        "risk": "",
        "here": None,
        "taken_out": None,
    }
    sub = {
        "patch": "directive-dedupe",
        "state": "patched",
        "as_wanted": True,
        "target": "/p/dist/core/prompt-bridge.js",
        "target_rel": "dist/core/prompt-bridge.js",
        "shape": "2026.8.4-2 and later",
        "changes": "per call, upstream's keep-last -> patched (an estimate …). Why: the patch keeps …",
        "saves": KEEP_LAST,
        "last_verify": {"ok": True, "checks": 74, "time": 1_700_000_000},
        "last_verify_of_these_files": True,
        "last_reconcile": {"ok": True, "time": 1_700_000_000, "before": "unpatched", "after": "patched"},
        "extension": extension,
        "detail": "",
    }
    row = {
        "version": "2026.8.22-2",
        "manager": "npm",
        "package_dir": "/p",
        "amiss": [],
        "state": "patched",
        "as_wanted": True,
        "node": {"path": "/usr/bin/node", "version": "v24.1.0", "source": "PATH"},
        "replay_problem": None,
        "patches": [sub, {**sub, "patch": "hand-fix-hooks", "state": "clean", "saves": None, "extension": None}],
        "next": None,
    }
    for key, value in over.items():
        (sub if key in sub else extension if key.startswith("ext_") else row)[key.removeprefix("ext_")] = value
    return row


def shown(capsys, row: dict, verbose: bool, running=None) -> str:
    ui.configure(1 if verbose else 0, "never")
    try:
        status.show([row], running, "not running (start it: senpi-guard daemon install)")
    finally:
        ui.configure(0, "never")
    return capsys.readouterr().out


def test_an_install_as_wanted_is_its_state_and_its_saving_and_verbose_is_every_line(capsys):
    running = {"pid": 7, "since": 1_600_000_000}  # (started before the last reconcile: its own, current)
    out = shown(capsys, _row(), verbose=False, running=running)
    labels = [line.split()[0] for line in out.splitlines() if line.startswith("  ") and line[2] != " "]
    assert labels == ["state", "saves"], out  # (no node, target, verified, watcher, extension line)
    full = shown(capsys, _row(), verbose=True, running=running)
    for label in ("node", "saves", "target", "shape", "changes", "verified", "watcher", "extension", "patch"):
        assert f"  {label} " in full, (label, full)
    assert "watcher: running, pid 7 since " in full and "passed 74 checks at " in full


def test_what_is_amiss_is_said_without_verbose(capsys):
    row = _row(
        state="drifted",
        as_wanted=False,
        detail="our edit was changed by hand",
        last_verify={"ok": False, "checks": 3, "time": 1_700_000_000},
        last_reconcile={"ok": False, "time": 1_700_000_000, "before": "patched", "after": "drifted"},
        ext_state="absent",
        ext_taken_out={"agent_dir": "/a"},
        ext_detail="its proof failed; senpi-guard took it out",
        ext_risk="the extension is here without the dist layer",
        ext_here={"agent_dir": "/proj/.senpi/agent", "how": "nearest", "state": "absent"},
        replay_problem="nobody cannot read it",
        node={"error": "node was not found on PATH"},
        next="run `senpi-guard apply`",
    )
    out = " ".join(shown(capsys, row, verbose=False).split())
    for said in (
        "FAILED 3 checks",
        "last reconcile",
        "(",  # (the stale reconcile says when: no watcher runs)
        "took it out",
        "risk: the extension is here without the dist layer",
        "`senpi-guard apply --here` adds it there",
        "replay error: nobody cannot read it",
        "node error: node was not found on PATH",
        "detail our edit was changed by hand",
        "next run `senpi-guard apply`",
    ):
        assert said in out, (said, out)
    assert "ago, by a watcher not running now" in out


def test_a_node_older_than_senpi_needs_is_said_without_verbose(capsys):
    problem = "v20.1.0 is older than senpi 2026.8.22-2 needs (>=24); put node 24 first on PATH"
    row = _row(node={"path": "/usr/bin/node", "version": "v20.1.0", "source": "PATH", "problem": problem})
    assert f"  node      {problem}" in shown(capsys, row, verbose=False)
