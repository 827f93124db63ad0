"""Remembered answers: what a `status`, or an `apply` that changed nothing, printed, kept with every
input it consulted (io/recorder) and printed again, without the work, while none of them changed.

An answer is kept under a key made of everything else a run depends on: its arguments, the whole
environment, the ids it runs as, its folder, whether its streams are terminals (and their width),
the python that runs it and senpi-guard's own files. It is replayed only when each input it noted
is still what it was: each path's identity (and, for a file changed within RACY_S of the run, its
content), each folder's entries, each process it asked about alive or not as it was, and the
package managers' answers it used still within their age. A run that wrote anything, started a
process or read what is not a file is not remembered, and neither is one that failed unexpectedly.

The answers live in senpi-guard's cache folder (`answers/`), private to their owner; an answer
owned by someone else or writable by others is never replayed (as root: another user's never
decides what root is told). SENPI_GUARD_FRESH=1 neither replays nor keeps one."""

from __future__ import annotations

import marshal
import os
import stat
import sys
import time
from typing import TYPE_CHECKING

from senpi_guard.io import inputs
from senpi_guard.io import recorder as rec

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

FORMAT = 2
COMMANDS = ("status", "apply")
VALUED = ("--config", "--color")  # the top-level options that take a value (as cli's)
KEEP = 64  # answers kept, the newest
SYSTEM_FILES = ("/etc/passwd", "/etc/group", "/etc/localtime")  # read by libc, not through Python
ZONES = "/usr/share/zoneinfo"  # (where libc looks for the zone TZ names, unless TZDIR says)
# a remount read-only or noexec changes what access() says of a path, not the path's identity
MOUNTS = "/proc/self/mountinfo"
_active: rec.Recorder | None = None


def expire(when: float) -> None:
    """What the running command reads is good until `when` (wall clock): a package manager's answer
    of an age. Called by the code that knows; nothing when no answer is being recorded."""
    if _active is not None:
        _active.expire(when)


def refuse(why: str) -> None:
    """The running command is not to be remembered (it waited on another process, say)."""
    if _active is not None:
        _active.refuse(why)


class _Counted:
    """A context that counts itself on the running recorder's `field` (nothing when none runs)."""

    def __init__(self, field: str) -> None:
        self.field, self.recorder = field, _active

    def __enter__(self) -> None:
        if self.recorder is not None:
            setattr(self.recorder, self.field, getattr(self.recorder, self.field) + 1)

    def __exit__(self, *exc: object) -> None:
        if self.recorder is not None:
            setattr(self.recorder, self.field, getattr(self.recorder, self.field) - 1)


def aside() -> _Counted:
    """What runs here is neither an input nor an output of the command (a lock taken and let go)."""
    return _Counted("paused")


def kinds_only() -> _Counted:
    """The folders looked at here are looked at for their kind, owner and mode alone (the folders
    above a package: their times change whenever a neighbour does, which says nothing here)."""
    return _Counted("kind_only")


def chosen(argv: list[str]) -> str | None:
    words = iter(argv)
    for arg in words:
        if arg in VALUED:
            next(words, None)
        elif arg in ("-h", "--help", "-V", "--version"):
            return None
        elif not arg.startswith("-"):
            return arg
    return None


def answers_dir() -> str:
    """`answers/` in senpi-guard's cache folder (io/store.cache_dir)."""
    import platformdirs

    return os.path.join(platformdirs.user_cache_dir("senpi-guard"), "answers")


