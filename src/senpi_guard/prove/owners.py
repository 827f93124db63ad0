"""Whom node runs as when senpi-guard is root: never as root over code anyone else could have written.

A replay runs node over the install's code: its targets, what they import, and for the extension
senpi's own loader and runner with their dependencies. Whose code that is, is judged over node
itself, senpi's own package and the packages its dependencies resolve to as node resolves them
(each `node_modules` above, a pnpm store it links into) — never over unrelated neighbours in a
global folder, which node would not load. Each of those files (and the folders above them) counts
for its owner; one that group or others can write, or one under a folder they can write without
the sticky bit, is "anyone's". Then, as root:

- files of one non-root user: node runs as that user (io/runas: their primary group, never a
  file's; nobody:nogroup for a uid the user database lacks);
- root's alone: node runs as `nobody` (over a mirror nobody can read), so a world-writable file in
  a root install runs as no one in particular;
- where nobody cannot read the code (a 077 umask), node runs as root only if no file is anyone's,
  and says so; otherwise the file is refused with the fix (`chmod go-w`);
- files of two non-root users are refused, naming them. `--allow-foreign-root` runs node as root,
  on your word."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard import ui
from senpi_guard.errors import FatalError, NeedsFix, fix_of
from senpi_guard.io import memo, reader, runas

EXAMPLES = 2  # files named per owner in a refusal
VERDICT = "root-verdict"  # (memo kind)
DEPENDENCY_KEYS = ("dependencies", "optionalDependencies", "peerDependencies")


@dataclass
class Judgement:
    """What a replay over some code would run: its non-root owners, the first file anyone may write,
    and the first thing `nobody` could not read. Paths are strings: the walk meets every file of
    senpi's dependencies (24,000 in the published package), and a Path per entry costs most of it."""

    owners: dict[int, list[Path]] = field(default_factory=dict)  # uid -> examples
    anyones: Path | None = None
    unreadable: Path | None = None

    def note(self, path: str, st: os.stat_result, exposed: bool, above: bool = False) -> None:
        """One entry: `exposed` when a folder above lets anyone replace it; `above` for a folder on
        the way (nobody need only pass through it)."""
        mode = st.st_mode
        if st.st_uid != 0:
            examples = self.owners.setdefault(st.st_uid, [])
            if len(examples) < EXAMPLES:
                examples.append(Path(path))
        if stat.S_ISLNK(mode):
            return
        folder = stat.S_ISDIR(mode)
        if self.anyones is None and (exposed or (_open_to_all(st) if folder else mode & 0o022)):
            self.anyones = Path(path)
        wanted = 0o001 if above else 0o005 if folder else 0o004
        if self.unreadable is None and mode & wanted != wanted:
            self.unreadable = Path(path)


def _open_to_all(st: os.stat_result) -> bool:
    """A folder whose entries group or others may replace (no sticky bit to stop them)."""
    return stat.S_ISDIR(st.st_mode) and bool(st.st_mode & 0o022) and not st.st_mode & stat.S_ISVTX


def _exposed_above(path: str, judgement: Judgement, seen: dict[str, bool]) -> bool:
    """Note the folders above `path` (whoever owns one may swap what is below it); whether one of
    them lets anyone replace its entries."""
    exposed = False
    for parent in reversed(Path(path).parents):
        key = str(parent)
        if key not in seen:
            try:
                st = os.lstat(key)
            except OSError:
                seen[key] = False
                continue
            seen[key] = _open_to_all(st)
            judgement.note(key, st, exposed, above=True)
        exposed = exposed or seen[key]
    return exposed


def _dependencies(package_dir: str) -> list[str]:
    try:
        doc = json.loads(reader.read(os.path.join(package_dir, "package.json"), reader.MANIFEST))
    except (OSError, ValueError, RecursionError):
        return []
    names: list[str] = []
    for key in DEPENDENCY_KEYS:
        table = doc.get(key) if isinstance(doc, dict) else None
        if isinstance(table, dict):
            names.extend(name for name in table if isinstance(name, str) and ".." not in name)
    return names


def _resolve(name: str, from_dir: str) -> str | None:
    """Where node finds the package `name` from `from_dir`: the first `node_modules/<name>` above."""
    folder = from_dir
    while True:
        if os.path.basename(folder) != "node_modules":
            candidate = os.path.join(folder, "node_modules", name)
            if os.path.isdir(candidate):
                return os.path.realpath(candidate)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def packages(package_dir: Path) -> list[Path]:
    """senpi's package and every package its dependencies resolve to (transitively, links resolved)."""
    first = os.path.realpath(package_dir)
    found, pending = {first: None}, [first]
    while pending:
        current = pending.pop()
        for name in _dependencies(current):
            resolved = _resolve(name, current)
            if resolved is not None and resolved not in found:
                found[resolved] = None
                pending.append(resolved)
    return [Path(p) for p in found]


def _walk(root: str, exposed: bool, judgement: Judgement) -> None:
    """Every entry of one package, its own `node_modules` left out (its dependencies are packages of
    their own). A link is judged by what it points to; a folder it points to is not walked."""
    pending = [(root, exposed)]
    while pending:
        folder, exposed = pending.pop()
        try:
            st = os.lstat(folder)
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        judgement.note(folder, st, exposed)
        exposed = exposed or _open_to_all(st)
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if entry.name != "node_modules":
                    pending.append((entry.path, exposed))
                continue
            judgement.note(entry.path, st, exposed)
            if stat.S_ISLNK(st.st_mode):
                try:
                    judgement.note(entry.path, os.stat(entry.path), exposed)
                except OSError:
                    continue


_step: dict[tuple[str, str | None], Judgement] | None = None  # judgements of the running step


