"""io/reader, the one reader of files senpi-guard did not write: real FIFOs, devices, sockets,
sparse files and links (another owner's made with lchown, as root)."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from senpi_guard.io import config, reader

OTHER = 4242  # (a uid no one on the machine runs as: a link of "another user")


@pytest.fixture(autouse=True)
def default_caps():
    yield
    reader.use(config.Config())


def refused(path: Path | str, kind: reader.Kind = reader.MANIFEST) -> str:
    """The one-line refusal of reading `path`, met on a thread (a read that blocks fails the test)."""
    outcome: list[BaseException | bytes] = []
    thread = threading.Thread(target=lambda: outcome.append(_attempt(path, kind)), daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # (a writer, so that the open returns)
        thread.join(10)
        pytest.fail(f"reading {path} blocked")
    assert isinstance(outcome[0], reader.Refused), outcome[0]
    text = str(outcome[0])
    assert "\n" not in text and str(path) in text
    return text


def _attempt(path: Path | str, kind: reader.Kind) -> BaseException | bytes:
    try:
        return reader.read(path, kind)
    except BaseException as exc:
        return exc


def test_a_regular_file_is_read(tmp_path):
    path = tmp_path / "package.json"
    path.write_bytes(b'{"name": "x"}\n')
    assert reader.read(path, reader.MANIFEST) == b'{"name": "x"}\n'
    assert reader.head(path, reader.MANIFEST, 4) == b'{"na'
    assert reader.sha256(path, reader.MANIFEST) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_missing_file_is_the_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        reader.read(tmp_path / "nothing.json", reader.MANIFEST)
    with pytest.raises(FileNotFoundError):
        reader.read(tmp_path / "no-folder" / "nothing.json", reader.MANIFEST)


def test_a_fifo_a_device_and_a_socket_are_refused_without_waiting(tmp_path):
    fifo = tmp_path / "settings.json"
    os.mkfifo(fifo)  # no writer ever comes: a blocking open would wait forever
    assert "is a named pipe (FIFO), not a regular file" in refused(fifo, reader.SETTINGS)
    assert "is a character device" in refused("/dev/zero")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "package.json"))
        assert "is a socket" in refused(tmp_path / "package.json")
    assert "is a folder" in refused(tmp_path)


def test_a_sparse_file_past_its_cap_is_refused_by_its_size(tmp_path):
    path = tmp_path / "big.js"
    with path.open("wb") as out:
        out.truncate(8 << 30)  # 8 GiB of nothing, on no disk
    text = refused(path, reader.DIST)
    assert "8,589,934,592 bytes" in text and "dist_file_max_bytes" in text
    with pytest.raises(reader.Refused):
        reader.sha256(path, reader.DIST)


def test_the_config_raises_a_cap(tmp_path):
    path = tmp_path / "big.js"
    path.write_bytes(b"x" * 2_000_000)
    reader.use(config.Config(dist_file_max_bytes=1_000_000))
    assert "more than the 1,000,000 bytes" in refused(path, reader.DIST)
    reader.use(config.Config(dist_file_max_bytes=3_000_000))
    assert len(reader.read(path, reader.DIST)) == 2_000_000


def test_lines_are_read_under_the_line_cap(tmp_path):
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"first\n" + b"y" * 1_500_000 + b"\nlast")
    with reader.opened(path, reader.SESSION) as handle:
        assert reader.line(handle, path, reader.SESSION) == b"first\n"
        assert len(next(reader.lines(handle, path, reader.SESSION, 2))) == 1_500_001
    reader.use(config.Config(session_line_max_bytes=1_000_000))
    with reader.opened(path, reader.SESSION) as handle, pytest.raises(reader.Refused) as info:
        list(reader.lines(handle, path, reader.SESSION))
    assert f"{path}: line 2 is longer than 1,000,000 bytes" in str(info.value)
    assert "session_line_max_bytes" in str(info.value)


def test_a_sparse_line_is_never_read_whole(tmp_path):
    path = tmp_path / "session.jsonl"
    path.write_bytes(b'{"type":"session"}\n')
    with path.open("r+b") as out:
        out.truncate(6 << 30)  # one line of 6 GiB of NUL bytes
    reader.use(config.Config(session_line_max_bytes=1_000_000))
    with reader.opened(path, reader.SESSION) as handle, pytest.raises(reader.Refused, match="line 2 is longer"):
        list(reader.lines(handle, path, reader.SESSION))


def test_our_own_links_are_followed(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "package.json").write_bytes(b"{}")
    (tmp_path / "folder").symlink_to("real")  # relative, in the middle of the path
    (tmp_path / "real" / "abs.json").symlink_to(tmp_path / "real" / "package.json")  # absolute, the last
    (tmp_path / "real" / "up.json").symlink_to("../folder/package.json")  # through .. and another link
    for path in ("folder/package.json", "folder/abs.json", "real/up.json"):
        assert reader.read(tmp_path / path, reader.MANIFEST) == b"{}", path


def test_a_loop_of_links_is_the_os_error(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(OSError, match="too many levels"):
        reader.read(tmp_path / "a", reader.MANIFEST)


def test_a_file_below_a_file_is_the_os_error(tmp_path):
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        reader.read(tmp_path / "file" / "package.json", reader.MANIFEST)


@pytest.mark.skipif(os.geteuid() != 0, reason="a link of another owner is made with lchown, as root")
@pytest.mark.parametrize("where", ["last", "middle"])
def test_another_users_link_is_never_followed(tmp_path, where):
    secret = tmp_path / "secret.json"
    secret.write_bytes(b'{"root": "only"}')
    secret.chmod(0o600)
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "package.json").write_bytes(b"{}")
    link = tmp_path / "link"
    link.symlink_to(secret if where == "last" else tmp_path / "real")
    os.lchown(link, OTHER, OTHER)
    path = link if where == "last" else link / "package.json"
    text = refused(path)
    on_the_way = "" if where == "last" else f" (on the way to {path})"
    assert f"{link}{on_the_way} is a symbolic link owned by uid {OTHER}" in text
    assert "follows no other user's link" in text
    os.lchown(link, 0, 0)  # root's own link: followed
    assert reader.read(path, reader.MANIFEST) in (b"{}", b'{"root": "only"}')


def test_own_data_reads_the_package_and_resources():
    from importlib import resources

    traversable = resources.files("senpi_guard.prove").joinpath("js", "protocol.mjs")
    assert reader.own_data(traversable) == Path(str(traversable)).read_bytes()


@pytest.mark.skipif(not shutil.which("strace") or not reader.O_PATH, reason="needs strace and O_PATH (Linux)")
def test_a_device_or_a_fifo_is_refused_without_being_opened_for_reading(tmp_path):
    """Root must not open a user's /dev/tty0 or /dev/watchdog to learn it is no file: the name is
    held with O_PATH and looked at; only a regular file is then opened for reading (O_NOCTTY)."""
    fifo = tmp_path / "settings.json"
    os.mkfifo(fifo)
    regular = tmp_path / "package.json"
    regular.write_bytes(b"{}")
    script = (
        "import sys\nfrom senpi_guard.io import reader\n"
        "for p in sys.argv[1:-1]:\n"
        "    try: reader.read(p, reader.SETTINGS)\n"
        "    except reader.Refused as e: print(e)\n"
        "print(reader.read(sys.argv[-1], reader.MANIFEST))\n"
    )
    argv = ["strace", "-f", "-qq", "-e", "trace=openat", "-o", str(tmp_path / "trace")]
    argv += [sys.executable, "-c", script, str(fifo), "/dev/null", str(regular)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    assert "is a named pipe (FIFO), not a regular file" in done.stdout
    assert "/dev/null is a character device" in done.stdout and "b'{}'" in done.stdout
    trace = (tmp_path / "trace").read_text().splitlines()
    opens = [row for row in trace if '"settings.json"' in row or '"null"' in row]
    assert len(opens) == 2 and all("O_PATH" in row for row in opens), opens  # (never O_RDONLY)
    reads = [row for row in trace if "/proc/self/fd/" in row]
    assert reads and all("O_NOCTTY" in row for row in reads), reads  # (the regular file, reopened)