def _code_identity() -> list:
    """senpi-guard's own files and the folders python imports from: an upgrade is a new key."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    seen = []
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            st = os.stat(os.path.join(folder, name))
            seen.append([name, st.st_ino, st.st_size, st.st_mtime_ns])
    for entry in sys.path:
        try:
            st = os.stat(entry or ".")
        except OSError:
            continue
        seen.append([entry, st.st_ino, st.st_mtime_ns])
    return seen


def _system_files() -> list[str]:
    """The files libc reads for what a run prints (users, groups, the time zone), not through Python:
    the zone file TZ names too (a tzdata update, or TZ pointing at another file)."""
    zone = os.environ.get("TZ", "").removeprefix(":")
    if not zone:
        return list(SYSTEM_FILES)
    if os.path.isabs(zone):
        return [*SYSTEM_FILES, zone]
    return [*SYSTEM_FILES, *(os.path.join(folder, zone) for folder in (os.environ.get("TZDIR"), ZONES) if folder)]


def _mounts() -> str | None:
    """The mount table, as one hash (None where there is none to read)."""
    try:
        with open(MOUNTS, "rb") as handle:
            return inputs.blake2b(handle.read(), digest_size=16).hexdigest()
    except OSError:
        return None


def _someone_writes() -> bool:
    """Whether another senpi-guard holds the write lock (filelock's flock on the state dir's
    write.lock): an `apply` replayed then would say "nothing changed" of an install being changed;
    a fresh one waits for the writer, and says so."""
    import fcntl

    import platformdirs

    path = os.path.join(platformdirs.user_state_dir("senpi-guard"), "write.lock")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # (not ours to judge here: the fresh run says what is wrong)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # (and with it the shared lock, at once)
    return False


def _streams() -> list:
    ttys = [os.isatty(fd) for fd in (0, 1, 2)]
    size = None
    if ttys[1]:
        try:  # noqa: SIM105 (contextlib is not loaded on the replay's path)
            size = list(os.get_terminal_size(1))
        except OSError:
            pass
    return [ttys, size]


def key_of(argv: list[str]) -> str:
    parts = {
        "format": FORMAT,
        "argv": argv,
        "env": sorted(os.environ.items()),
        "cwd": os.getcwd(),
        "ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())],
        "streams": _streams(),
        "python": [sys.executable, sys.version],
        "code": _code_identity(),
    }
    return inputs.blake2b(repr(parts).encode("utf-8", "surrogateescape"), digest_size=20).hexdigest()


def _load(path: str) -> dict[str, Any] | None:
    """An answer when it is ours alone (owned by us, in a folder only we may write), else None."""
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            folder = os.stat(os.path.dirname(path))
            for owned in (st, folder):
                if owned.st_uid != os.geteuid() or owned.st_mode & 0o022:
                    return None
            if not stat.S_ISREG(st.st_mode):
                return None
            data = marshal.loads(handle.read())  # (ours alone, as the byte code python runs)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def still_true(answer: dict[str, Any]) -> bool:
    """Whether every input the answer noted is what it was then."""
    try:
        if answer["expires"] is not None and time.time() >= answer["expires"]:
            return False
        if answer["mounts"] != _mounts():
            return False
        if inputs.changed(answer["stats"], answer["lstats"], answer["opened"], answer["listings"]) is not None:
            return False
        return all(inputs.alive(int(pid)) == was for pid, was in answer["pids"].items())
    except (KeyError, TypeError, ValueError, AttributeError):
        return False


def replay(answer: dict[str, Any]) -> int:
    try:
        for fd, text in answer["chunks"]:
            stream = sys.stdout if fd == 1 else sys.stderr
            if stream is not None:  # (a stream closed by the caller: `>&-`)
                stream.write(text)
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:  # (`| head`: as cli does)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return int(answer["code"])


class _Tee:
    """A stream that also notes what is written to it, in order with its sibling's."""

    def __init__(self, stream: Any, fd: int, chunks: list) -> None:
        self._stream, self._fd, self._chunks = stream, fd, chunks

    def write(self, text: str) -> int:
        self._chunks.append([self._fd, text])
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        if name == "buffer" and _active is not None:  # (bytes written there would not be noted)
            _active.refuse("wrote bytes to a stream")
        return getattr(self._stream, name)


