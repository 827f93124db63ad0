"""io/folders.py directly: the folder a root write goes into is reached one name at a time from `/`
and never through another user's link (refused in one line, nothing made where it points), root's
own links are followed, a file or a FIFO in the way is one line (a FIFO is never waited on), the
folders made on the way take the owner of the folder they are made in and are recorded for
uninstall. As a user (a second real user, in a process of its own), links are followed as senpi
follows them, and a folder the user may not write is the OS's refusal, not a folder made elsewhere."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from hostile.plugin import as_user

from senpi_guard.errors import FatalError
from senpi_guard.io import folders, made

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the walk from / without links is root's")
USER = 12345  # (an owner root can give without an account behind it)


def same_folder(fd: int | None, path: Path) -> bool:
    assert fd is not None
    one, other = os.fstat(fd), path.stat()
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino)


def enter(folder: Path, create: bool) -> None:
    with folders.opened(folder, create=create):
        pass


def owner(path: Path) -> tuple[int, int]:
    st = path.lstat()
    return st.st_uid, st.st_gid


@ROOT_ONLY
def test_an_existing_folder_is_opened_and_a_missing_one_is_none_and_not_made(tmp_path):
    with folders.opened(tmp_path) as fd:
        assert same_folder(fd, tmp_path)
    with folders.opened(tmp_path / "a" / "b") as fd:
        assert fd is None
    assert list(tmp_path.iterdir()) == []


@ROOT_ONLY
def test_the_fd_is_closed_when_the_block_ends(tmp_path):
    with folders.opened(tmp_path) as fd:
        assert fd is not None
    with pytest.raises(OSError):
        os.fstat(fd)


@ROOT_ONLY
def test_folders_made_on_the_way_take_their_parents_owner_and_are_recorded(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, USER, USER + 1)
    wanted = home / ".senpi" / "agent" / "extensions"
    with folders.opened(wanted, create=True) as fd:
        assert same_folder(fd, wanted)
    for each in (home / ".senpi", home / ".senpi" / "agent", wanted):
        assert owner(each) == (USER, USER + 1), each
    assert {home / ".senpi", home / ".senpi" / "agent", wanted} <= set(made.recorded())
    assert home not in made.recorded()  # (there before: never the record's to remove)


@ROOT_ONLY
def test_a_folder_with_no_write_bits_is_still_roots_to_make_in_owned_as_it(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chown(locked, USER, USER)
    locked.chmod(0o555)
    with folders.opened(locked / "agent", create=True) as fd:
        assert same_folder(fd, locked / "agent")
    assert owner(locked / "agent") == (USER, USER)
    assert (locked.stat().st_mode & 0o777) == 0o555  # (its mode left as it was)


@ROOT_ONLY
@pytest.mark.parametrize("create", [False, True])
@pytest.mark.parametrize("what", ["file", "fifo"])
@pytest.mark.parametrize("where", ["last", "middle"])
def test_a_file_or_a_fifo_in_the_way_is_one_line_and_left_as_it_is(tmp_path, what, where, create):
    blocker = tmp_path / "agent"
    if what == "file":
        blocker.write_text("not a folder")
    else:
        os.mkfifo(blocker)  # (opened, it would wait for a writer: the test would hang)
    wanted = blocker if where == "last" else blocker / "extensions"
    with pytest.raises(FatalError, match=r"agent is in the way and is not a folder; move it aside") as caught:
        enter(wanted, create)
    assert "\n" not in str(caught.value)
    assert (blocker.is_file() if what == "file" else blocker.is_fifo()) and list(tmp_path.iterdir()) == [blocker]


def users_link(tmp_path: Path, name: str = "link") -> tuple[Path, Path]:
    """A folder root alone may write, and a link to it owned by another user."""
    target = tmp_path / "roots"
    target.mkdir()
    link = tmp_path / name
    link.symlink_to(target)
    os.chown(link, USER, USER, follow_symlinks=False)
    return link, target


@ROOT_ONLY
@pytest.mark.parametrize("create", [False, True])
@pytest.mark.parametrize("where", ["last", "middle"])
def test_another_users_link_on_the_way_is_refused_and_nothing_made_where_it_points(tmp_path, where, create):
    link, target = users_link(tmp_path)
    wanted = link if where == "last" else link / "extensions" / "deeper"
    with pytest.raises(
        FatalError, match=rf"{link} is a symbolic link owned by uid {USER}; .*run senpi-guard as that user"
    ):
        enter(wanted, create)
    assert list(target.iterdir()) == [] and link.is_symlink()


@ROOT_ONLY
def test_another_users_dangling_link_is_refused_not_followed_to_be_made(tmp_path):
    link = tmp_path / "agent"
    link.symlink_to(tmp_path / "elsewhere")
    os.chown(link, USER, USER, follow_symlinks=False)
    with pytest.raises(FatalError, match=f"owned by uid {USER}"):
        enter(link / "extensions", True)
    assert not (tmp_path / "elsewhere").exists()


@ROOT_ONLY
def test_roots_own_link_is_followed_and_made_in_beyond_it(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with folders.opened(tmp_path / "link" / "extensions", create=True) as fd:
        assert same_folder(fd, real / "extensions")
    with folders.opened(tmp_path / "link") as fd:
        assert same_folder(fd, real)


@ROOT_ONLY
def test_roots_own_dangling_link_is_none_to_read_and_one_line_to_make_in(tmp_path):
    link = tmp_path / "agent"
    link.symlink_to(tmp_path / "gone")
    with folders.opened(link) as fd:
        assert fd is None
    with pytest.raises(FatalError, match=r"agent is a link to a folder that does not exist; create the folder"):
        enter(link / "extensions", True)
    assert not (tmp_path / "gone").exists() and link.is_symlink()


@ROOT_ONLY
def test_a_relative_path_is_walked_from_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with folders.opened(Path("made") / "here", create=True) as fd:
        assert same_folder(fd, tmp_path / "made" / "here")


# ---- as a user: a second real user, in a process of its own ---------------------------------------


def run_as(user: pwd.struct_passwd, folder: Path, create: bool) -> dict:
    """`folders.opened` in a forked child that has become `user`: what it found, as JSON."""

    def work() -> dict:
        with folders.opened(folder, create=create) as fd:
            return {"fd": None if fd is None else [os.fstat(fd).st_ino, os.fstat(fd).st_dev]}

    return as_user(user, work)


def inode(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_ino, st.st_dev]


def test_as_a_user_their_own_link_is_followed_as_senpi_follows_it(users_dir, attacker):
    real = users_dir / "real"
    real.mkdir()
    os.chown(real, attacker.pw_uid, attacker.pw_gid)
    link = users_dir / "agent"
    link.symlink_to(real)
    os.chown(link, attacker.pw_uid, attacker.pw_gid, follow_symlinks=False)
    assert run_as(attacker, link, create=False) == {"fd": inode(real)}
    assert run_as(attacker, link / "extensions", create=True) == {"fd": inode(real / "extensions")}
    assert run_as(attacker, users_dir / "missing", create=False) == {"fd": None}


def test_as_a_user_a_folder_without_write_bits_is_the_oss_refusal_and_nothing_is_made(users_dir, attacker):
    users_dir.chmod(0o555)
    found = run_as(attacker, users_dir / ".senpi" / "agent", create=True)
    assert found == {"oserror": 13}  # EACCES, which every caller turns into its one line
    assert list(users_dir.iterdir()) == []


def test_as_a_user_a_file_in_the_way_is_one_line(users_dir, attacker):
    (users_dir / "agent").write_text("not a folder")
    found = run_as(attacker, users_dir / "agent", create=False)
    assert "agent is in the way and is not a folder" in found["fatal"]
