"""audit/session_io.py directly: which files under an agent dir's sessions/ are sessions (regular
files only, oldest first, each once), and reading a session's header from hostile input. A first
line that is not JSON, not a header, not UTF-8, nested past Python's limit, cut short, or longer
than the line cap is one line naming the file and what to do, never a traceback; a FIFO is refused
without waiting on it; a file that cannot be opened names the reason. `senpi-guard audit FILE` of such
a file exits 1 with that one line."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from senpi_guard.audit import session, session_io
from senpi_guard.demo import sample_session
from senpi_guard.errors import FatalError
from senpi_guard.io import reader
from senpi_guard.io.config import Config

HEADER = {"type": "session", "version": 3, "id": "s-1", "timestamp": "2026-11-20T10:00:00.000Z", "cwd": "/w"}
NOT_A_SESSION = 'is not a senpi session file (its first line is not a {"type":"session"} header)'


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and "Traceback" not in text
    return text


@pytest.fixture
def small_line_cap() -> Iterator[int]:
    """The line cap at its lowest (the config's floor, 1 MB), as a user's config.toml may set it."""
    reader.use(Config(session_line_max_bytes=1_000_000))
    yield 1_000_000
    reader.use(Config())


# ---- the header -------------------------------------------------------------------------------


def test_a_sample_sessions_header_is_read(tmp_path):
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=2, directive_bytes=200)
    header = session_io.read_header(path)
    assert header["type"] == "session" and header["id"] == "s-0001" and header["version"] == 3


def test_a_header_cut_before_its_newline_is_still_a_header(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(HEADER))  # (senpi killed right after writing it: no newline)
    assert session_io.read_header(path) == HEADER


def test_only_the_first_line_is_read_for_the_header(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(json.dumps(HEADER).encode() + b"\n{not json\n\xff\xfe\n")
    assert session_io.read_header(path) == HEADER


@pytest.mark.parametrize(
    "first",
    [
        pytest.param(b"", id="empty-file"),
        pytest.param(b"\n", id="empty-line"),
        pytest.param(b"{not json\n", id="invalid-json"),
        pytest.param(json.dumps(HEADER).encode()[:30], id="truncated"),
        pytest.param(b"[1, 2]\n", id="array"),
        pytest.param(b'"session"\n', id="string"),
        pytest.param(b'{"type": "message", "id": "x"}\n', id="other-type"),
        pytest.param(b'{"id": "s-1"}\n', id="no-type"),
        pytest.param(b'{"type": "session\xff\xfe"}\n', id="not-utf8"),
        pytest.param(b"[" * 200_000 + b"]" * 200_000 + b"\n", id="nested-past-the-limit"),
    ],
)
def test_a_first_line_that_is_no_header_is_one_line_naming_the_file(tmp_path, first):
    path = tmp_path / "s.jsonl"
    # (a good header after a whole first line: never taken for the file's)
    path.write_bytes(first + (json.dumps(HEADER).encode() + b"\n" if first.endswith(b"\n") else b""))
    with pytest.raises(FatalError) as caught:
        session_io.read_header(path)
    text = one_line(caught)
    assert text.startswith(f"{path} {NOT_A_SESSION}") and "sessions/ folder" in text


def test_header_of_takes_the_bytes_it_is_given():
    assert session_io.header_of(Path("x.jsonl"), json.dumps(HEADER).encode()) == HEADER
    with pytest.raises(FatalError, match=r"x\.jsonl is not a senpi session file"):
        session_io.header_of(Path("x.jsonl"), b"null")


def test_a_first_line_longer_than_the_cap_is_refused_naming_the_setting(tmp_path, small_line_cap):
    path = tmp_path / "s.jsonl"
    huge = {**HEADER, "pad": "x" * small_line_cap}
    path.write_text(json.dumps(huge) + "\n")
    with pytest.raises(FatalError) as caught:
        session_io.read_header(path)
    text = one_line(caught)
    assert f"{path}: line 1 is longer than 1,000,000 bytes" in text and "session_line_max_bytes" in text


def test_a_later_line_longer_than_the_cap_leaves_the_header_and_stops_the_index(tmp_path, small_line_cap):
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=1, directive_bytes=200, extras=False)
    with path.open("a") as out:
        out.write('{"type":"message","id":"big","parentId":null,"pad":"' + "x" * small_line_cap + '"}\n')
    lines = len(path.read_bytes().splitlines())
    assert session_io.read_header(path)["id"] == "s-0001"
    with pytest.raises(FatalError) as caught:
        session.index(path)
    assert f"line {lines} is longer than 1,000,000 bytes" in one_line(caught)


# ---- what is not a session file ------------------------------------------------------------------


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)  # (no writer: a blocking open or read would never return)
    with pytest.raises(FatalError) as caught:
        session_io.read_header(fifo)
    assert "named pipe (FIFO), not a regular file" in one_line(caught)


def test_a_folder_is_refused(tmp_path):
    folder = tmp_path / "s.jsonl"
    folder.mkdir()
    with pytest.raises(FatalError) as caught:
        session_io.read_header(folder)
    assert "is a folder, not a regular file" in one_line(caught)


def test_a_missing_file_says_why_it_cannot_be_opened(tmp_path):
    path = tmp_path / "gone.jsonl"
    with pytest.raises(FatalError) as caught:
        session_io.read_header(path)
    assert one_line(caught) == f"cannot open session {path}: No such file or directory; check its permissions"


PASS_ONE = "; pass a senpi session .jsonl file, or use --latest"


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        (stat.S_IFDIR | 0o755, "is a directory; pass one session .jsonl file from it, or use --latest or --all"),
        (stat.S_IFIFO | 0o644, "is a named pipe, not a session file" + PASS_ONE),
        (stat.S_IFCHR | 0o666, "is a character device, not a regular file" + PASS_ONE),
        (stat.S_IFBLK | 0o660, "is a block device, not a regular file" + PASS_ONE),
        (stat.S_IFSOCK | 0o777, "is a socket, not a regular file" + PASS_ONE),
        (stat.S_IFLNK | 0o777, "is not a regular file" + PASS_ONE),
    ],
)
def test_not_a_file_names_what_it_found_and_what_to_pass(mode, says):
    assert session_io.not_a_file(Path("/s/x.jsonl"), mode) == f"/s/x.jsonl {says}"


def test_a_regular_file_is_a_file():
    assert session_io.not_a_file(Path("/s/x.jsonl"), stat.S_IFREG | 0o644) is None


def test_the_real_modes_of_a_fifo_and_dev_null_are_named(tmp_path):
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    assert "named pipe" in session_io.not_a_file(fifo, fifo.lstat().st_mode)
    assert "character device" in session_io.not_a_file(Path("/dev/null"), os.stat("/dev/null").st_mode)


# ---- finding the session files ------------------------------------------------------------------


def write_session(path: Path, mtime: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(HEADER) + "\n")
    os.utime(path, (mtime, mtime))
    return path


def test_session_files_are_regular_files_one_level_down_oldest_first_each_once(tmp_path):
    one, two = tmp_path / "agent1", tmp_path / "agent2"
    newest = write_session(one / "sessions" / "--w--" / "c.jsonl", 3_000)
    oldest = write_session(two / "sessions" / "--x--" / "a.jsonl", 1_000)
    middle = write_session(one / "sessions" / "--y--" / "b.jsonl", 2_000)
    write_session(one / "sessions" / "top.jsonl", 500)  # (not in a project's folder)
    write_session(one / "sessions" / "--w--" / "deeper" / "d.jsonl", 500)
    write_session(one / "sessions" / "--w--" / "notes.txt", 500)
    os.mkfifo(one / "sessions" / "--w--" / "fifo.jsonl")
    (one / "sessions" / "--w--" / "folder.jsonl").mkdir()
    (one / "sessions" / "--w--" / "dangling.jsonl").symlink_to(tmp_path / "gone")
    found = session_io.session_files([one, two, one, tmp_path / "no-agent-here"])
    assert found == [oldest, middle, newest]


def test_a_linked_session_file_counts_once_it_names_a_regular_file(tmp_path):
    real = write_session(tmp_path / "elsewhere" / "r.jsonl", 1_000)
    link = tmp_path / "agent" / "sessions" / "--w--" / "r.jsonl"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    assert session_io.session_files([tmp_path / "agent"]) == [link]


def test_a_sessions_file_instead_of_a_folder_holds_no_sessions(tmp_path):
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "sessions").write_text("not a folder")
    assert session_io.session_files([tmp_path / "agent"]) == []


# ---- as `senpi-guard audit FILE` says it -----------------------------------------------------------


def audit_says(capsys, path: Path, *more: str) -> str:
    """What `senpi-guard audit` says of `path`: exit 1 and one error line naming it, never a traceback."""
    from conftest import run_cli

    code, out, err = run_cli(capsys, "audit", *more, path)
    assert code == 1 and out == "", (out, err)
    assert err.startswith("senpi-guard: ") and len(err.strip().splitlines()) == 1, err
    assert str(path) in err and "Traceback" not in err
    return err


@pytest.fixture
def users_cap(isolated_dirs) -> Iterator[int]:
    """A user's config.toml lowering the line cap to its floor, and the caps as a new process has
    them (another test's config may have set them)."""
    from conftest import write_user_config

    write_user_config(isolated_dirs, "session_line_max_bytes = 1000000\n")
    reader.use(Config())
    yield 1_000_000
    reader.use(Config())


@pytest.mark.parametrize("what", ["invalid-json", "truncated", "fifo"])
def test_audit_of_a_file_that_is_no_session_is_one_error_line(tmp_path, users_cap, capsys, what):
    path = tmp_path / "s.jsonl"
    header = json.dumps(HEADER)
    if what == "invalid-json":
        path.write_text("{not json\n" + header + "\n")
    elif what == "truncated":
        path.write_text(header[: len(header) // 2])
    else:
        os.mkfifo(path)
    audit_says(capsys, path)


def test_audit_of_a_later_line_past_the_users_cap_is_one_error_line(tmp_path, users_cap, capsys):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(HEADER) + "\n" + '{"type":"label","id":"l","pad":"' + "x" * users_cap + '"}\n')
    assert "line 2 is longer than 1,000,000 bytes" in audit_says(capsys, path, "--sample")


def test_audit_holds_the_first_line_to_the_users_cap_before_anything_else(tmp_path, users_cap, capsys):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({**HEADER, "pad": "x" * users_cap}) + "\n")
    assert "line 1 is longer than 1,000,000 bytes" in audit_says(capsys, path)
