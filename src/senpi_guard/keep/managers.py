"""Package managers at work on an install, as Linux shows them under /proc: a process of npm,
pnpm, yarn or bun (told by its command line) whose working dir or open files, or those of a
process it started (a lifecycle script runs in the package dir), lie in the install's package dir
or the node_modules folder above it. Such a manager stays "at work" on that install while it runs
(npm has nothing open there while it downloads the next package), for at most a ceiling.

Read with plain os calls on /proc (the kernel's, not a user's files), each read bounded, every
process allowed to vanish midway; only processes of senpi-guard's own user (any, as root) are
looked at, and nothing of theirs is run. Without /proc, no manager is ever seen (the watcher then
goes by files still changing alone)."""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from senpi_guard.io import reader
from senpi_guard.keep.notify import log

PROC = "/proc"
# the first word of a command line (node's process.title: "npm install -g x"), or the script node
# runs ("node /usr/lib/node_modules/pnpm/bin/pnpm.cjs add -g x"), without its extension
NAMES = {"npm": "npm", "npm-cli": "npm", "pnpm": "pnpm", "yarn": "yarn", "yarnpkg": "yarn", "bun": "bun"}
# what a manager is asked to do that writes packages (npm's abbreviations too); one running a script
# (`npm run dev`, `yarn dev`, `npm exec`) is no manager at work, though what it runs opens files in
# node_modules for hours. `yarn` (or pnpm, bun) with no command installs.
INSTALLING = frozenset().union(
    ("install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isntal", "isntall", "add", "ci", "ic"),
    ("update", "up", "upgrade", "u", "clean-install", "install-clean", "rebuild", "rb", "dedupe", "ddp", "prune"),
    ("uninstall", "un", "unlink", "remove", "rm", "r", "link", "ln", "global"),
)
READ_MAX = 4096  # bytes of a process's stat or command line
LOG_HEAD_MAX = 16384  # bytes of npm's debug log read for its arguments (on its first lines)
FDS_MAX = 4096  # open files looked at per process
DEPTH_MAX = 64  # parents followed from a process to the manager that started it


@dataclass(frozen=True)
class Manager:
    pid: int
    start: int  # (its start time, in clock ticks since boot: a pid used again is another process)
    name: str


@dataclass(frozen=True)
class _Process:
    ppid: int
    start: int
    manager: str | None
    writes_to: str | None = None  # (a global install's node_modules, from its command line)


def available() -> bool:
    return os.path.isdir(f"{PROC}/self/fd")


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return os.read(fd, READ_MAX)
    except OSError:
        return None
    finally:
        os.close(fd)


def manager_name(cmdline: bytes) -> str | None:
    """npm, pnpm, yarn or bun, when a command line is one of theirs writing packages."""
    words = cmdline.replace(b"\0", b" ").decode("utf-8", "replace").split()
    for at, word in enumerate(words[:2]):
        base = word.rsplit("/", 1)[-1]
        for ext in (".js", ".cjs", ".mjs"):
            base = base.removesuffix(ext)
        if base in NAMES:
            asked = [w for w in words[at + 1 : at + 9] if not w.startswith("-")]
            installs = any(w in INSTALLING for w in asked) or (not asked and NAMES[base] != "npm")
            return NAMES[base] if installs else None
    return None


def _processes(roots: dict[tuple[int, int], str] | None = None) -> dict[int, _Process]:
    """Every process senpi-guard may look at: its pid, parent, start time and manager name; `roots`:
    where each manager (pid, start time) was seen to write in an earlier scan (not looked up again)."""
    me, found, roots = os.geteuid(), {}, roots or {}
    try:
        pids = [int(entry) for entry in os.listdir(PROC) if entry.isdigit()]
    except OSError:
        return {}
    for pid in pids:
        try:
            if me != 0 and os.stat(f"{PROC}/{pid}").st_uid != me:
                continue
        except OSError:
            continue
        stat, cmdline = _read(f"{PROC}/{pid}/stat"), _read(f"{PROC}/{pid}/cmdline")
        if stat is None or cmdline is None:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # (the name before it may hold spaces and parens)
        try:
            ppid, start = int(fields[1]), int(fields[19])
        except (IndexError, ValueError):
            continue
        # (npm's title is "npm" alone for a moment before "npm install x": still the same npm at work)
        manager = manager_name(cmdline) or ("npm" if cmdline.replace(b"\0", b" ").split() == [b"npm"] else None)
        writes_to = (roots.get((pid, start)) or global_root(pid, cmdline)) if manager else None
        if manager == "npm" and writes_to is None and (logged := logged_argv(pid)) is not None:
            writes_to = global_root(pid, b"npm\0" + logged)  # (its title keeps no flag: its log does)
        found[pid] = _Process(ppid, start, manager, writes_to)
    return found


def logged_argv(pid: int) -> bytes | None:
    """npm's arguments as the debug log it holds open records them (`8 verbose argv "install"
    "--prefix" "P" …`), NUL-separated: once npm sets its process title (bare `npm`, then `npm install
    x.tgz`) its command line keeps no flag. The log is read through the process's own descriptor
    (never a path someone may swap), a regular file only, its head only, and only parsed."""
    try:
        fds = os.listdir(f"{PROC}/{pid}/fd")[:FDS_MAX]
    except OSError:
        return None
    for fd in fds:
        try:
            target = os.readlink(f"{PROC}/{pid}/fd/{fd}")
        except OSError:
            continue
        if "/_logs/" in target and target.endswith("-debug-0.log"):
            head = reader.held_open(pid, int(fd), LOG_HEAD_MAX)
            found = re.search(rb"^\d+ verbose argv (.*)$", head or b"", re.MULTILINE)
            if found:
                words = [json.loads(w) for w in re.findall(rb'"(?:[^"\\]|\\.)*"', found.group(1))]
                return "\0".join(w for w in words if isinstance(w, str)).encode()
    return None


