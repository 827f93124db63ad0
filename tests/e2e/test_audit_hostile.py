"""audit against hostile targets and hostile session files: a target that loops or prints at import,
wrong-typed session fields, a file cut short while it is read, a FIFO or a device named as the
session. Each ends in one clear line (and, with --json, one JSON document), never a hang or a
traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import HANG_S, rows_of, run_cli, write_user_config

from senpi_guard.audit import replay, session
from senpi_guard.demo import sample, sample_session
from senpi_guard.errors import FatalError

LOOP = "while (true) {}\n"
PRINTS = "console.log('hello from the target at import');\n"
EXITS = "console.log('bye from the target'); process.exit(0);\n"


def target_pkg(tmp_path: Path, name: str, prelude: str) -> Path:
    """A sample senpi (not installed by npm: audit and apply take it by --root) whose prompt-bridge
    runs `prelude` at import."""
    pkg = tmp_path / name
    sample.write_sample_package(pkg, 2, fillers=0, bridge_source=prelude + sample.prompt_bridge_source(2))
    return pkg


def plain_pkg(tmp_path: Path) -> Path:
    pkg = tmp_path / "plain"
    sample.write_sample_package(pkg, 2, fillers=0)
    return pkg


def run_bounded(*args: str | Path, timeout: float = HANG_S) -> tuple[int, str, str, float]:
    """senpi-guard in its own process group, killed with everything it started (a looping node
    included) if it outlives `timeout`: a hang fails the test instead of stalling the suite."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "senpi_guard", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"senpi-guard {' '.join(map(str, args))} still ran after {timeout}s")
    return proc.returncode, out, err, time.monotonic() - started


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# ---- 1. a target that never returns ------------------------------------------------------------


@pytest.mark.parametrize("as_json", [False, True])
def test_a_target_that_loops_at_import_times_out(tmp_path, isolated_dirs, as_json):
    write_user_config(isolated_dirs, "verify_timeout = 1.5\n")
    pkg = target_pkg(tmp_path, "loops", LOOP)
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=2, directive_bytes=300)
    code, out, err, took = run_bounded("audit", path, "--root", pkg, *(["--json"] if as_json else []))
    line = one_line(err)
    assert code == 1 and took < 30
    assert "1.5s" in line and "verify_timeout" in line and str(pkg) in line
    if as_json:
        doc = json.loads(out)
        assert doc["sessions"] == [] and "verify_timeout" in doc["error"]
    else:
        assert out == ""


def test_a_looping_audit_is_cancelled_at_once(tmp_path):
    from senpi_guard.commands import common
    from senpi_guard.discover import describe

    patches, config = common.load()
    patch = next(p for p in patches if p.audit)
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    installs = [describe(target_pkg(tmp_path, "loops", LOOP), "npm")]
    with (
        pytest.raises(FatalError, match="stopped during the audit"),
        replay.serializer(installs, patch, config, cancel=cancel),
    ):
        pass
    assert time.monotonic() - started < 5  # (verify_timeout is 60 s here)


# ---- 2. wrong-typed session fields -------------------------------------------------------------


def _session_with(tmp_path: Path, name: str, extra: list[dict]) -> tuple[Path, int]:
    """A sample session, then `extra` chained after its last entry and an assistant reply; returns
    the file and the line number of the first extra entry."""
    path = sample_session.write_sample_session(tmp_path / f"{name}.jsonl", turns=2, directive_bytes=300, extras=False)
    lines = path.read_text().splitlines()
    parent = json.loads(lines[-1])["id"]
    for number, entry in enumerate(extra):
        entry.setdefault("id", f"x{number}")
        entry.setdefault("parentId", parent)
        entry.setdefault("timestamp", "t")
        parent = entry["id"] if isinstance(entry["id"], str) else parent
    tail = {
        "type": "message",
        "id": "after",
        "parentId": parent,
        "timestamp": "t",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
    }
    path.write_text("\n".join(lines + [json.dumps(e) for e in [*extra, tail]]) + "\n")
    return path, len(lines) + 1


def _assistant(model) -> dict:
    return {
        "type": "message",
        "message": {"role": "assistant", "model": model, "content": [{"type": "text", "text": "hi"}]},
    }


WRONG = {
    "model-number": [_assistant(7)],
    "model-list": [_assistant(["claude-opus-4-5"])],
    "model-change-list": [{"type": "model_change", "modelId": ["claude"], "provider": "claude-sdk-oauth"}],
    "first-kept-list": [{"type": "compaction", "summary": "s", "firstKeptEntryId": ["00000002"]}],
    "first-kept-dict": [{"type": "compaction", "summary": "s", "firstKeptEntryId": {"id": "00000002"}}],
    "type-list": [{"type": ["message"], "message": {"role": "user", "content": "x"}}],
    "role-list": [{"type": "message", "message": {"role": ["user"], "content": "x"}}],
}


