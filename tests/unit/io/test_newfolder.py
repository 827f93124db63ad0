"""io/newfolder.py directly: `put` leaves the folder holding exactly the files given (new, empty or
replaced whole), with the old folder's permission bits but never a setuid, setgid or sticky bit,
and no temp folder beside it, whatever happened. A file, a FIFO or a link where the folder goes is
left as it is (never followed, never opened); another user's link on the way to the parent and a
file in the parent's place are one line; a write that fails halfway leaves the old folder as it
was. As a user (a second real user, in a forked child), a parent without write bits is the OS's
refusal."""

from __future__ import annotations

import errno
import os
import pwd
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hostile.plugin import as_user

from senpi_guard.errors import FatalError
from senpi_guard.io import newfolder

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="owners and other users' links are root's to test")
USER = 12345
FILES = {"package.json": b'{"name": "x"}\n', "index.js": b"export {};\n"}


def contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def beside(dest: Path) -> list[str]:
    """Everything in dest's parent but dest: a temp or set-aside folder left behind shows here."""
    return sorted(p.name for p in dest.parent.iterdir() if p.name != dest.name)


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


def test_a_new_folder_holds_exactly_the_files_with_0777_less_the_umask(tmp_path, umask):
    umask(0o027)
    dest = tmp_path / "out"
    newfolder.put(dest, FILES)
    assert contents(dest) == FILES and mode(dest) == 0o750
    assert all(p.is_file() and not p.is_symlink() for p in dest.iterdir())
    assert beside(dest) == []


def test_an_empty_folder_is_filled_and_keeps_its_mode(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    dest.chmod(0o711)
    newfolder.put(dest, FILES)
    assert contents(dest) == FILES and mode(dest) == 0o711 and beside(dest) == []


def test_an_earlier_folder_is_replaced_whole_with_its_permission_bits(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "stale.js").write_text("from the last export")
    (dest / "sub").mkdir()
    (dest / "sub" / "deep.js").write_text("deeper")
    (dest / "index.js").write_text("old")
    dest.chmod(0o750)
    newfolder.put(dest, FILES)
    assert contents(dest) == FILES and mode(dest) == 0o750
    assert beside(dest) == []  # (the old folder, set aside for the rename, is gone too)


@pytest.mark.parametrize("empty", [True, False])
def test_setuid_setgid_and_sticky_bits_are_never_carried_over(tmp_path, empty):
    dest = tmp_path / "out"
    dest.mkdir()
    if not empty:
        (dest / "old.js").write_text("old")
    dest.chmod(0o7775)
    newfolder.put(dest, FILES)
    assert mode(dest) == 0o775 and contents(dest) == FILES


@ROOT_ONLY
def test_a_missing_parent_is_made_owned_as_the_folder_it_is_made_in(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, USER, USER)
    dest = home / "exports" / "senpi"
    newfolder.put(dest, FILES)
    assert contents(dest) == FILES
    assert ((home / "exports").stat().st_uid, (home / "exports").stat().st_gid) == (USER, USER)


def in_the_way(tmp_path: Path, what: str) -> tuple[Path, Path | None]:
    """Something that is not a folder where the folder goes (and, for a link, the folder it names)."""
    dest = tmp_path / "out"
    if what == "file":
        dest.write_text("a user's file")
        return dest, None
    if what == "fifo":
        os.mkfifo(dest)  # (opened for reading, it would wait for a writer: the test would hang)
        return dest, None
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "theirs.txt").write_text("theirs")
    dest.symlink_to(target)
    return dest, target


@pytest.mark.parametrize("what", ["file", "fifo", "link"])
def test_what_is_not_a_folder_in_its_place_is_left_and_nothing_written(tmp_path, what):
    dest, target = in_the_way(tmp_path, what)
    with pytest.raises(OSError) as caught:
        newfolder.put(dest, FILES)
    assert caught.value.errno == errno.ENOTDIR
    assert {"file": dest.is_file, "fifo": dest.is_fifo, "link": dest.is_symlink}[what]()
    if target is not None:
        assert contents(target) == {"theirs.txt": b"theirs"}  # (nothing written through the link)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out"] + (["elsewhere"] if target else []))


@ROOT_ONLY
def test_another_users_link_on_the_way_to_the_parent_is_one_line_and_nothing_written(tmp_path):
    target = tmp_path / "roots"
    target.mkdir()
    link = tmp_path / "users"
    link.symlink_to(target)
    os.chown(link, USER, USER, follow_symlinks=False)
    with pytest.raises(FatalError, match=f"{link} is a symbolic link owned by uid {USER}"):
        newfolder.put(link / "out", FILES)
    assert list(target.iterdir()) == []


def test_a_file_in_the_parents_place_is_one_line(tmp_path):
    (tmp_path / "parent").write_text("not a folder")
    with pytest.raises(FatalError, match="parent is in the way and is not a folder"):
        newfolder.put(tmp_path / "parent" / "out", FILES)
    assert (tmp_path / "parent").read_text() == "not a folder"


@pytest.mark.parametrize("bad", ["sub/file.js", ""])
def test_a_write_that_fails_halfway_leaves_the_old_folder_and_no_temp(tmp_path, bad):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "old.js").write_text("old")
    with pytest.raises(OSError):
        newfolder.put(dest, {"first.js": b"written first", bad: b"cannot be written"})
    assert contents(dest) == {"old.js": b"old"} and beside(dest) == []


def test_no_files_make_an_empty_folder(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "old.js").write_text("old")
    newfolder.put(dest, {})
    assert list(dest.iterdir()) == [] and beside(dest) == []


# ---- as a user: a second real user, in a forked child -------------------------------------------


def put_as(user: pwd.struct_passwd, dest: Path) -> dict:
    """`newfolder.put(dest, FILES)` in a forked child that has become `user`: what happened."""

    def work() -> dict:
        newfolder.put(dest, FILES)
        return {"put": True}

    return as_user(user, work)


def test_as_a_user_a_parent_without_write_bits_is_the_oss_refusal_and_nothing_is_left(users_dir, attacker):
    users_dir.chmod(0o555)
    assert put_as(attacker, users_dir / "out") == {"oserror": errno.EACCES}
    assert list(users_dir.iterdir()) == []


def test_as_a_user_the_folder_is_theirs_and_holds_the_files(users_dir, attacker):
    dest = users_dir / "out"
    assert put_as(attacker, dest) == {"put": True}
    assert contents(dest) == FILES and dest.stat().st_uid == attacker.pw_uid and beside(dest) == []
