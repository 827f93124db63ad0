"""The watcher against real updates: real npm/pnpm/bun installs, real inotify events."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import (
    SHAPE_REL,
    add_path,
    node_check,
    npm_update,
    patched,
    run_cli,
    sha,
    tool,
    wait_for,
    write_user_config,
)

from senpi_guard.core.patch import apply as edit
from senpi_guard.demo import sample

V1, V2 = "2026.7.30", "2026.8.1"


def test_update_to_another_shape_is_repatched(npm_install, tarballs, tmp_path, watch, capsys):
    prefix = tmp_path / "prefix"
    pkg = npm_install(1, prefix=prefix)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    watcher = watch("--root", pkg)
    wait_for(lambda: "watching" in watcher.text(), what="watcher start")
    npm_update(tarballs[2], prefix)
    wait_for(lambda: patched(pkg / SHAPE_REL[2]), what="v2 patched")
    node_check(pkg / SHAPE_REL[2])
    code, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    report = json.loads(out)
    row = report["installs"][0]
    assert code == 0 and row["version"] == V2 and row["state"] == "patched"
    assert row["last_verify"]["ok"] and row["last_reconcile"]["ok"]
    assert report["watcher"]["pid"] == watcher.proc.pid
    watcher.stop()
    assert watcher.proc.returncode == 0


def test_pnpm_update_swaps_symlink_to_new_dir(env, tarballs, watch, monkeypatch, capsys):
    pnpm = tool("pnpm")
    home = env / "pnpm-home"
    monkeypatch.setenv("PNPM_HOME", str(home))
    add_path(monkeypatch, Path(pnpm).parent, home / "bin")
    subprocess.run([pnpm, "add", "-g", str(tarballs[1])], check=True, capture_output=True)
    watcher = watch("--rescan-interval", "5")
    root = home / "global" / "v11"
    wait_for(
        lambda: any(patched(p) for p in root.glob("*/node_modules/@code-yeongyu/senpi/" + SHAPE_REL[1])),
        what="v1 patched at start-up",
    )
    subprocess.run([pnpm, "add", "-g", str(tarballs[3])], check=True, capture_output=True)
    v2_files = lambda: [p for p in root.glob("*/node_modules/@code-yeongyu/senpi/" + SHAPE_REL[3])]  # noqa: E731
    wait_for(lambda: v2_files() and all(patched(p) for p in v2_files()), what="pnpm v3 patched")
    code, out, _ = run_cli(capsys, "status", "--json")
    rows = json.loads(out)["installs"]
    assert code == 0 and [(r["version"], r["state"]) for r in rows] == [("2026.8.5", "patched")], (out, watcher.text())
    watcher.stop()


def test_a_watcher_without_root_keeps_an_install_the_state_records(env, npm_install, tarballs, tmp_path, watch, capsys):
    """The service's watcher runs without --root. An install patched with --root, where no package
    manager and no PATH folder finds it, is in the state's records: status and apply include it, and
    so does the watcher, across an update (before: never looked at, and nothing said)."""
    prefix = tmp_path / "elsewhere"
    pkg = npm_install(1, prefix=prefix)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    code, out, _ = run_cli(capsys, "status", "--json")
    assert code == 0 and [r["package_dir"] for r in json.loads(out)["installs"]] == [str(pkg)]
    watcher = watch("--rescan-interval", "300")
    wait_for(lambda: "trigger=startup" in watcher.text(), what="the start-up round over the recorded install")
    npm_update(tarballs[2], prefix)
    wait_for(lambda: patched(pkg / SHAPE_REL[2]), what="the recorded install patched after its update")
    watcher.stop()
    assert watcher.proc.returncode == 0


def test_bun_update_relinks_and_cache_stays_intact(env, tarballs, watch, monkeypatch):
    bun = tool("bun")
    home = env / "bun-home"
    monkeypatch.setenv("BUN_INSTALL", str(home))
    subprocess.run([bun, "add", "-g", str(tarballs[1])], check=True, capture_output=True)
    pkg = home / "install/global/node_modules/@code-yeongyu/senpi"
    watcher = watch("--rescan-interval", "5")
    wait_for(lambda: patched(pkg / SHAPE_REL[1]), what="bun v1 patched")
    subprocess.run([bun, "add", "-g", str(tarballs[2])], check=True, capture_output=True)
    wait_for(lambda: patched(pkg / SHAPE_REL[2]), what="bun v2 patched")
    cached = list((home / "install/cache").rglob("claude-sdk-oauth/prompt-bridge.js"))
    assert cached and not any(patched(p) for p in cached)
    assert (
        sha(cached[0]) == sha(Path(sample.__file__).parent / "samples/prompt-bridge-v2.js")
        or cached[0].read_bytes() == sample.prompt_bridge_source(2).encode()
    )
    watcher.stop()


def test_update_lands_while_reconciling(npm_install, tarballs, tmp_path, watch):
    prefix = tmp_path / "prefix"
    pkg = npm_install(1, prefix=prefix)
    watch("--root", pkg)  # its start-up reconcile is under way while the update runs
    npm_update(tarballs[2], prefix)
    wait_for(lambda: patched(pkg / SHAPE_REL[2]), what="v2 patched")
    node_check(pkg / SHAPE_REL[2])


def test_a_watcher_and_a_hand_apply_never_collide(npm_install, tarballs, tmp_path, watch, capsys):
    prefix = tmp_path / "prefix"
    pkg = npm_install(1, prefix=prefix)
    watcher = watch("--root", pkg)
    wait_for(lambda: patched(pkg / SHAPE_REL[1]), what="v1 patched")
    npm_update(tarballs[2], prefix)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0  # races the watcher
    target = pkg / SHAPE_REL[2]
    wait_for(lambda: patched(target), what="v2 patched")
    wait_for(
        lambda: watcher.text().count("reconcile started") == watcher.text().count("ok="),
        what="the watcher to finish what it started",
    )
    data = target.read_bytes()
    assert data.count(b"// senpi-guard: patched by directive-dedupe v") == 1
    assert not list(target.parent.glob(".*.senpi-guard"))
    node_check(target)
    assert "FAILED" not in watcher.text()


def test_package_dir_deleted_and_recreated(npm_install, tarballs, tmp_path, watch):
    import shutil

    prefix = tmp_path / "prefix"
    pkg = npm_install(2, prefix=prefix)
    watcher = watch("--root", pkg)
    wait_for(lambda: patched(pkg / SHAPE_REL[2]), what="patched at start-up")
    mark = watcher.mark()
    shutil.rmtree(pkg)
    watcher.next_round(mark)  # (the watcher has seen it gone)
    npm_update(tarballs[1], prefix)
    wait_for(lambda: patched(pkg / SHAPE_REL[1]), what="re-created install patched")
    assert "could not be patched" not in watcher.text()


def test_target_rewritten_slowly_is_not_patched_half_written(npm_install, tmp_path, watch):
    pkg = npm_install(2)
    target = pkg / SHAPE_REL[2]
    complete = target.read_bytes().replace(b"USER:", b"HUMAN:")
    watcher = watch("--root", pkg)
    wait_for(lambda: patched(target), what="patched at start-up")
    chunks = [complete[i : i + len(complete) // 6 + 1] for i in range(0, len(complete), len(complete) // 6 + 1)]
    with target.open("wb") as handle:  # the way a slow extractor writes: in place, in chunks
        for chunk in chunks:
            handle.write(chunk)
            handle.flush()
            time.sleep(0.15)
    wait_for(lambda: patched(target), what="patched after the slow write")
    header = edit.read_header(target.read_bytes())
    assert header.original_sha256 == edit.sha256(complete)
    # (the log line follows the write: wait for it, from the write it races with)
    wait_for(lambda: watcher.text().count("before=unpatched after=patched") >= 2, what="the re-patch logged")
    assert "could not be patched" not in watcher.text()
    assert watcher.text().count("before=unpatched after=patched") == 2


def _kill_trial(pkg: Path, log: Path, delay_after_start: float) -> None:
    """Start a watcher, wait for its own "reconcile started" line, then kill -9 after a delay."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "senpi_guard", "watch", "--root", str(pkg)], stdout=out, stderr=subprocess.STDOUT
        )
        try:
            wait_for(lambda: "reconcile started" in log.read_text(), what="the watcher's reconcile to start")
            time.sleep(delay_after_start)
        finally:
            proc.kill()
            proc.wait()


