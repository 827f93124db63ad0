"""The dist layer's replay folder: a copy of the package made of symlinks to the real entries,
except the folders on the way to each target, which are real and hold the candidate and the
original. It is a prove/sandbox folder (made, filled and removed by the judged owner; swept when a
killed run left it): this module only lays out the package inside it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from senpi_guard.io import reader
from senpi_guard.prove.sandbox import Sandbox, script_bytes

ORIGINAL_SUFFIX = ".senpi-guard-original.js"


@dataclass(frozen=True)
class Mirror:
    root: Path
    harness: Path
    checks: Path
    sandbox: Sandbox  # whose folder it is, and whom node runs as
    placed: dict[Path, tuple[Path, Path]] = field(default_factory=dict)  # real -> (original, candidate)
    extras: dict[str, Path] = field(default_factory=dict)  # more files beside the harness, by name

    def in_package(self, package_dir: Path, path: Path) -> Path:
        """Where a file of the install appears in the mirror (a link, unless it was placed)."""
        return self.root / "pkg" / Path(path).relative_to(package_dir)

    def popen_kwargs(self) -> dict[str, Any]:
        """Run node as the judged owner when root replays someone else's code, its temp folder in
        the mirror (Sandbox.popen_kwargs)."""
        return self.sandbox.popen_kwargs(self.root)


def _link_tree(root: Path, package_dir: Path, real_dirs: set[Path]) -> None:
    for rel_dir in sorted(real_dirs, key=lambda p: len(p.parts)):
        (root / rel_dir).mkdir(parents=True, exist_ok=True)
        for entry in (package_dir / rel_dir).iterdir():
            link = root / rel_dir / entry.name
            rel_entry = (rel_dir / entry.name) if rel_dir != Path(".") else Path(entry.name)
            if rel_entry in real_dirs or link.exists():
                continue
            link.symlink_to(entry)


@contextmanager
def mirror(
    package_dir: Path, modules: list, checks: Path, sandbox: Sandbox, extras: dict[str, bytes] | None = None
) -> Iterator[Mirror]:
    """`modules` are verify.ModulePair (their real_path lies lexically under package_dir); yields
    the Mirror with every module placed, and `extras` (name -> bytes) written beside the harness,
    in a folder of `sandbox` (as root for someone else, that owner makes and fills it)."""
    files = {**script_bytes(checks), "checks.mjs": reader.own_data(checks), **(extras or {})}
    real_package = Path(os.path.realpath(package_dir))
    # lexical paths: a folder swapped for a link since the read must not move the mirror elsewhere
    rels = {module.real_path: Path(module.real_path).relative_to(package_dir) for module in modules}
    pinned = replace(sandbox, package_dir=package_dir)  # (the package mirrored is the one re-checked)
    with pinned.folder("", "harness.mjs", files, lambda folder: _fill(folder, real_package, modules, rels)) as folder:
        placed = {}
        for module in modules:
            candidate = folder / "pkg" / rels[module.real_path]
            placed[module.real_path] = (candidate.with_name(candidate.stem + ORIGINAL_SUFFIX), candidate)
        written = {name: folder / name for name in extras or {}}
        yield Mirror(folder, folder / "harness.mjs", folder / "checks.mjs", sandbox, placed, written)


def _fill(folder: Path, real_package: Path, modules: list, rels: dict) -> None:
    """(In the owner's child.) The link tree of the package, with each module's candidate and
    original written in place of its link."""
    root = folder / "pkg"
    real_dirs: set[Path] = set()
    for rel in rels.values():
        real_dirs.update(Path(*rel.parts[:depth]) if depth else Path(".") for depth in range(len(rel.parts)))
    _link_tree(root, real_package, real_dirs)
    for module in modules:
        candidate = root / rels[module.real_path]
        if candidate.is_symlink():
            candidate.unlink()
        candidate.write_bytes(module.candidate if module.candidate is not None else module.original)
        candidate.with_name(candidate.stem + ORIGINAL_SUFFIX).write_bytes(module.original)
