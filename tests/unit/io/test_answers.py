"""Remembered answers (io/answers, io/recorder): a run's answer is printed again only while every
input it consulted is as it was, and never for a run that wrote, started a process or failed. The
`run` given to the front door here is a small command of the test's own, doing real file-system
work, so each test can count whether it ran again."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from senpi_guard.io import answers, inputs
from senpi_guard.io.store import cache_dir

pytestmark = pytest.mark.usefixtures("steady_mount_table")  # (a replay needs the mount table still: tests/mounts.py)


class Command:
    """A stand-in command: each call runs `body` (which prints), counted."""

    def __init__(self, body, code: int = 0) -> None:
        self.body, self.code, self.calls = body, code, 0

    def __call__(self, argv: list[str]) -> int:
        self.calls += 1
        self.body()
        return self.code


def door(capsys, command: Command, argv: tuple[str, ...] = ("status",)) -> tuple[int, str, str]:
    code = answers.front_door(list(argv), command)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "input.txt"
    path.write_text("first")
    os.utime(path, (1_000_000, 1_000_000))  # (old: not within the racy window)
    return path


def test_an_unchanged_input_replays_the_answer_without_running(capsys, data):
    command = Command(lambda: (print("read:", data.read_text()), print("note", file=sys.stderr)), code=1)
    first = door(capsys, command)
    second = door(capsys, command)
    assert first == (1, "read: first\n", "note\n")
    assert second == first and command.calls == 1


def test_a_changed_input_runs_again_and_says_the_new_thing(capsys, data):
    command = Command(lambda: print("read:", data.read_text()))
    door(capsys, command)
    data.write_text("other")  # (same size; the identity changes)
    os.utime(data, (1_000_000, 1_000_000))  # (even with the old mtime: the ctime moved)
    assert door(capsys, command)[1] == "read: other\n" and command.calls == 2


def test_a_path_that_appears_is_a_change(capsys, tmp_path):
    wanted = tmp_path / "later.json"
    command = Command(lambda: print("there" if wanted.exists() else "absent"))
    assert door(capsys, command)[1] == "absent\n"
    wanted.write_text("{}")
    assert door(capsys, command)[1] == "there\n" and command.calls == 2


def test_a_new_entry_in_a_folder_listed_is_a_change(capsys, tmp_path):
    folder = tmp_path / "listed"
    folder.mkdir()
    command = Command(lambda: print(sorted(p.name for p in folder.iterdir())))
    door(capsys, command)
    (folder / "new").write_text("")
    assert door(capsys, command)[1] == "['new']\n" and command.calls == 2
    scanned = Command(lambda: print(sorted(e.name for e in os.scandir(folder) if e.is_file())))
    door(capsys, scanned, ("status", "--scan"))
    (folder / "newer").write_text("")
    assert door(capsys, scanned, ("status", "--scan"))[1] == "['new', 'newer']\n" and scanned.calls == 2


def test_a_link_retargeted_under_an_entry_is_a_change(capsys, tmp_path):
    folder, one, two = tmp_path / "f", tmp_path / "one", tmp_path / "two"
    folder.mkdir()
    one.mkdir()
    two.write_text("")
    (folder / "link").symlink_to(one)
    command = Command(lambda: print([e.is_dir() for e in os.scandir(folder)]))
    assert door(capsys, command)[1] == "[True]\n"
    (folder / "link").unlink()
    (folder / "link").symlink_to(two)  # (same name: only the entry's target says it changed)
    assert door(capsys, command)[1] == "[False]\n" and command.calls == 2


def test_an_entry_that_becomes_another_kind_under_its_name_is_a_change(capsys, tmp_path):
    """scandir's listing is kept with what each entry is (no stat of each entry: a walk of dist/
    would pay one per file), so a file that becomes a folder, or a link, of the same name is seen."""
    folder = tmp_path / "walked"
    folder.mkdir()
    (folder / "a.js").write_text("")
    kinds = Command(lambda: print([(e.name, e.is_dir(follow_symlinks=False)) for e in os.scandir(folder)]))
    assert door(capsys, kinds)[1] == "[('a.js', False)]\n"
    (folder / "a.js").unlink()
    (folder / "a.js").mkdir()
    assert door(capsys, kinds)[1] == "[('a.js', True)]\n" and kinds.calls == 2
    (folder / "a.js").rmdir()
    (folder / "a.js").symlink_to(tmp_path)
    files = Command(lambda: print([e.is_file(follow_symlinks=False) for e in os.scandir(folder)]))
    assert door(capsys, files, ("status", "--files"))[1] == "[False]\n"
    (folder / "a.js").unlink()
    (folder / "a.js").write_text("")  # (a link became a file: the listing's kinds say so)
    assert door(capsys, files, ("status", "--files"))[1] == "[True]\n" and files.calls == 2


def test_a_run_that_writes_or_starts_a_process_is_never_remembered(capsys, tmp_path):
    writes = Command(lambda: (tmp_path / "out").write_text("x"))
    door(capsys, writes)
    door(capsys, writes)
    spawns = Command(lambda: subprocess.run(["true"], check=True))
    door(capsys, spawns, ("status", "-v"))
    door(capsys, spawns, ("status", "-v"))
    renames = Command(lambda: os.replace(tmp_path / "out", tmp_path / "out2"), code=0)
    door(capsys, renames, ("status", "-q"))
    (tmp_path / "out").write_text("x")
    door(capsys, renames, ("status", "-q"))
    assert (writes.calls, spawns.calls, renames.calls) == (2, 2, 2)


def test_an_unexpected_failure_or_an_exit_is_never_remembered(capsys, data):
    crashed = Command(lambda: data.read_text(), code=3)
    door(capsys, crashed)
    door(capsys, crashed)
    assert crashed.calls == 2

    def usage() -> None:
        raise SystemExit(0)

    exits = Command(usage)
    for _ in range(2):
        with pytest.raises(SystemExit):
            answers.front_door(["status", "-v"], exits)
    assert exits.calls == 2


def test_other_commands_and_an_opt_out_are_not_remembered(capsys, data, monkeypatch):
    command = Command(lambda: print(data.read_text()))
    for argv in (("verify",), ("revert",), ("--help",), ("--config", "status", "watch")):
        door(capsys, command, argv)
        door(capsys, command, argv)
    assert command.calls == 8
    monkeypatch.setenv("SENPI_GUARD_FRESH", "1")
    door(capsys, command)
    door(capsys, command)
    assert command.calls == 10


def test_the_environment_and_the_arguments_are_part_of_the_key(capsys, data, monkeypatch):
    command = Command(lambda: print(os.environ.get("SOME_SETTING"), data.read_text()))
    door(capsys, command)
    monkeypatch.setenv("SOME_SETTING", "on")
    assert door(capsys, command)[1] == "on first\n"
    door(capsys, command, ("status", "--json"))
    assert command.calls == 3


def test_an_answer_ages_with_what_it_used(capsys, data):
    def says_until(when: float):
        return lambda: (answers.expire(when), print(data.read_text()))

    import time

    lasting = Command(says_until(time.time() + 3600))
    door(capsys, lasting)
    door(capsys, lasting)
    spent = Command(says_until(time.time() - 1))
    door(capsys, spent, ("status", "-v"))
    door(capsys, spent, ("status", "-v"))
    assert (lasting.calls, spent.calls) == (1, 2)


def test_a_process_asked_about_is_asked_again(capsys, tmp_path):
    child = subprocess.Popen(["sleep", "60"])
    try:
        command = Command(lambda: print(inputs.alive(child.pid) and _asks(child.pid)))
        assert door(capsys, command)[1] == "True\n"
        assert door(capsys, command)[1] == "True\n" and command.calls == 1
    finally:
        child.kill()
        child.wait()
    assert door(capsys, command)[1] == "False\n" and command.calls == 2


def _asks(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_racy_file_is_known_by_its_content_too(capsys, tmp_path):
    fresh = tmp_path / "fresh.txt"
    fresh.write_text("now")  # (changed just now: its timestamp's tick may not show the next change)
    command = Command(lambda: print(fresh.read_text()))
    door(capsys, command)
    (stored,) = Path(answers.answers_dir()).iterdir()
    answer = marshal.loads(stored.read_bytes())
    assert answer["opened"][str(fresh)] is not None
    fresh.write_text("new")
    # a change the identity cannot show (as within one tick): the stored identity made current
    answer["stats"][str(fresh)] = inputs.identity(str(fresh))
    stored.write_bytes(marshal.dumps(answer))
    assert not answers.still_true(answer)
    assert door(capsys, command)[1] == "new\n" and command.calls == 2


def test_an_answer_anyone_else_could_have_written_is_not_replayed(capsys, data):
    command = Command(lambda: print(data.read_text()))
    door(capsys, command)
    (stored,) = Path(answers.answers_dir()).iterdir()
    stored.chmod(0o666)
    door(capsys, command)
    assert command.calls == 2
    stored = next(p for p in Path(answers.answers_dir()).iterdir())
    assert stored.stat().st_mode & 0o777 == 0o600 and Path(answers.answers_dir()).stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("cache_home", [None, "", "  ", "/elsewhere/cache", "relative/cache"])
def test_answers_live_in_the_cache_folder_status_may_write(cache_home, monkeypatch):
    if cache_home is None:
        monkeypatch.delenv("XDG_CACHE_HOME")
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", cache_home)
    assert Path(answers.answers_dir()) == cache_dir() / "answers"


def test_the_front_door_finds_the_command_past_the_top_level_options():
    assert answers.chosen(["--config", "status", "apply"]) == "apply"
    assert answers.chosen(["-v", "--color", "never", "status", "--json"]) == "status"
    assert answers.chosen(["--config=x.toml", "status"]) == "status"
    assert answers.chosen(["-V"]) is None and answers.chosen(["--help", "status"]) is None


def test_a_neighbour_in_a_folder_on_the_way_is_no_change_but_a_link_on_the_way_is(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SENPI_GUARD_DEBUG_ANSWERS", "1")  # (a failure says why a run was not kept)
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "other" / "deep").mkdir(parents=True)
    for side in ("real", "other"):
        (tmp_path / side / "deep" / "file").write_text(side)
        os.utime(tmp_path / side / "deep" / "file", (1_000_000, 1_000_000))
    (tmp_path / "via").symlink_to(tmp_path / "real")
    command = Command(lambda: print((tmp_path / "via" / "deep" / "file").resolve().read_text()))
    _, out, why = door(capsys, command)
    assert out == "real\n" and "not kept" not in why, why
    (tmp_path / "neighbour").write_text("")  # (the folders on the way change times: no matter)
    (tmp_path / "real" / "neighbour").mkdir()
    _, out, again = door(capsys, command)  # (a run, not a replay, says whether it was kept)
    assert out == "real\n" and command.calls == 1, why + again
    (tmp_path / "via").unlink()
    (tmp_path / "via").symlink_to(tmp_path / "other")
    assert door(capsys, command)[1] == "other\n" and command.calls == 2


def test_an_entry_made_in_a_folder_python_imports_from_is_a_new_key(capsys, data, tmp_path, monkeypatch):
    """Why tests/conftest.py makes hypothesis' folder before any test: a folder on sys.path (the
    one a run starts in, '') that gains an entry may now hold a module of that name."""
    imports_from = tmp_path / "imports-from"
    imports_from.mkdir()
    monkeypatch.syspath_prepend(str(imports_from))
    command = Command(lambda: print(data.read_text()))
    door(capsys, command)
    door(capsys, command)
    assert command.calls == 1
    (imports_from / ".hypothesis").mkdir()
    door(capsys, command)
    assert command.calls == 2


@pytest.mark.skipif(os.geteuid() != 0, reason="as root: an answer another user owns")
def test_as_root_an_answer_another_user_owns_is_not_replayed(capsys, data):
    command = Command(lambda: print(data.read_text()))
    door(capsys, command)
    (stored,) = Path(answers.answers_dir()).iterdir()
    os.chown(stored, 65534, 65534)  # (nobody's, 0600: as a user could leave in a folder of theirs)
    door(capsys, command)
    assert command.calls == 2


def test_a_fifo_read_without_blocking_is_not_remembered_and_hangs_nothing(capsys, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def peek() -> None:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # (as io/write.read_in opens what it reads)
        os.close(fd)
        print("peeked")

    command = Command(peek)
    assert door(capsys, command)[1] == "peeked\n"
    assert door(capsys, command)[1] == "peeked\n" and command.calls == 2


def test_taking_the_write_lock_again_is_no_change_and_a_file_named_like_a_lock_is_an_input(capsys, tmp_path):
    from senpi_guard.io.store import Store

    store = Store()

    def locked() -> None:
        with store.lock():
            print("locked", (tmp_path / "yarn.lock").read_text())

    (tmp_path / "yarn.lock").write_text("one")
    os.utime(tmp_path / "yarn.lock", (1_000_000, 1_000_000))
    command = Command(locked)
    door(capsys, command)  # (the lock file made: a change to its folder while the run ran)
    door(capsys, command)
    assert door(capsys, command)[1] == "locked one\n" and command.calls == 2  # (taking it again: no change)
    (tmp_path / "yarn.lock").write_text("two")
    assert door(capsys, command)[1] == "locked two\n" and command.calls == 3
    here = os.getcwd()
    chdirs = Command(lambda: (os.chdir(tmp_path), os.chdir(here)))
    door(capsys, chdirs, ("status", "-v"))
    door(capsys, chdirs, ("status", "-v"))
    assert chdirs.calls == 2


def test_the_zone_file_tz_names_is_an_input(capsys, tmp_path, monkeypatch):
    """libc reads the zone file, not Python: a tzdata update (or the file TZ names, replaced) changes
    every time printed."""
    import time

    zones = tmp_path / "zones"
    zones.mkdir()
    (zones / "Here").write_bytes(Path("/usr/share/zoneinfo/Etc/UTC").read_bytes())
    monkeypatch.setenv("TZ", "Here")
    monkeypatch.setenv("TZDIR", str(zones))

    def local_midnight() -> None:  # (each run a process of its own would read the zone afresh)
        for zone in ("UTC", "Here"):
            os.environ["TZ"] = zone
            time.tzset()
        print(time.strftime("%H:%M", time.localtime(0)))

    command = Command(local_midnight)
    try:
        assert door(capsys, command)[1] == "00:00\n"
        assert door(capsys, command)[1] == "00:00\n" and command.calls == 1
        (zones / "Here.new").write_bytes(Path("/usr/share/zoneinfo/Asia/Tokyo").read_bytes())
        (zones / "Here.new").replace(zones / "Here")
        assert door(capsys, command)[1] == "09:00\n" and command.calls == 2
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_change_of_the_mount_table_is_a_change(capsys, data, tmp_path, monkeypatch):
    """A folder remounted read-only (or noexec) keeps every identity, but not what access() says:
    the mount table is an input of every answer (a file of the test's own stands in for it here;
    tests/hostile/test_remembered_root.py remounts a real folder)."""
    table = tmp_path / "mountinfo"
    table.write_text("25 1 0:22 / / rw,relatime - ext4 /dev/sda1 rw\n")
    monkeypatch.setattr(answers, "MOUNTS", str(table))
    command = Command(lambda: print("read:", data.read_text()))
    door(capsys, command)
    assert door(capsys, command)[1] == "read: first\n" and command.calls == 1
    table.write_text("25 1 0:22 / / ro,relatime - ext4 /dev/sda1 ro\n")
    assert door(capsys, command)[1] == "read: first\n" and command.calls == 2
    assert door(capsys, command)[1] == "read: first\n" and command.calls == 2  # (and remembered again)


def test_an_apply_is_not_replayed_while_another_senpi_guard_holds_the_write_lock(capsys, data):
    """It would say "nothing changed" of an install that writer is changing; a fresh apply waits for
    the writer (a status, which never waits, is still replayed)."""
    from senpi_guard.io.store import Store

    apply_command = Command(lambda: print("read:", data.read_text()))
    status_command = Command(lambda: print("read:", data.read_text()))
    door(capsys, apply_command, ("apply",))
    door(capsys, status_command)
    with Store().lock():  # (as another senpi-guard would hold it: filelock's flock on write.lock)
        assert door(capsys, apply_command, ("apply",))[1] == "read: first\n" and apply_command.calls == 2
        assert door(capsys, status_command)[1] == "read: first\n" and status_command.calls == 1
    assert door(capsys, apply_command, ("apply",))[1] == "read: first\n" and apply_command.calls == 2


def test_a_removed_current_folder_runs_the_command_afresh(capsys, data, tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    command = Command(lambda: print("read:", data.read_text()))
    assert door(capsys, command) == (0, "read: first\n", "") and command.calls == 1


def test_a_link_an_open_refused_to_follow_is_known_by_what_it_is(capsys, tmp_path):
    """An open with O_NOFOLLOW of a link fails for what the path is (a dotfiles link as the agent
    dir): the answer is replayed while the link stays, and run again once it is another thing."""
    (tmp_path / "real").mkdir()
    link = tmp_path / "agent"
    link.symlink_to(tmp_path / "real")

    def look() -> None:
        try:
            os.close(os.open(link, os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY))
            print("a folder")
        except OSError:
            print("a link")

    command = Command(look)
    assert door(capsys, command)[1] == "a link\n"
    assert door(capsys, command)[1] == "a link\n" and command.calls == 1
    link.unlink()
    link.mkdir()
    assert door(capsys, command)[1] == "a folder\n" and command.calls == 2
