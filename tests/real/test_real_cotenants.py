"""Patches sharing claude-sdk-oauth/prompt-bridge.js on the real builds, seen from the side of the
patches that are NOT being run: another patch's run leaves each of them exactly as the file's header
records it (a settings change the watcher leaves to `apply` stays left), `revert --patch` keeps a
hand-edited file aside, a patch that is not loaded is never dropped, and a co-tenant whose own proof
fails is the one named."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import write_user_config
from test_real_compose import BRIDGE, TEST_PATCHES, carried, extra, failed, run

from senpi_guard import discover
from senpi_guard.core.patch import apply as edit
from senpi_guard.core.patch import definition
from senpi_guard.io import config as config_mod
from senpi_guard.io.store import Store
from senpi_guard.layers.dist import Reconciler

pytestmark = pytest.mark.real


def watcher_pass(pkg: Path) -> dict[str, str]:
    """What the watcher does on an event: each patch's reconcile, keep_reshapes on (keep/watcher.py)."""
    config, store, install = config_mod.load(), Store(), discover.describe(pkg)
    said = {}
    for patch in definition.load_all():
        outcome = Reconciler(patch, config, store).reconcile(install, on_drift=config.on_drift, keep_reshapes=True)
        said[patch.name] = f"{outcome.before}->{outcome.after} ok={outcome.ok} {outcome.detail}"
    return said


def entries(target: Path) -> dict[str, tuple[int, str]]:
    header = edit.read_file_header(target.read_bytes())
    return {e.name: (e.version, e.config_sha256) for e in header.entries} if header else {}


def test_another_patchs_run_keeps_a_reshaping_change_left_to_apply(dist_only, isolated_dirs, monkeypatch):
    pkg = dist_only("2026.8.1")
    target = pkg / BRIDGE
    for key, value in extra("prompt-text", "prompt-stream").items():
        monkeypatch.setenv(key, value)
    assert run("apply", "--root", pkg, env={})["rc"] == 0
    before, applied = entries(target), target.read_bytes()
    write_user_config(isolated_dirs, '[patches.directive-dedupe]\ntags = "auto"\nmin_bytes = 1000\n')
    said = watcher_pass(pkg)
    assert "left as it is" in said["directive-dedupe"], said
    assert entries(target) == before, said  # directive-dedupe's recorded settings, unchanged
    assert target.read_bytes() == applied, said
    assert "ok=True" in said["prompt-text"] and "ok=True" in said["prompt-stream"], said
    # `apply` makes the change, and every patch stays on the file
    assert run("apply", "--root", pkg, env={})["rc"] == 0
    after = entries(target)
    assert after.keys() == before.keys() and after["directive-dedupe"] != before["directive-dedupe"]
    assert after["prompt-text"] == before["prompt-text"]


def test_another_patchs_run_keeps_a_defer_left_to_apply(dist_only, isolated_dirs, monkeypatch):
    pkg = dist_only("2026.8.9")
    target = pkg / BRIDGE
    for key, value in extra("prompt-text").items():
        monkeypatch.setenv(key, value)
    assert run("apply", "--root", pkg, env={})["rc"] == 0
    applied = {p: p.read_bytes() for p in (pkg / "dist").rglob("*.js") if b"senpi-guard: patched by" in p.read_bytes()}
    assert len(applied) == 2  # prompt-bridge.js and prompt-directive-dedupe.js
    write_user_config(isolated_dirs, '[patches.directive-dedupe]\nupstream_dedupe = "defer"\n')
    said = watcher_pass(pkg)
    assert "left as it is" in said["directive-dedupe"], said
    assert {p: p.read_bytes() for p in applied} == applied, said
    status = run("status", "--root", pkg, env={})
    states = {r["patch"]: r["state"] for r in status["installs"][0]["patches"]}
    assert states["directive-dedupe"] != "partial", status
    assert carried(target.read_bytes()) == ("directive-dedupe", "prompt-text")