def test_kill_9_never_leaves_a_broken_target(npm_install, tmp_path):
    """Kills land at random points of a reconcile, timed from the watcher's own log line (not from
    a fixed delay), so that a slow, busy machine still sees kills before and after the write."""
    pkg = npm_install(2)
    target = pkg / SHAPE_REL[2]
    original = target.read_bytes()
    assert run_cli_subprocess("apply", "--root", pkg) == 0
    full = target.read_bytes()

    memo = Path(os.environ["XDG_STATE_HOME"]) / "senpi-guard" / "replays.json"

    def restore() -> None:
        scratch = target.with_name(".restore")
        scratch.write_bytes(original)
        os.replace(scratch, target)
        memo.unlink(missing_ok=True)  # each reconcile replays with node: a span kills can land in

    # calibrate: how long does one reconcile take here, from its log line to the write?
    restore()
    log = tmp_path / "calibrate.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "senpi_guard", "watch", "--root", str(pkg)], stdout=out, stderr=subprocess.STDOUT
        )
        wait_for(lambda: "reconcile started" in log.read_text(), what="reconcile start")
        started = time.monotonic()
        wait_for(lambda: target.read_bytes() == full, what="the calibration write")
        span = time.monotonic() - started
        proc.kill()
        proc.wait()
    seen = {"original": 0, "patched": 0}
    rng = random.Random(1234)
    for trial in range(30):
        restore()
        _kill_trial(pkg, tmp_path / f"trial{trial}.log", rng.uniform(0, 2 * span))
        data = target.read_bytes()
        assert data in (original, full)
        seen["original" if data == original else "patched"] += 1
        node_check(target)
    assert not list(target.parent.glob(".*.senpi-guard"))
    assert seen["original"] and seen["patched"], (seen, span)  # kills landed before and after the write


