"""Text from a user's files reaches root's terminal, watch.log and the metrics escaped (issue 46,
rows 11 and 13): a package.json version with an escape sequence, `\\r\\n` and a forged line, or a
lone surrogate (valid JSON, no UTF-8 for it), is shown as its escapes, and every command exits as it
would for any version. Real npm installs, real subprocesses (stdout a pipe, strict UTF-8)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HANG_S, run_console, wait_for
from test_hostile_root import give_to

from senpi_guard.io.visible import visible

FORGED = "1.0\u001b[2J\r\nFAKE: patched"
LONE = "\ud800"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff]")  # (any control character but the newline)


def test_visible_escapes_controls_and_lone_surrogates_and_nothing_else():
    assert visible(FORGED) == "1.0\\x1b[2J\\r\\nFAKE: patched"
    assert visible(LONE) == "\\ud800"
    assert visible("a\tb\x7f\x9b\x00") == "a\\tb\\x7f\\x9b\\x00"
    assert visible("é 😀 C:\\path /x") == "é 😀 C:\\path /x"


def _with_version(pkg: Path, version: str) -> None:
    manifest = json.loads((pkg / "package.json").read_text())
    manifest["version"] = version
    (pkg / "package.json").write_text(json.dumps(manifest))  # (ensure_ascii: "\ud800" as JSON writes it)


def _no_forged_lines(text: str) -> None:
    assert not RAW.search(text), repr(text[:2000])
    assert not any(line.startswith("FAKE") for line in text.splitlines()), text


@pytest.mark.parametrize("version", [FORGED, LONE], ids=["escapes", "lone-surrogate"])
def test_a_users_version_is_shown_escaped_everywhere(npm_install, tmp_path, watch, isolated_dirs, version):
    pkg = npm_install(2)
    _with_version(pkg, version)
    shown = visible(version)
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    for args in (["apply"], ["status"], ["status", "--textfile", metrics]):
        done = run_console(*args, "--root", pkg)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stdout + done.stderr
        assert f"senpi {shown} (" in done.stdout or args[-1] == metrics
        _no_forged_lines(done.stdout + done.stderr)
    prom = (metrics / "senpi_guard.prom").read_text(encoding="utf-8")
    _no_forged_lines(prom)
    assert all(line.startswith(("# ", "senpi_guard_")) for line in prom.splitlines())
    assert f'version="{shown.replace(chr(92), chr(92) * 2)}"' in prom
    done = run_console("status", "--json", "--root", pkg)
    assert done.returncode == 0 and json.loads(done.stdout)["installs"][0]["version"] == shown
    watcher = watch("--root", pkg)
    wait_for(lambda: "patch=directive-dedupe trigger=" in watcher.text(), what="the watcher's first round")
    assert watcher.stop() < 10 and watcher.proc.returncode == 0
    logged = (isolated_dirs / "xdg_state_home" / "senpi-guard" / "log" / "watch.log").read_text(encoding="utf-8")
    for text in (watcher.text(), logged):
        _no_forged_lines(text)
        assert f"version={shown} " in text


def test_metrics_labels_and_log_values_are_escaped_where_they_enter(isolated_dirs):
    """The other ways in: a path (a folder name) as a metrics label, and any value of a log line."""

    from senpi_guard.io.prometheus import Family, render
    from senpi_guard.keep import notify

    family = Family("senpi_guard_install_info", "x")
    family.add(1, install=f"/home/u/{FORGED}{LONE}", version="1")
    text = render([family])
    text.encode("utf-8")
    _no_forged_lines(text)
    assert len(text.splitlines()) == 3
    with watch_log() as logfile:
        notify.log.info("install=%s detail=%s n=%d", Path(f"/p/{FORGED}"), LONE, 7)
    logged = logfile.read_text(encoding="utf-8")
    _no_forged_lines(logged)
    assert f"install=/p/{visible(FORGED)} detail=\\ud800 n=7" in logged


def test_an_exception_or_a_built_message_in_a_log_line_is_escaped(isolated_dirs):
    """An exception given as a log value (the re-proof's, the watcher's: it quotes a user's path),
    and a message its caller built itself (`not started: {exc}`), are escaped as any value is."""
    import logging

    from senpi_guard.errors import FatalError
    from senpi_guard.keep import notify

    with watch_log() as logfile:
        notify.log.error("extension layer %s: re-proof failed: %s", "/a", FatalError(f"/home/u/{FORGED}{LONE}"))
        notify.to_log_file(logging.ERROR, f"not started: {FORGED}")
    logged = logfile.read_text(encoding="utf-8")
    _no_forged_lines(logged)
    assert f"re-proof failed: /home/u/{visible(FORGED)}\\ud800" in logged
    assert f"not started: {visible(FORGED)}" in logged
    assert len(logged.splitlines()) == 2


@pytest.mark.parametrize("name", [f"EVIL{FORGED}", "EVIL\udcff"], ids=["escapes", "undecodable-byte"])
def test_a_users_package_folder_is_shown_escaped_in_roots_status(npm_install, attacker, open_dir, name):
    """Root's status over a user's install and agent dir whose settings list `npm:<name>`, a folder
    that user named (an escape sequence and a forged line; a byte no UTF-8 decodes), our package in it."""
    pkg = npm_install(2, prefix=open_dir / "user-prefix")
    agent = open_dir / "user-agent"
    modules = agent / "npm" / "node_modules"
    assert run_console("export", modules / "plain").returncode == 0
    (modules / "plain").rename(modules / name)
    (agent / "settings.json").write_text(json.dumps({"packages": [f"npm:{name}"]}))
    give_to(attacker, open_dir / "user-prefix", agent)
    done = subprocess.run(
        [sys.executable, "-m", "senpi_guard", "status", "--root", str(pkg)],
        capture_output=True,
        timeout=HANG_S,
        env={**os.environ, "SENPI_CODING_AGENT_DIR": str(agent)},
    )
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")  # (strict: raw bytes fail here)
    assert done.returncode in (0, 1) and "Traceback" not in out + err, out + err
    _no_forged_lines(out + err)
    assert f"the senpi package {visible(modules / name)} (" not in out  # (a package as wanted: said with -v)
    verbose = subprocess.run(
        [sys.executable, "-m", "senpi_guard", "status", "-v", "--root", str(pkg)],
        capture_output=True,
        timeout=HANG_S,
        env={**os.environ, "SENPI_CODING_AGENT_DIR": str(agent)},
    )
    out = verbose.stdout.decode("utf-8")
    _no_forged_lines(out)
    assert f"the senpi package {visible(modules / name)} (" in out, out


def test_a_users_session_names_are_shown_escaped_in_roots_audit(npm_install, attacker, open_dir):
    """Root's audit of a user's session whose provider carries an escape sequence and a forged line,
    and whose model a lone surrogate: every view exits 0 and shows them escaped; JSON stays valid."""
    from senpi_guard.demo.sample_session import write_sample_session

    pkg = npm_install(2)
    provider, model = f"prov{FORGED}", f"opus{LONE}"
    session = write_sample_session(open_dir / "s.jsonl", turns=4, directive_bytes=2000, model=model, provider=provider)
    give_to(attacker, session)
    for view in ("text", "json", "prometheus"):
        done = subprocess.run(
            [sys.executable, "-m", "senpi_guard", "audit", "--format", view, "--root", str(pkg), str(session)],
            capture_output=True,
            timeout=HANG_S,
        )
        out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")  # (strict: raw bytes fail here)
        assert done.returncode == 0 and "Traceback" not in out + err, out + err
        _no_forged_lines(out + err)
        if view == "json":
            calls = [turn for one in json.loads(out)["sessions"] for turn in one["turns"]]
            assert {(c["provider"], c["model"]) for c in calls} == {(visible(provider), visible(model))}
        else:
            assert visible(provider).replace("\\", "\\\\" if view == "prometheus" else "\\") in out, out


@contextlib.contextmanager
def watch_log() -> Iterator[Path]:
    """The watcher's log set up as `watch` sets it up, its handlers closed when the block ends."""
    import logging

    from senpi_guard.keep import notify

    logfile = notify.setup_logging(verbose=False)
    try:
        yield logfile
    finally:
        for handler in logging.getLogger("senpi-guard").handlers:
            handler.close()
        logging.getLogger("senpi-guard").handlers.clear()
