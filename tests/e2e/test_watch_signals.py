"""Signals to a real watcher process: a SIGHUP that comes while a round is settling is not lost
with the triggers the settle drains, and a storm of signals (each handler interrupting the main
thread wherever it is, the trigger queue's own calls included) neither wedges nor kills it."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from conftest import HANG_S, SHAPE_REL, run_cli, wait_for


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
        what="the SIGHUP's round (every install looked at again)",
    )
    text = watcher.text()
    assert text.index("received SIGHUP") < text.index("trigger=sighup")
    watcher.stop()
    assert watcher.proc.returncode == 0


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
    watcher.stop()  # SIGTERM, right after the storm: a wedged loop would never exit
    text = watcher.text()
    assert watcher.proc.returncode == 0, text[-2000:]
    assert "Logging error" not in text and "Traceback" not in text, text[-3000:]
    assert text.rstrip().endswith("stopped") and (pkg / SHAPE_REL[2]).is_file()


def test_a_sigterm_another_thread_receives_stops_the_watcher_at_once(npm_install, watch, capsys):
    """Python runs a signal's handler in the main thread once that thread runs again. The kernel may
    hand a SIGTERM to any thread (kill(2) with a thread's id makes that one the first choice): the
    watcher's main thread, waiting for its next trigger, must not sleep through it until the rescan
    (a day here: longer than any wait of the tests). Seen in full runs as a watcher that did not stop
    within 10 s."""
    pkg = npm_install(2)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    watcher = watch("--root", pkg, "--rescan-interval", "86400")
    wait_for(lambda: "patch=hand-fix-hooks trigger=startup" in watcher.text(), what="the start-up round")
    pid = watcher.proc.pid
    idle: list[bool] = []  # (the main thread asleep on its wait for a trigger, a second on end: the round is over)
    wait_for(lambda: idle.append(_asleep(pid)) or idle[-10:] == [True] * 10, what="the main thread to wait")
    others = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid)
    assert others, "the watcher runs threads besides its main one"
    os.kill(others[-1], signal.SIGTERM)  # (a thread's id: that thread receives it)
    watcher.proc.wait(timeout=HANG_S)
    assert watcher.proc.returncode == 0 and watcher.text().rstrip().endswith("stopped"), watcher.text()[-2000:]


def _asleep(pid: int) -> bool:
    time.sleep(0.1)  # (ten looks, a tenth of a second apart)
    try:
        return Path(f"/proc/{pid}/wchan").read_text().startswith("futex")
    except OSError:
        return False