@pytest.mark.parametrize("reconstruction", ["senpi", "python"])
@pytest.mark.parametrize("case", sorted(WRONG))
def test_wrong_typed_fields_are_reported_by_line(tmp_path, capsys, case, reconstruction):
    path, line = _session_with(tmp_path, case, json.loads(json.dumps(WRONG[case])))
    pkg = plain_pkg(tmp_path)
    code, out, err = run_cli(capsys, "audit", path, "--json", "--root", pkg, "--reconstruction", reconstruction)
    assert code == 0, err
    (report,) = json.loads(out)["sessions"]
    assert report["turns"] and "unexpected" not in err
    assert line in report["warning_lines"].values(), report["warnings"]
    code, out, err = run_cli(capsys, "audit", path, "--root", pkg, "--reconstruction", reconstruction)
    assert code == 0 and f"line {line}" in one_line(err) and str(path) in err


def _truncating_index(monkeypatch, victims: set[Path]) -> None:
    """senpi rewrites a session while audit reads it: the file is cut in half right after it was
    indexed (only the files in `victims`)."""
    real = session.index

    def index(path: Path) -> session.SessionIndex:
        found = real(path)
        if path in victims:
            os.truncate(path, path.stat().st_size // 2)
        return found

    monkeypatch.setattr(session, "index", index)


@pytest.mark.parametrize("reconstruction", ["senpi", "python"])
def test_a_file_cut_short_while_it_is_read_is_one_line(tmp_path, capsys, monkeypatch, reconstruction):
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=6, directive_bytes=300)
    _truncating_index(monkeypatch, {path})
    code, _, err = run_cli(capsys, "audit", path, "--root", plain_pkg(tmp_path), "--reconstruction", reconstruction)
    line = one_line(err)
    assert code == 1 and str(path) in line and "changed while" in line and "line " in line


def test_all_goes_on_after_a_bad_session(tmp_path, capsys, monkeypatch):
    sessions = tmp_path / "agent" / "sessions" / "--w--"
    good = sample_session.write_sample_session(sessions / "a.jsonl", turns=2, directive_bytes=300)
    odd, _ = _session_with(sessions, "b", [_assistant(["x"]), WRONG["first-kept-dict"][0]])
    cut = sample_session.write_sample_session(sessions / "c.jsonl", turns=6, directive_bytes=900)
    also = sample_session.write_sample_session(sessions / "d.jsonl", turns=3, directive_bytes=300)
    for age, path in enumerate((good, odd, cut, also)):
        os.utime(path, (1000 + age, 1000 + age))
    _truncating_index(monkeypatch, {cut})
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    code, out, err = run_cli(capsys, "audit", "--all", "--json", "--root", plain_pkg(tmp_path))
    assert code == 1 and "unexpected" not in out + err
    by_path = {s["session"]: s for s in json.loads(out)["sessions"]}
    assert len(by_path[str(good)]["turns"]) == 4 and len(by_path[str(also)]["turns"]) == 6
    assert by_path[str(odd)]["turns"] and "error" not in by_path[str(odd)]
    assert "changed while" in by_path[str(cut)]["error"]
    assert err.count("could not audit") == 1 and str(cut) in err
    # the session after the bad one is measured as it is alone (no reply left over from the bad one)
    code, out, err = run_cli(capsys, "audit", also, "--json", "--root", plain_pkg(tmp_path))
    assert code == 0, err
    assert json.loads(out)["sessions"][0]["turns"] == by_path[str(also)]["turns"]


# ---- 3. a session path that is not a regular file ----------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_fifo_or_a_device_is_named_for_what_it_is(tmp_path, kind, as_json):
    if kind == "fifo":
        path = tmp_path / "pipe.jsonl"
        os.mkfifo(path)
        expected = "is a named pipe, not a session file"
    else:
        path = Path("/dev/zero")
        expected = "not a regular file"
    code, out, err, _ = run_bounded("audit", path, "--sample", *(["--json"] if as_json else []), timeout=HANG_S)
    line = one_line(err)
    assert code == 1 and expected in line and "does not exist" not in line and str(path) in line
    if as_json:
        assert expected in json.loads(out)["error"]