def global_root(pid: int, cmdline: bytes) -> str | None:
    """The node_modules a global install writes into, from its command line: `--prefix P`, else,
    with -g, the prefix of the node running it (its exe's grandparent). Known before it writes a
    file there: npm downloads and unpacks before it opens anything in the install."""
    words = cmdline.replace(b"\0", b" ").decode("utf-8", "replace").split()
    prefix = next((w.split("=", 1)[1] for w in words if w.startswith("--prefix=")), None)
    if prefix is None and "--prefix" in words[:-1]:
        prefix = words[words.index("--prefix") + 1]
    if prefix is None and ("-g" in words or "--global" in words):
        try:
            prefix = os.path.dirname(os.path.dirname(os.readlink(f"{PROC}/{pid}/exe")))
        except OSError:
            return None
    if prefix and not os.path.isabs(prefix):  # (relative to where npm runs, not to the watcher)
        try:
            prefix = os.path.join(os.readlink(f"{PROC}/{pid}/cwd"), prefix)
        except OSError:
            return None
    return os.path.join(os.path.normpath(prefix), "lib", "node_modules") if prefix else None


def _places(pid: int) -> list[str]:
    """The working dir and the open files of a process (what is left of them if it ends meanwhile)."""
    try:
        links = ["cwd", *(f"fd/{fd}" for fd in os.listdir(f"{PROC}/{pid}/fd")[:FDS_MAX])]
    except OSError:
        links = ["cwd"]
    places = []
    for link in links:
        try:
            places.append(os.readlink(f"{PROC}/{pid}/{link}"))
        except OSError:
            continue
    return places


def _manager_of(pid: int, processes: dict[int, _Process]) -> Manager | None:
    """The package manager a process is, or the nearest one among its parents; None for one
    senpi-guard started itself (`npm root -g` for discovery)."""
    own, found = os.getpid(), None
    for _ in range(DEPTH_MAX):
        if pid == own:
            return None
        process = processes.get(pid)
        if process is None:
            return found
        if process.manager and found is None:
            found = Manager(pid, process.start, process.manager)
        pid = process.ppid
    return found


def install_dirs(package_dir: Path) -> tuple[str, ...]:
    """Where a manager at work on an install writes: the package dir (its real one too) and the
    node_modules folder above it (a retired copy, a new pnpm dir); the parent when there is none."""
    dirs = []
    for path in dict.fromkeys((package_dir, Path(os.path.realpath(package_dir)))):
        dirs.append(str(path))
        above = next((p for p in path.parents if p.name == "node_modules"), path.parent)
        dirs.append(str(above))
    return tuple(dict.fromkeys(dirs))


def _inside(place: str, dirs: tuple[str, ...]) -> bool:
    return any(place == d or place.startswith(d + os.sep) for d in dirs)


class Tracker:
    """Which managers are at work on which installs, remembered while each runs; one at work for
    longer than `ceiling` seconds is let go (a hung npm must not hold the watcher forever). /proc
    is read at most once per `interval` seconds (a settle may ask twenty times a second)."""

    def __init__(self, ceiling: float, interval: float = 0.25) -> None:
        self.ceiling, self.interval = ceiling, interval
        self.scanned = -interval
        self.seen: dict[Manager, tuple[float, dict[Path, None]]] = {}  # -> (first seen, installs)
        self.let_go: set[Manager] = set()
        # where each manager at work writes, once known (npm's log is read once, not every scan)
        self.roots: dict[tuple[int, int], str] = {}

    def at_work(self, package_dirs: list[Path]) -> dict[Path, Manager]:
        """The installs a package manager is at work on now, each with one such manager."""
        if time.monotonic() - self.scanned >= self.interval:
            self.scanned = time.monotonic()
            self._scan(package_dirs)
        return self._working(set(package_dirs))

    def _scan(self, package_dirs: list[Path]) -> None:
        if not available():
            return
        processes = _processes(self.roots)
        alive = {Manager(pid, p.start, p.manager) for pid, p in processes.items() if p.manager}
        self.roots = {(m.pid, m.start): root for m in alive if (root := processes[m.pid].writes_to)}
        self.seen = {m: seen for m, seen in self.seen.items() if m in alive}
        self.let_go &= alive
        if not alive:
            return
        dirs = {package_dir: install_dirs(package_dir) for package_dir in package_dirs}
        for pid in processes:
            manager = _manager_of(pid, processes)
            if manager is None or manager in self.let_go:
                continue
            places = [*_places(pid), *filter(None, [processes[pid].writes_to])]
            touched = {d for place in places for d, inside in dirs.items() if _inside(place, inside)}
            for package_dir in touched:
                installs = self.seen.setdefault(manager, (time.monotonic(), {}))[1]
                if package_dir not in installs:
                    installs[package_dir] = None
                    log.info("waiting for %s (pid %d) to finish with %s", manager.name, manager.pid, package_dir)

    def _working(self, wanted: set[Path]) -> dict[Path, Manager]:
        working: dict[Path, Manager] = {}
        now = time.monotonic()
        for manager, (first, installs) in list(self.seen.items()):
            if now - first > self.ceiling:
                log.warning(
                    "%s (pid %d) has been at work on %s for over %gs; not waiting for it any longer",
                    manager.name,
                    manager.pid,
                    ", ".join(map(str, installs)),
                    self.ceiling,
                )
                self.let_go.add(manager)
                del self.seen[manager]
                continue
            for package_dir in installs:
                if package_dir in wanted:
                    working.setdefault(package_dir, manager)
        return working
