"""A full disk passes (issue 46, row 15): the watcher that could not re-patch an install because
its file system was full tries again later, and patches it once space is freed; before, a full disk
backed the install off for good (as bytes that cannot be patched are). A real tmpfs, filled for
real, the real watcher."""

from __future__ import annotations

from conftest import SHAPE_REL, node_check, patched, wait_for
from test_hostile import fill, small_tmpfs  # noqa: F401 (the fixture, shared with the full-disk tests)

from senpi_guard.demo import sample


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