def test_opening_a_fifo_never_blocks(tmp_path):
    """A session file replaced by a FIFO between the check and the open is refused, not waited on."""
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            session.read_header(path)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():  # blocked in open(): a writer releases it
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(5)
        pytest.fail("reading a FIFO blocked")
    assert isinstance(outcome[0], FatalError) and "named pipe" in str(outcome[0])


# ---- 4. --json is one document, whatever happens -----------------------------------------------


def test_json_is_one_document_when_the_install_cannot_serialise(tmp_path, capsys):
    pkg = target_pkg(tmp_path, "broken", "")
    bridge = pkg / "dist/core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js"
    bridge.write_text("export const nothing = 1;\n")
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=2, directive_bytes=300)
    code, out, _ = run_cli(capsys, "audit", path, "--json", "--root", pkg)
    assert code == 1
    doc = json.loads(out)
    assert doc["sessions"] == [] and "cannot serialise" in doc["error"]


@pytest.mark.parametrize("raised", [KeyboardInterrupt, RuntimeError])
def test_json_is_one_document_when_a_session_stops_half_way(tmp_path, capsys, monkeypatch, raised):
    real = replay.audit_session

    def stops(path, server, on_turn=None):
        def one_row_then_stop(row):
            on_turn(row)
            raise raised("stopped half way")

        return real(path, server, one_row_then_stop)

    monkeypatch.setattr(replay, "audit_session", stops)
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=3, directive_bytes=300)
    code, out, err = run_cli(capsys, "audit", path, "--json", "--root", plain_pkg(tmp_path))
    doc = json.loads(out)
    assert "Traceback" not in err
    if raised is KeyboardInterrupt:
        assert code == 130 and doc["error"] == "interrupted"
    else:
        assert code == 3
        (report,) = doc["sessions"]
        assert len(report["turns"]) == 1 and "stopped half way" in report["error"]


# ---- 5. a target that prints at import ---------------------------------------------------------


def test_a_target_that_prints_at_import_is_audited(tmp_path, capsys):
    pkg = target_pkg(tmp_path, "prints", PRINTS)
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=3, directive_bytes=300)
    code, out, err = run_cli(capsys, "audit", path, "--json", "--root", pkg)
    assert code == 0, err
    (report,) = json.loads(out)["sessions"]
    assert len(report["turns"]) == 6 and report["reconstruction"] == "senpi"


def test_a_target_that_prints_at_import_is_verified_and_applied(tmp_path, capsys):
    pkg = target_pkg(tmp_path, "prints", PRINTS)
    code, out, err = run_cli(capsys, "apply", "--json", "--root", pkg)
    assert code == 0, out + err
    assert {row["state"] for row in rows_of(json.loads(out))} == {"patched"}
    code, out, err = run_cli(capsys, "verify", "--root", pkg)
    assert code == 0, out + err


def test_a_target_that_exits_at_import_says_what_it_printed(tmp_path, capsys):
    pkg = target_pkg(tmp_path, "exits", EXITS)
    code, out, err = run_cli(capsys, "apply", "--json", "--root", pkg)
    (row,) = rows_of(json.loads(out))
    assert code == 1 and "bye from the target" in row["detail"] and "ended without its report" in row["detail"]
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=2, directive_bytes=300)
    code, out, err = run_cli(capsys, "audit", path, "--root", pkg)
    line = one_line(err)
    assert code == 1 and "bye from the target" in line and str(pkg) in line


def test_senpis_session_code_that_does_not_import_is_a_fallback_the_report_names(tmp_path, capsys):
    # (audit falls back to its own reconstruction only for a reason it can name, never silently)
    pkg = plain_pkg(tmp_path)
    manager = pkg / "dist" / "core" / "session-manager.js"
    manager.write_text("throw new Error('senpi-guard test: no session code');\n" + manager.read_text("utf-8"))
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=3, directive_bytes=300)
    code, out, err = run_cli(capsys, "audit", path, "--json", "--root", pkg)
    assert code == 0, err
    (report,) = json.loads(out)["sessions"]
    assert report["reconstruction"] == "python"
    assert "did not import: senpi-guard test: no session code" in report["fallback"], report["fallback"]
    assert "no session code" in err
    code, out, _ = run_cli(capsys, "audit", path, "--root", pkg)
    out = " ".join(out.split())  # (wrapped to the terminal)
    assert code == 0 and "not (all) used" in out and "no session code" in out, out
    code, out, _ = run_cli(capsys, "audit", path, "--json", "--root", plain_pkg(tmp_path / "intact"))
    assert json.loads(out)["sessions"][0]["fallback"] is None