def recorded(run: Callable[[], int]) -> tuple[int, rec.Recorder, list]:
    """Run `run` with a Recorder on and its output noted; the exit code, the recorder, the output."""
    global _active
    chunks: list = []
    recorder = rec.Recorder()
    for path in _system_files():
        recorder.stats[path] = inputs.identity(path)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Tee(saved[0], 1, chunks), _Tee(saved[1], 2, chunks)
    _active = recorder.start()
    try:
        code = run()
    finally:
        recorder.stop()
        _active = None
        sys.stdout, sys.stderr = saved
    return code, recorder, chunks


def keep(key: str, code: int, recorder: rec.Recorder, chunks: list, mounts: str | None) -> bool:
    """Remember a finished run's answer when nothing it read changed (the mount table, `mounts`
    before it, included) and nothing refused it."""
    if code not in (0, 1) or not recorder.settled() or _mounts() != mounts:
        return False
    answer = {
        "format": FORMAT,
        "code": code,
        "chunks": chunks,
        "mounts": mounts,
        "stats": recorder.stats,
        "lstats": recorder.lstats,
        "opened": recorder.opened,
        "listings": recorder.listings,
        "pids": recorder.pids,
        "expires": recorder.expires,
        "made": recorder.started,
    }
    folder = answers_dir()
    scratch = os.path.join(folder, f".{key}.{os.getpid()}.tmp")
    try:  # (a cache: one not written only costs the next run the work)
        st = os.stat(folder)
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return False
        with open(os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
            out.write(marshal.dumps(answer))
        os.replace(scratch, os.path.join(folder, key))
    except (OSError, ValueError):
        try:  # noqa: SIM105 (a full disk: the half-written scratch goes)
            os.unlink(scratch)
        except OSError:
            pass
        return False
    _prune(folder)
    return True


def _make(folder: str) -> None:
    """The answers' folder, made (and recorded for `uninstall`) before the run it remembers, so that
    its own making is not a change that run would see; only below a folder of our own (as root
    with a user's XDG_CACHE_HOME, nothing of root's is left in the user's folders)."""
    from pathlib import Path

    from senpi_guard.io import made

    try:
        if made.below_own(Path(folder)):
            made.record(made.make_private(Path(folder)))  # (as io/write.private_dirs)
    except OSError:
        pass


def _prune(folder: str) -> None:
    """The newest KEEP answers stay (another run's scratch, a dot file, is its own to remove)."""
    try:
        entries = [e for e in os.scandir(folder) if not e.name.startswith(".")]
        entries.sort(key=lambda e: e.stat().st_mtime_ns, reverse=True)
    except OSError:
        return
    for entry in entries[KEEP:]:
        try:  # noqa: SIM105 (as above)
            os.unlink(entry.path)
        except OSError:
            pass


def front_door(argv: list[str], run: Callable[[list[str]], int]) -> int:
    """`run(argv)`, or its remembered answer when the command is one that may be remembered and
    nothing it depends on changed since."""
    command = chosen(argv)
    if command not in COMMANDS or os.environ.get("SENPI_GUARD_FRESH", "") not in ("", "0"):
        return run(argv)
    try:
        key = key_of(argv)
    except OSError:  # (the current folder removed: no key to keep an answer under)
        return run(argv)
    folder = answers_dir()
    answer = _load(os.path.join(folder, key))
    if answer is not None and still_true(answer) and not (command == "apply" and _someone_writes()):
        return replay(answer)
    if not os.path.isdir(folder):
        _make(folder)
    mounts = _mounts()
    code, recorder, chunks = recorded(lambda: run(argv))
    kept = keep(key, code, recorder, chunks, mounts)
    if os.environ.get("SENPI_GUARD_DEBUG_ANSWERS"):  # (why a run was not remembered)
        print(f"senpi-guard: answer {'kept' if kept else 'not kept'}: {recorder.refused or code}", file=sys.stderr)
    return code