@contextlib.contextmanager
def step() -> Iterator[None]:
    """One command step (or one watcher round): the code's owners are judged once in it, however
    many replays it runs. Outside a step every judgement walks afresh."""
    global _step
    outer, _step = _step, {} if _step is None else _step
    try:
        yield
    finally:
        _step = outer


def judge(package_dir: Path | None, node: str | None, program: runas.Program | None = None) -> Judgement:
    """Whose the code of a replay is: node's file (the one `program` opened, when given: the file
    run) and senpi's packages, with the folders above them."""
    pinned = f"|{program.st.st_dev}|{program.st.st_ino}" if program is not None else ""
    key = (str(package_dir) if package_dir is not None else "", f"{node}{pinned}" if node is not None else None)
    if _step is not None and key in _step:
        return _step[key]
    judgement, seen = Judgement(), {}
    if node is not None:
        real = os.path.realpath(node)
        with contextlib.suppress(OSError):
            st = program.st if program is not None else os.stat(real)
            judgement.note(real, st, _exposed_above(real, judgement, seen))
    for root in packages(package_dir) if package_dir is not None else []:
        _walk(str(root), _exposed_above(str(root), judgement, seen), judgement)
    if _step is not None:
        _step[key] = judgement
    return judgement


def decide(
    package_dir: Path | None, node: str | None, program: runas.Program | None = None
) -> tuple[runas.Account | None, str | None]:
    """As root: whom a replay runs as (None: root), and a note when it is root; the refusal raised.
    The verdict is remembered for `status` (see `refusal`)."""
    key = _verdict_key(package_dir, node)
    try:
        decided = _decide(package_dir, node, program)
    except FatalError as exc:
        memo.remember(VERDICT, key, {"refusal": str(exc), "fix": fix_of(exc)})
        raise
    memo.remember(VERDICT, key, {"refusal": None, "fix": ""})
    return decided


def _decide(
    package_dir: Path | None, node: str | None, program: runas.Program | None
) -> tuple[runas.Account | None, str | None]:
    found = judge(package_dir, node, program)
    where = package_dir or node
    if len(found.owners) > 1:
        named = "; ".join(f"uid {uid}: {', '.join(map(str, files))}" for uid, files in sorted(found.owners.items()))
        raise FatalError(
            f"the code node would run for {where} belongs to several users ({named}); "
            "senpi-guard will not run it as root or as one of them: run senpi-guard as the "
            "owner of senpi, fix the owners (chown -R), or pass --allow-foreign-root"
        )
    if found.owners:  # (with that user's own primary group, never a file's)
        return runas.user(next(iter(found.owners))), None
    if found.unreadable is None:
        return runas.nobody(), None
    if found.anyones is not None:
        fix = f"chmod go-w {found.anyones}"
        raise NeedsFix(
            f"{found.anyones} can be changed by users other than root, and the replay of {where} would "
            f"run it as root ({runas.NOBODY} cannot read {found.unreadable}); make it root's alone "
            f"({fix}), or let others read the package (chmod -R o+rX), then retry",
            fix,
        )
    note = f"{runas.NOBODY} cannot read {found.unreadable}: the replay of {where} runs as root (only root can write it)"
    return None, note


def _verdict_key(package_dir: Path | None, node: str | None) -> str | None:
    """What a remembered verdict stands on, cheaply: node's binary; the inode, owner, mode and times
    of senpi's package folder, its package.json and its node_modules (npm renames these in on an
    install or update); the inode, owner and mode of every folder above (their times change
    whenever a neighbour does). A chown or chmod of any of them is a miss; one deep inside a
    dependency is not seen: only `status` trusts this, apply and verify judge afresh."""
    if package_dir is None:
        return None
    real = os.path.realpath(package_dir)
    parts = [memo.file_key(node) if node else "-"]
    own = (real, os.path.join(real, "package.json"), os.path.join(real, "node_modules"))
    for path in (*own, *map(str, Path(real).parents)):
        try:
            st = os.lstat(path)
        except OSError:
            parts.append(f"{path}|-")
            continue
        times = f"|{st.st_mtime_ns}|{st.st_ctime_ns}" if path in own else ""
        parts.append(f"{path}|{st.st_dev}|{st.st_ino}|{st.st_mode}|{st.st_uid}|{st.st_gid}{times}")
    return "\n".join(parts)


def refused(package_dir: Path | None, node: str | None) -> FatalError | None:
    """For `status` as root: the refusal a replay of this install would meet (None: it would run),
    with its fix (errors.fix_of), from the last verdict while nothing `_verdict_key` covers
    changed, else judged now."""
    known = memo.recall(VERDICT, _verdict_key(package_dir, node))
    if (
        isinstance(known, dict)
        and (known.get("refusal") is None or isinstance(known["refusal"], str))
        and isinstance(known.get("fix"), str)
    ):
        return None if known["refusal"] is None else NeedsFix(known["refusal"], known["fix"])
    try:
        decide(package_dir, node)
    except FatalError as exc:
        return exc
    return None


def refusal(package_dir: Path | None, node: str | None) -> str | None:
    """Why a replay of this install would be refused, in words (None: it would run): `refused`'s."""
    found = refused(package_dir, node)
    return None if found is None else str(found)


def run_as(
    package_dir: Path | None, node: str | None, allow_foreign_root: bool, program: runas.Program | None = None
) -> runas.Account | None:
    """Whom node must run as for a replay of this package: None (as we are) unless we are root;
    node's own file judged is `program`'s (the one run) when given."""
    if os.geteuid() != 0 or allow_foreign_root:
        return None
    owner, note = decide(package_dir, node, program)
    if note:
        ui.progress(note)
    return owner