def run_cli_subprocess(*args) -> int:
    return subprocess.run(
        [sys.executable, "-m", "senpi_guard", *map(str, args)], capture_output=True, check=False
    ).returncode


def test_backoff_attempts_once_logs_once_notifies_once(custom_package, tmp_path, watch, monkeypatch, capsys):
    # notify-send needs a desktop session, which this machine has not: a stand-in records calls.
    calls = tmp_path / "notifications"
    fake = tmp_path / "bin" / "notify-send"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    fake.chmod(0o755)
    add_path(monkeypatch, fake.parent)
    pkg = custom_package("export function buildPromptBlocks(c) {\n    return [;\n}", version="2026.9.9")
    watcher = watch("--root", pkg, "--rescan-interval", "1")
    wait_for(lambda: "could not be patched" in watcher.text(), what="the failure")
    for n in range(4):  # more triggers: events and rescans, each followed by a round
        (pkg / "dist" / f"touched{n}.txt").write_text("x")
        watcher.next_round(watcher.mark())
    assert watcher.text().count("could not be patched") == 1
    assert watcher.text().count("patch=directive-dedupe trigger=") == 1
    assert len(calls.read_text().splitlines()) == 1
    code, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    assert code == 1 and json.loads(out)["installs"][0]["last_reconcile"]["ok"] is False
    # the user fixes it (reinstalls a good version): the pair changed, so it is retried
    target = pkg / SHAPE_REL[2]
    target.write_text(sample.prompt_bridge_source(2))
    wait_for(lambda: patched(target), what="patched after the fix")
    watcher.stop()


def test_a_fix_that_lands_while_another_install_reconciles_is_tried(custom_package, npm_install, watch):
    """A failed install is backed off on the bytes it failed on, not on what it holds once the round's
    other installs are done: fixed while the next install reconciles, it is patched."""
    broken = custom_package("export function buildPromptBlocks(c) {\n    return [;\n}", version="2026.9.9")
    other = npm_install(2)
    watcher = watch("--root", broken, "--root", other)
    wait_for(
        lambda: f"reconcile started install={other} patch=directive-dedupe" in watcher.text(),
        what="the second install's reconcile",
    )
    target = broken / SHAPE_REL[2]
    target.write_text(sample.prompt_bridge_source(2))  # (the user fixes it while the round goes on)
    wait_for(lambda: patched(target), what="the fixed install patched")
    assert patched(other / SHAPE_REL[2])


def test_rescan_picks_up_a_new_node_version(env, tarballs, watch, monkeypatch):
    nvm = env / "nvm"
    first = nvm / "versions/node/v22.1.0"
    sample.npm_install_global(tarballs[1], first)
    monkeypatch.setenv("NVM_DIR", str(nvm))
    watcher = watch("--rescan-interval", "1")
    wait_for(
        lambda: patched(first / "lib/node_modules/@code-yeongyu/senpi" / SHAPE_REL[1]),
        what="first node version patched",
    )
    second = nvm / "versions/node/v24.3.0"  # a directory no watch covers yet
    sample.npm_install_global(tarballs[2], second)
    wait_for(
        lambda: patched(second / "lib/node_modules/@code-yeongyu/senpi" / SHAPE_REL[2]),
        what="the new node version patched by a rescan",
    )
    watcher.stop()


