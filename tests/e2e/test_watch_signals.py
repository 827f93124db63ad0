"""Signals to a real watcher process: a SIGHUP that comes while a round is settling is not lost
with the triggers the settle drains, and a storm of signals (each handler interrupting the main
thread wherever it is, the trigger queue's own calls included) neither wedges nor kills it."""

from __future__ import annotations

import os
import signal
import time

from conftest import SHAPE_REL, run_cli, wait_for


def settling(watcher, since: int) -> bool:
    return watcher.text().count("settling (event") > since


def test_a_sighup_while_settling_gets_its_round(npm_install, watch, capsys):
    pkg = npm_install(2)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0  # (the start-up round then writes nothing)
    watcher = watch("--root", pkg, "--quiet-period", "3", "--rescan-interval", "600")
    wait_for(lambda: "patch=directive-dedupe trigger=startup" in watcher.text(), what="the start-up round")
    seen = watcher.text().count("settling (event")
    (pkg / "dist" / "unrelated.js").write_text("export {};\n")  # an event: the settle begins
    wait_for(lambda: settling(watcher, seen), what="the watcher to settle after the event")
    watcher.proc.send_signal(signal.SIGHUP)  # within its 3 s quiet period
    wait_for(lambda: "received SIGHUP" in watcher.text(), what="the SIGHUP to be seen")
    wait_for(
        lambda: "patch=directive-dedupe trigger=sighup" in watcher.text(),
        timeout=20,
        what="the SIGHUP's round (every install looked at again)",
    )
    text = watcher.text()
    assert text.index("received SIGHUP") < text.index("trigger=sighup")
    assert watcher.stop() < 2.0 and watcher.proc.returncode == 0


def test_a_storm_of_signals_neither_wedges_nor_kills_the_watcher(npm_install, watch, capsys):
    pkg = npm_install(2)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    watcher = watch("--root", pkg, "--quiet-period", "0.05", "--rescan-interval", "600")
    wait_for(lambda: "patch=directive-dedupe trigger=startup" in watcher.text(), what="the start-up round")
    start = len(watcher.text())
    deadline = time.monotonic() + 3
    sent = 0
    while time.monotonic() < deadline:  # events and SIGHUPs together: the loop is in its queue calls
        (pkg / "dist" / f"churn{sent % 7}.js").write_text(f"export const n = {sent};\n")
        os.kill(watcher.proc.pid, signal.SIGHUP)
        sent += 1
    assert watcher.proc.poll() is None, watcher.text()[-2000:]
    wait_for(lambda: "trigger=sighup" in watcher.text()[start:], what="a round for the storm's SIGHUPs")
    took = watcher.stop()  # SIGTERM, right after the storm: a wedged loop would never exit
    text = watcher.text()
    assert took < 5.0 and watcher.proc.returncode == 0, text[-2000:]
    assert "Logging error" not in text and "Traceback" not in text, text[-3000:]
    assert text.rstrip().endswith("stopped") and (pkg / SHAPE_REL[2]).is_file()
