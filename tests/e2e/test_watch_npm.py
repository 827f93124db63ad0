"""The watcher and a package manager still writing: a real `npm install -g` over a watched install,
held for real in its own preinstall script (npm runs a global install's lifecycle scripts, its new
files in place and the old copy beside them) until the test releases it through a FIFO."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

from conftest import HANG_S, SHAPE_REL, node_check, patched, wait_for, write_user_config

from senpi_guard.demo import sample

HELD = "2026.8.9"
# (CommonJS in a package of "type": "module": hence .cjs) says it runs, then reads the FIFO to its
# end: it blocks until the test opens the FIFO for writing and closes it
HOLD_SCRIPT = """const fs = require("fs");
fs.writeFileSync(process.env.HOLD_STARTED, String(process.pid));
fs.readFileSync(process.env.HOLD_FIFO);
"""
NOT_SETTLED = "did not settle within"
REPATCH = "patch=directive-dedupe ("  # (the end of a "reconcile started" line)


def _held_tarball(tmp_path: Path) -> Path:
    src = tmp_path / "held-src"
    sample.write_sample_package(src, 2, HELD, fillers=20)
    manifest = json.loads((src / "package.json").read_text())
    manifest["scripts"] = {"preinstall": "node hold.cjs"}
    manifest["files"].append("hold.cjs")
    (src / "package.json").write_text(json.dumps(manifest, indent=2))
    (src / "hold.cjs").write_text(HOLD_SCRIPT)
    return sample.npm_pack(src, tmp_path / "held-pack")


def _release(fifo: Path, npm: subprocess.Popen) -> None:
    if npm.poll() is None:  # (its script reads the FIFO: the open returns once the script has it open)
        with fifo.open("w") as writer:
            writer.write("go")


def test_a_slow_npm_install_is_repatched_once_after_npm_exits(npm_install, tmp_path, watch, isolated_dirs):
    """issue 48: during a long `npm install -g` the watcher re-patched while npm was still writing and
    logged "installs did not settle within 30s". Now it waits for npm, says so once, and patches the
    new version once, after npm exits."""
    write_user_config(isolated_dirs, "settle_timeout = 2\n")
    prefix = tmp_path / "prefix"
    pkg = npm_install(2, prefix=prefix)
    target = pkg / SHAPE_REL[2]
    tarball = _held_tarball(tmp_path)
    # a rescan comes while npm is held (the settle's limit is then the rescan or the timeout)
    watcher = watch("--root", pkg, "--rescan-interval", "3")
    watcher.wait(lambda text: "round done (startup)" in text, what="the start-up round")
    assert patched(target)
    fifo, started = tmp_path / "release", tmp_path / "started"
    os.mkfifo(fifo)
    mark = watcher.mark()
    npm = subprocess.Popen(
        [sample.require_tool("npm"), "install", "-g", "--no-audit", "--no-fund", "--prefix", str(prefix), str(tarball)],
        env={**os.environ, "HOLD_FIFO": str(fifo), "HOLD_STARTED": str(started)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(lambda: started.exists() or npm.poll() is not None, what="npm to run the preinstall script")
        assert npm.poll() is None, f"npm ended without holding in its preinstall script: {npm.communicate()[0]}"
        # the settle reaches its limit (the timeout, or the rescan) while npm is still at work
        watcher.wait(
            lambda text: NOT_SETTLED in text or "still at work on" in text or REPATCH in text,
            what="the watcher's settle to reach its limit while npm is held",
            after=mark,
        )
        held = watcher.text()[mark:]
        assert NOT_SETTLED not in held and REPATCH not in held, held
        assert f"to finish with {pkg}" in held and "waiting for npm (pid " in held, held
        assert not patched(target)
    finally:
        _release(fifo, npm)
        output = npm.communicate(timeout=HANG_S)[0]
    assert npm.returncode == 0, output
    watcher.wait(lambda text: "after=patched" in text, what="the re-patch after npm exits", after=mark)
    again = watcher.mark()
    watcher.next_round(again, "the watcher's next round after the re-patch")
    log = watcher.text()[mark:]
    assert NOT_SETTLED not in log, log
    assert log.count(REPATCH) == 1 and f"version={HELD} before=unpatched after=patched ok=True" in log, log
    assert log.count("waiting for npm (pid ") == 1, log
    assert patched(target)
    node_check(target)


def test_an_install_that_keeps_changing_without_a_package_manager_still_warns(npm_install, watch, isolated_dirs):
    """The other side: files that keep changing with no package manager at work (here the test's own
    process rewrites the target) still end the settle with its WARNING at settle_timeout."""
    write_user_config(isolated_dirs, "settle_timeout = 2\n")
    pkg = npm_install(2)
    target = pkg / SHAPE_REL[2]
    original = target.read_bytes()
    watcher = watch("--root", pkg, "--rescan-interval", "300")
    wait_for(lambda: patched(target), what="patched at start-up")
    mark = watcher.mark()
    done = threading.Event()

    def rewrite() -> None:  # (faster than the quiet period: the settle never sees two equal looks)
        count = 0
        while not done.is_set():
            target.write_bytes(original + f"\n// rewrite {count}\n".encode())
            count += 1
            done.wait(0.1)

    writer = threading.Thread(target=rewrite, daemon=True)
    writer.start()
    try:
        watcher.wait(lambda text: NOT_SETTLED in text, what="the settle's WARNING", after=mark)
    finally:
        done.set()
        writer.join(timeout=HANG_S)
    wait_for(lambda: patched(target), what="patched once the rewrites stopped")
    node_check(target)
    assert "waiting for" not in watcher.text()[mark:]