def test_watcher_follows_a_config_change_instead_of_undoing_apply(npm_install, watch, capsys, isolated_dirs):
    pkg = npm_install(2)
    target = pkg / SHAPE_REL[2]
    watcher = watch("--root", pkg, "--rescan-interval", "1")
    wait_for(lambda: patched(target), what="patched at start-up")
    write_user_config(isolated_dirs, 'tags = ["ultrawork-mode", "my-directive"]\n')
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    wanted = target.read_bytes()
    assert b'"my-directive"' in wanted
    wait_for(lambda: "config changed" in watcher.text(), what="the watcher to reload its config")
    watcher.next_round(watcher.mark())  # a round after it: one that would undo the apply
    assert target.read_bytes() == wanted


@pytest.fixture(scope="module")
def big_tarballs(tmp_path_factory) -> dict[int, Path]:
    """Real-sized packages (3,000+ files): npm takes long enough with the old dir moved aside
    for the watcher to look while senpi is missing."""
    out = tmp_path_factory.mktemp("big")
    packs = {}
    for shape in (1, 2):
        sample.write_sample_package(out / f"src{shape}", shape, fillers=1000)
        packs[shape] = sample.npm_pack(out / f"src{shape}", out)
    return packs


def test_discovery_mode_keeps_watching_across_many_updates(env, big_tarballs, watch):
    """The daemon's mode (no --root): an update moves the package dir aside mid-way; the watcher
    must not forget it. Rescans are off here (their interval outlasts every wait of the tests), so
    only file events can re-patch."""
    tarballs = big_tarballs
    prefix = env / "npm-global"  # NPM_CONFIG_PREFIX of the `env` fixture
    pkg = sample.npm_install_global(tarballs[1], prefix)
    watcher = watch("--rescan-interval", "86400")
    wait_for(lambda: patched(pkg / SHAPE_REL[1]), what="patched at start-up")
    for round_number in range(4):
        shape = 2 if round_number % 2 == 0 else 1
        npm_update(tarballs[shape], prefix)
        wait_for(
            lambda s=shape: patched(pkg / SHAPE_REL[s]),
            what=f"update {round_number + 1} patched by events alone",
        )
    watcher.stop()


def test_the_watcher_installs_the_extension_layer_and_leaves_an_edited_one(npm_install, watch, capsys, isolated_dirs):
    pkg = npm_install(2)
    installed = isolated_dirs / "agent" / "extensions" / "senpi-guard-directive-dedupe.js"
    watcher = watch("--root", pkg, "--rescan-interval", "1")
    wait_for(lambda: installed.is_file(), what="the extension layer installed by the watcher")
    code, out, _ = run_cli(capsys, "status", "--root", pkg, "--json")
    assert code == 0 and json.loads(out)["installs"][0]["layers"] == {"dist": "patched", "extension": "installed"}
    installed.write_text(installed.read_text() + "// mine\n")
    wait_for(
        lambda: "extension layer" in watcher.text() and "modified" in watcher.text(),
        what="the watcher to report the edited extension",
    )
    assert installed.read_text().endswith("// mine\n")  # reported, never replaced
    watcher.stop()


def test_the_watcher_keeps_only_the_layers_the_config_wants(npm_install, watch, isolated_dirs):
    """layers = ["extension"]: the watcher goes through the same layers as apply, so dist/ stays as
    installed. The dist layer comes first in that order: once the extension is there, a dist patch
    would have been written already."""
    pkg = npm_install(2)
    write_user_config(isolated_dirs, 'layers = ["extension"]\n')
    installed = isolated_dirs / "agent" / "extensions" / "senpi-guard-directive-dedupe.js"
    watcher = watch("--root", pkg, "--rescan-interval", "1")
    wait_for(lambda: installed.is_file(), what="the extension layer installed by the watcher")
    assert not patched(pkg / SHAPE_REL[2])
    assert "reconcile started" not in watcher.text()
    watcher.stop()


def test_a_deeply_nested_target_neither_crashes_nor_ends_the_watcher(custom_package, watch):
    """Valid JS nested far past Python's recursion limit inside the target function: the watcher
    reconciles it (patched, or a one-line failure) and is still running after it (a crash would be a
    restart loop under the service)."""
    deep = "[" * 3000 + "blocks" + "]" * 3000
    bridge = sample.prompt_bridge_source(2).replace(
        "export function buildPromptBlocks(context, customNames) {\n",
        f"export function buildPromptBlocks(context, customNames) {{\n    const deep = {deep};\n",
        1,
    )
    assert bridge != sample.prompt_bridge_source(2)
    pkg = custom_package(bridge)
    watcher = watch("--root", pkg, "--rescan-interval", "300")
    wait_for(lambda: "patch=directive-dedupe trigger=startup" in watcher.text(), what="the startup reconcile")
    assert "RecursionError" not in watcher.text() and "unexpected" not in watcher.text()
    assert watcher.proc.poll() is None
    watcher.stop()
