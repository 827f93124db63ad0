"""Whom node runs as when senpi-guard is root: never as root over code anyone else could have written.

A replay runs node over the install's code: its targets, what they import, and for the extension
senpi's own loader and runner with their dependencies. Whose code that is, is judged over node
itself, senpi's own package and the packages its dependencies resolve to as node resolves them
(each `node_modules` above, a pnpm store it links into) — never over unrelated neighbours in a
global folder, which node would not load. Each of those files (and the folders above them) counts
for its owner; one that group or others can write, or one under a folder they can write without
the sticky bit, is "anyone's". Then, as root:

- files of one non-root user: node runs as that user;
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
import pwd
import stat
from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard import ui
from senpi_guard.errors import FatalError

EXAMPLES = 2  # files named per owner in a refusal
NOBODY = "nobody"
DEPENDENCY_KEYS = ("dependencies", "optionalDependencies", "peerDependencies")


@dataclass
class Judgement:
    """What a replay over some code would run: its non-root owners, the first file anyone may write,
    and the first thing `nobody` could not read."""

    owners: dict[int, tuple[int, list[Path]]] = field(default_factory=dict)  # uid -> (gid, examples)
    anyones: Path | None = None
    unreadable: Path | None = None

    def note(self, path: Path, st: os.stat_result, exposed: bool, above: bool = False) -> None:
        """One entry: `exposed` when a folder above lets anyone replace it; `above` for a folder on
        the way (nobody need only pass through it)."""
        if st.st_uid != 0:
            _gid, examples = self.owners.setdefault(st.st_uid, (st.st_gid, []))
            if len(examples) < EXAMPLES:
                examples.append(path)
        if stat.S_ISLNK(st.st_mode):
            return
        folder = stat.S_ISDIR(st.st_mode)
        if self.anyones is None and (exposed or (_open_to_all(st) if folder else st.st_mode & 0o022)):
            self.anyones = path
        wanted = 0o001 if above else 0o005 if folder else 0o004
        if self.unreadable is None and st.st_mode & wanted != wanted:
            self.unreadable = path


def _open_to_all(st: os.stat_result) -> bool:
    """A folder whose entries group or others may replace (no sticky bit to stop them)."""
    return stat.S_ISDIR(st.st_mode) and bool(st.st_mode & 0o022) and not st.st_mode & stat.S_ISVTX


def _exposed_above(path: Path, judgement: Judgement, seen: dict[Path, bool]) -> bool:
    """Note the folders above `path` (whoever owns one may swap what is below it); whether one of
    them lets anyone replace its entries."""
    exposed = False
    for parent in reversed(path.parents):
        if parent not in seen:
            try:
                st = os.lstat(parent)
            except OSError:
                seen[parent] = False
                continue
            seen[parent] = _open_to_all(st)
            judgement.note(parent, st, exposed, above=True)
        exposed = exposed or seen[parent]
    return exposed


def _dependencies(package_dir: Path) -> list[str]:
    try:
        doc = json.loads((package_dir / "package.json").read_text("utf-8"))
    except (OSError, ValueError):
        return []
    names: list[str] = []
    for key in DEPENDENCY_KEYS:
        table = doc.get(key) if isinstance(doc, dict) else None
        if isinstance(table, dict):
            names.extend(name for name in table if isinstance(name, str) and ".." not in name)
    return names


def _resolve(name: str, from_dir: Path) -> Path | None:
    """Where node finds the package `name` from `from_dir`: the first `node_modules/<name>` above."""
    for folder in (from_dir, *from_dir.parents):
        if folder.name == "node_modules":
            continue
        candidate = folder / "node_modules" / name
        if candidate.is_dir():
            return Path(os.path.realpath(candidate))
    return None


def packages(package_dir: Path) -> list[Path]:
    """senpi's package and every package its dependencies resolve to (transitively, links resolved)."""
    first = Path(os.path.realpath(package_dir))
    found, pending = [first], [first]
    while pending:
        current = pending.pop()
        for name in _dependencies(current):
            resolved = _resolve(name, current)
            if resolved is not None and resolved not in found:
                found.append(resolved)
                pending.append(resolved)
    return found


