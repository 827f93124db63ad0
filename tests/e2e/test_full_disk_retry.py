"""Failures that pass. A full disk (issue 46, row 15): the watcher that could not re-patch an install
because its file system was full tries again later, and patches it once space is freed; before, a
full disk backed the install off for good (as bytes that cannot be patched are). A real tmpfs,
filled for real, the real watcher. Node out of time on a busy machine is the other: before, a
replay that timed out backed the install off until its bytes changed, and the extension until its
config did (seen: a suite beside a busy loop on each core, an install never re-patched)."""

from __future__ import annotations

from conftest import SHAPE_REL, node_check, patched, wait_for, write_user_config
from test_hostile import fill, small_tmpfs  # noqa: F401 (the fixture, shared with the full-disk tests)

from senpi_guard.demo import sample

EXTENSION = "senpi-guard-directive-dedupe.js"


def test_a_full_disk_is_tried_again_and_patched_once_space_is_freed(small_tmpfs, watch):  # noqa: F811
    pkg = small_tmpfs / "src"
    sample.write_sample_package(pkg, 2, fillers=2)
    target = pkg / SHAPE_REL[2]
    fill(small_tmpfs)
    watcher = watch("--root", pkg, "--rescan-interval", "1")
    wait_for(lambda: "no space left on the device" in watcher.text(), timeout=120, what="the full disk's failure")
    assert not patched(target)
    (small_tmpfs / "filler").unlink()
    wait_for(lambda: patched(target), timeout=120, what="the install patched once space was freed")
    node_check(target)
    assert "(tried again in 5s)" in watcher.text()  # (not backed off for good, as bytes that cannot be patched are)
    assert watcher.stop() < 10 and watcher.proc.returncode == 0


def test_a_replay_out_of_time_is_tried_again_in_both_layers(npm_install, watch, isolated_dirs):
    pkg = npm_install(2)
    target = pkg / SHAPE_REL[2]
    ours = isolated_dirs / "agent" / "extensions" / EXTENSION
    config = write_user_config(isolated_dirs, "verify_timeout = 0.01\n")  # (as a very busy machine)
    watcher = watch("--root", pkg, "--rescan-interval", "1")
    wait_for(lambda: watcher.text().count("timed out after 0.01s") >= 2, timeout=120, what="both layers out of time")
    text = watcher.text()
    assert not patched(target) and not ours.exists()
    assert "(tried again in 5s)" in text and "not retried until it changes" not in text, text[-3000:]
    config.write_text("")  # node has time again: the same bytes, the same extension
    wait_for(lambda: patched(target) and ours.is_file(), timeout=120, what="both layers once node had time")
    node_check(target)
    assert watcher.stop() < 10 and watcher.proc.returncode == 0
