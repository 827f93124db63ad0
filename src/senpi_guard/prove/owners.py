"""Whom node runs as when senpi-guard is root: never root over another user's code.

A replay runs node and imports modules of the install (its targets, what they import, and for the
extension senpi's own loader and runner with their dependencies). Which modules node will import is
only known once it runs, so the rule is taken over everything it could import: node itself, and every
file where node resolves modules from (the package, each node_modules above it, a pnpm store it lies
in; links followed only within those, a link out of them refused). They must share
one owner: root (node runs as root), or one other user (node runs as that user). Files of more than
one non-root user are refused, naming them, unless `--allow-foreign-root`."""

from __future__ import annotations

import os
from pathlib import Path

from senpi_guard.errors import FatalError

EXAMPLES = 2  # files named per owner in a refusal


def _owner_of(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_uid, st.st_gid


def resolution_roots(package_dir: Path) -> list[Path]:
    """Where node may load the package's code and its dependencies from: the package itself, every
    `node_modules` above it (node's module resolution walks up), and a pnpm store (`.pnpm`) it lies
    in, whose packages link to one another."""
    real = Path(os.path.realpath(package_dir))
    roots = [real]
    for parent in real.parents:
        if parent.name == ".pnpm":
            roots.append(parent)
        if (parent / "node_modules").is_dir() and parent / "node_modules" not in real.parents:
            roots.append(Path(os.path.realpath(parent / "node_modules")))
        elif parent.name == "node_modules":
            roots.append(parent)
    return list(dict.fromkeys(roots))


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _tree_owners(roots: list[Path], found: dict[int, tuple[int, list[Path]]]) -> None:
    """Owners of every entry under the roots. Links are not followed, except into the roots (pnpm's
    node_modules link into its store); a link out of them is refused: node would follow it."""
    pending, seen = list(roots), set()
    while pending:
        folder = pending.pop()
        if folder in seen:
            continue
        seen.add(folder)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        _note(found, folder, _owner_of(folder))
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if entry.is_symlink():
                _note(found, Path(entry.path), (st.st_uid, st.st_gid))
                target = Path(os.path.realpath(entry.path))
                if not _inside(target, roots):
                    raise FatalError(
                        f"{entry.path} links out of the package and its node_modules (to {target}); "
                        "senpi-guard will not run that code as root: run it as the owner of senpi, "
                        "or pass --allow-foreign-root"
                    )
                if target.is_dir():
                    pending.append(target)
                else:
                    _note(found, target, _owner_of(target))
            elif entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
            else:
                _note(found, Path(entry.path), (st.st_uid, st.st_gid))


def _note(found: dict[int, tuple[int, list[Path]]], path: Path, owner: tuple[int, int] | None) -> None:
    if owner is None or owner[0] == 0:
        return
    _gid, examples = found.setdefault(owner[0], (owner[1], []))
    if len(examples) < EXAMPLES:
        examples.append(path)


def owners(package_dir: Path, node: str | None) -> dict[int, tuple[int, list[Path]]]:
    """Every non-root owner among node and the package's files: uid -> (gid, example files)."""
    found: dict[int, tuple[int, list[Path]]] = {}
    if node is not None:
        _note(found, Path(os.path.realpath(node)), _owner_of(Path(os.path.realpath(node))))
    _tree_owners(resolution_roots(package_dir), found)
    return found


def run_as(package_dir: Path, node: str | None, allow_foreign_root: bool) -> tuple[int, int] | None:
    """Whom node must run as for a replay of this package: None (as we are) unless we are root and
    some of the code belongs to another user."""
    if os.geteuid() != 0 or allow_foreign_root:
        return None
    found = owners(package_dir, node)
    if not found:
        return None
    if len(found) > 1:
        named = "; ".join(f"uid {uid}: {', '.join(map(str, files))}" for uid, (_gid, files) in sorted(found.items()))
        raise FatalError(
            f"the code node would run for {package_dir} belongs to several users ({named}); "
            "senpi-guard will not run it as root or as one of them: run senpi-guard as the "
            "owner of senpi, fix the owners (chown -R), or pass --allow-foreign-root"
        )
    uid, (gid, _files) = next(iter(found.items()))
    return uid, gid


def node_owner(node: str) -> tuple[int, int] | None:
    """Whom `node --version` runs as: its owner when we are root and it is someone else's."""
    if os.geteuid() != 0:
        return None
    owner = _owner_of(Path(os.path.realpath(node)))
    return owner if owner is not None and owner[0] != 0 else None


def popen_kwargs(owner: tuple[int, int] | None) -> dict:
    return {} if owner is None else {"user": owner[0], "group": owner[1], "extra_groups": []}