def _walk(root: Path, exposed: bool, judgement: Judgement) -> None:
    """Every entry of one package, its own `node_modules` left out (its dependencies are packages of
    their own). A link is judged by what it points to; a folder it points to is not walked."""
    pending = [(root, exposed)]
    while pending:
        folder, exposed = pending.pop()
        try:
            st = os.lstat(folder)
            entries = list(os.scandir(folder))
        except OSError:
            continue
        judgement.note(folder, st, exposed)
        exposed = exposed or _open_to_all(st)
        for entry in entries:
            path = Path(entry.path)
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if entry.name != "node_modules":
                    pending.append((path, exposed))
                continue
            judgement.note(path, st, exposed)
            if stat.S_ISLNK(st.st_mode):
                try:
                    judgement.note(path, os.stat(path), exposed)
                except OSError:
                    continue


def judge(package_dir: Path | None, node: str | None) -> Judgement:
    """Whose the code of a replay is: node's file and senpi's packages, with the folders above them."""
    judgement, seen = Judgement(), {}
    if node is not None:
        real = Path(os.path.realpath(node))
        with contextlib.suppress(OSError):
            judgement.note(real, os.stat(real), _exposed_above(real, judgement, seen))
    for root in packages(package_dir) if package_dir is not None else []:
        _walk(root, _exposed_above(root, judgement, seen), judgement)
    return judgement


def nobody() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam(NOBODY)
    except KeyError:
        return 65534, 65534
    return entry.pw_uid, entry.pw_gid


def decide(package_dir: Path | None, node: str | None) -> tuple[tuple[int, int] | None, str | None]:
    """As root: whom a replay runs as (None: root), and a note when it is root; the refusal raised."""
    found = judge(package_dir, node)
    where = package_dir or node
    if len(found.owners) > 1:
        named = "; ".join(
            f"uid {uid}: {', '.join(map(str, files))}" for uid, (_gid, files) in sorted(found.owners.items())
        )
        raise FatalError(
            f"the code node would run for {where} belongs to several users ({named}); "
            "senpi-guard will not run it as root or as one of them: run senpi-guard as the "
            "owner of senpi, fix the owners (chown -R), or pass --allow-foreign-root"
        )
    if found.owners:
        uid, (gid, _files) = next(iter(found.owners.items()))
        return (uid, gid), None
    if found.unreadable is None:
        return nobody(), None
    if found.anyones is not None:
        raise FatalError(
            f"{found.anyones} can be changed by users other than root, and the replay of {where} would "
            f"run it as root ({NOBODY} cannot read {found.unreadable}); make it root's alone "
            f"(chmod go-w {found.anyones}), or let others read the package (chmod -R o+rX), then retry"
        )
    note = f"{NOBODY} cannot read {found.unreadable}: the replay of {where} runs as root (only root can write it)"
    return None, note


def run_as(package_dir: Path | None, node: str | None, allow_foreign_root: bool) -> tuple[int, int] | None:
    """Whom node must run as for a replay of this package: None (as we are) unless we are root."""
    if os.geteuid() != 0 or allow_foreign_root:
        return None
    owner, note = decide(package_dir, node)
    if note:
        ui.progress(note)
    return owner


def node_owner(node: str) -> tuple[int, int] | None:
    """Whom `node --version` runs as: its owner when we are root and it is someone else's."""
    if os.geteuid() != 0:
        return None
    try:
        st = os.stat(os.path.realpath(node))
    except OSError:
        return None
    return (st.st_uid, st.st_gid) if st.st_uid != 0 else None


def popen_kwargs(owner: tuple[int, int] | None) -> dict:
    return {} if owner is None else {"user": owner[0], "group": owner[1], "extra_groups": []}
