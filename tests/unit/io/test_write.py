"""io/write.py directly: the one writer keeps mode and owner, breaks hard links, never writes through
a folder swapped meanwhile, and `place`/`take` write or remove only what was read."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from senpi_guard.errors import FatalError
from senpi_guard.io import write


def test_replace_keeps_mode_and_breaks_a_hard_link(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "dist").mkdir(parents=True)
    target = pkg / "dist" / "a.js"
    target.write_bytes(b"old")
    target.chmod(0o640)
    store_copy = tmp_path / "store-a.js"
    os.link(target, store_copy)  # as a pnpm or bun store would
    snapshot = write.read(target, pkg)
    write.replace(snapshot, b"new")
    assert target.read_bytes() == b"new" and store_copy.read_bytes() == b"old"  # the store is untouched
    assert target.stat().st_mode & 0o777 == 0o640


def test_replace_refuses_a_file_changed_since_it_was_read(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "dist").mkdir(parents=True)
    target = pkg / "dist" / "a.js"
    target.write_bytes(b"old")
    snapshot = write.read(target, pkg)
    target.write_bytes(b"someone else's")
    with pytest.raises(FatalError, match="changed while"):
        write.replace(snapshot, b"ours")
    assert target.read_bytes() == b"someone else's"
    assert not [p for p in target.parent.iterdir() if p.name != "a.js"]  # no temp file left


def test_place_creates_replaces_and_refuses_what_it_did_not_read(tmp_path):
    write.place(tmp_path, "x.js", b"one", None)
    assert (tmp_path / "x.js").read_bytes() == b"one"
    with pytest.raises(FatalError, match="changed while"):
        write.place(tmp_path, "x.js", b"two", None)  # expected nothing there, found a file
    write.place(tmp_path, "x.js", b"two", b"one")
    assert (tmp_path / "x.js").read_bytes() == b"two"
    with pytest.raises(FatalError, match="changed while"):
        write.take(tmp_path, "x.js", b"one")  # not what is there: left alone
    write.take(tmp_path, "x.js", b"two")
    assert not (tmp_path / "x.js").exists() and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="the rule for links is root's")
def test_as_root_a_users_link_on_the_way_is_refused_and_roots_own_followed(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    write.place(link / "extensions", "x.js", b"data", None)  # root's own link: followed, folder made
    assert (real / "extensions" / "x.js").read_bytes() == b"data"
    os.chown(link, 12345, 12345, follow_symlinks=False)  # now a user's link
    with pytest.raises(FatalError, match="symbolic link owned by uid 12345"):
        write.place(link / "extensions", "y.js", b"data", None)
    with pytest.raises(FatalError, match="symbolic link owned by uid 12345"):
        write.read_in(link / "extensions", "x.js")
    assert sorted(p.name for p in (real / "extensions").iterdir()) == ["x.js"]


@pytest.mark.skipif(os.geteuid() != 0, reason="owners are root's to give")
def test_as_root_folders_made_on_the_way_take_their_parents_owner(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, 12345, 23456)
    write.place(home / ".senpi" / "agent" / "extensions", "x.js", b"data", None)
    for path in (
        home / ".senpi",
        home / ".senpi" / "agent",
        home / ".senpi" / "agent" / "extensions",
        home / ".senpi" / "agent" / "extensions" / "x.js",
    ):
        assert (path.stat().st_uid, path.stat().st_gid) == (12345, 23456), path


def test_a_file_in_the_way_of_a_folder_is_one_line(tmp_path):
    (tmp_path / "agent").write_text("not a folder")
    with pytest.raises(FatalError, match=r"not a folder|Not a directory"):
        write.place(tmp_path / "agent" / "extensions", "x.js", b"data", None)


RECHECK = """
import os, resource, sys
from pathlib import Path
from senpi_guard.errors import FatalError
from senpi_guard.io import write
resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
pkg, target, swap = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
snapshot = write.read(target, pkg)
os.replace(swap, target)  # (what a user waiting for root's read does, before its write)
try:
    write.replace(snapshot, b"ours") if sys.argv[4] == "replace" else write.take(target.parent, target.name, b"old")
except FatalError as exc:
    print(exc)
"""


@pytest.mark.parametrize("how", ["replace", "take"])
@pytest.mark.parametrize("what", ["sparse", "fifo"])
def test_the_recheck_never_reads_a_giant_or_a_fifo_swapped_in(tmp_path, how, what):
    """The re-check before the rename (and before `take`'s unlink) reads no more than the bytes read
    earlier: a sparse 20 GB file or a FIFO with a writer swapped in is "changed", in one line."""
    pkg = tmp_path / "pkg"
    (pkg / "dist").mkdir(parents=True)
    target = pkg / "dist" / "a.js"
    target.write_bytes(b"old")
    swap = pkg / "dist" / "swap"
    writer = None
    if what == "sparse":
        with swap.open("wb") as handle:
            handle.truncate(20 << 30)
    else:
        os.mkfifo(swap)
        writer = os.open(swap, os.O_RDWR)  # (a writer holds it open, writing nothing)
    try:
        argv = [sys.executable, "-c", RECHECK, str(pkg), str(target), str(swap), how]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    finally:
        if writer is not None:
            os.close(writer)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "changed while senpi-guard was working on it" in done.stdout, (done.stdout, done.stderr[-2000:])
    assert len(done.stdout.strip().splitlines()) == 1
    assert target.exists() and sorted(p.name for p in target.parent.iterdir()) == ["a.js"]  # nothing else left