def test_revert_patch_keeps_a_hand_edit_in_another_patchs_region(dist_only):
    pkg = dist_only("2026.8.1")
    target = pkg / BRIDGE
    env = extra("prompt-text", "prompt-stream", "prompt-blocks")
    applied = run("apply", "--root", pkg, env=env)
    assert applied["rc"] == 0, failed(applied)
    data = target.read_bytes()
    assert data.count(b"\n    return text;\n") == 1
    target.write_bytes(data.replace(b"\n    return text;\n", b"\n    return text; // HANDEDIT\n"))
    reverted = run("revert", "--root", pkg, "--patch", "directive-dedupe", env=env)
    mine = next(r for r in reverted["installs"] if r["patch"] == "directive-dedupe")
    kept = [Path(b) for b in mine["kept"] if "drifted" in b]
    assert kept and b"HANDEDIT" in kept[0].read_bytes(), mine
    assert "HANDEDIT" not in mine["detail"] and "kept at" in mine["detail"], mine


def test_a_patch_no_longer_loaded_is_never_dropped(dist_only, tmp_path):
    pkg = dist_only("2026.8.1")
    target = pkg / BRIDGE
    xp = tmp_path / "xp"
    for name in ("prompt-text", "prompt-stream"):
        shutil.copytree(TEST_PATCHES / name, xp / name)
    assert run("apply", "--root", pkg, env={"SENPI_GUARD_EXTRA_PATCHES": str(xp)})["rc"] == 0
    composed = target.read_bytes()
    fewer = {"SENPI_GUARD_EXTRA_PATCHES": str(xp / "prompt-text")}
    for args in (("revert", "--patch", "prompt-text"), ("apply",)):
        result = run(*args, "--root", pkg, env=fewer)
        assert result["rc"] == 1, result
        assert target.read_bytes() == composed, args
        lines = [r["detail"] for r in result["installs"] if not r["ok"]]
        assert lines and all("prompt-stream" in d and "not have loaded" in d for d in lines), result
    status = run("status", "--root", pkg, env=fewer)
    rows = status["installs"][0]["patches"]
    assert any("prompt-stream" in r["detail"] and r["state"] == "error" for r in rows), status
    # plain revert needs no patch's code: the original comes back
    assert run("revert", "--root", pkg, env=fewer)["rc"] == 0
    assert edit.read_file_header(target.read_bytes()) is None


def test_a_cotenant_failing_its_own_checks_is_the_one_named(dist_only, tmp_path):
    pkg = dist_only("2026.8.1")
    target = pkg / BRIDGE
    xp = tmp_path / "xp"
    shutil.copytree(TEST_PATCHES / "prompt-text", xp / "prompt-text")
    shutil.copytree(TEST_PATCHES / "prompt-stream", xp / "prompt-stream")
    payload = xp / "prompt-text" / "payload.js"
    payload.write_text(payload.read_text().replace("return text;", 'return text + "!";'))
    result = run("apply", "--root", pkg, env={"SENPI_GUARD_EXTRA_PATCHES": str(xp)})
    by = {r["patch"]: r for r in result["installs"]}
    assert result["rc"] == 1
    assert by["directive-dedupe"]["ok"] and by["prompt-stream"]["ok"], by
    assert not by["prompt-text"]["ok"] and "verification failed" in by["prompt-text"]["detail"], by
    # (the bytes that failed carried directive-dedupe too: the line says so)
    assert "on the file composed with directive-dedupe v12" in by["prompt-text"]["detail"], by
    assert carried(target.read_bytes()) == ("directive-dedupe", "prompt-stream")


def test_prompt_stream_checks_catch_a_changed_stream(dist_only, tmp_path):
    pkg = dist_only("2026.8.1")
    xp = tmp_path / "xp"
    for name, old, new in (
        ("prompt-stream", "return blocks;", "return blocks.slice(1);"),
        ("prompt-blocks", "return blocks;", "return blocks.slice(1);"),
    ):
        shutil.copytree(TEST_PATCHES / name, xp / name)
        payload = xp / name / "payload.js"
        payload.write_text(payload.read_text().replace(old, new))
        result = run("apply", "--root", pkg, env={"SENPI_GUARD_EXTRA_PATCHES": str(xp / name)})
        mine = next(r for r in result["installs"] if r["patch"] == name)
        assert result["rc"] == 1 and not mine["ok"] and "verification failed" in mine["detail"], mine
    assert os.environ.get("SENPI_GUARD_EXTRA_PATCHES") is None
