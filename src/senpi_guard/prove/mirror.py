"""The folder node replays in: a copy of the package made of symlinks to the real entries, except
the folders on the way to each target, which are real and hold the candidate and the original.

Mirrors live under senpi-guard's state dir (`verify/<pid>-<random>`), and a run sweeps those of
processes that are gone, so a killed run leaves nothing behind for long. When root replays
another user's package, node runs as that user (its code never runs as root), in a mirror made
in the system temp dir and owned by that user."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from senpi_guard.errors import FatalError
from senpi_guard.io.write import private_dirs

JS = resources.files("senpi_guard.prove").joinpath("js")
PROTOCOL = "protocol.mjs"  # what every harness imports: its half of verify.run_script's protocol
ORIGINAL_SUFFIX = ".senpi-guard-original.js"
PREFIX = "senpi-guard-verify-"


@dataclass(frozen=True)
class Mirror:
    root: Path
    harness: Path
    checks: Path
    placed: dict[Path, tuple[Path, Path]] = field(default_factory=dict)  # real -> (original, candidate)
    owner: tuple[int, int] | None = None
    extras: dict[str, Path] = field(default_factory=dict)  # more files beside the harness, by name

    def in_package(self, package_dir: Path, path: Path) -> Path:
        """Where a file of the install appears in the mirror (a link, unless it was placed)."""
        return self.root / "pkg" / Path(path).relative_to(package_dir)

    def popen_kwargs(self) -> dict[str, Any]:
        """Run node as the package's owner when root replays someone else's code."""
        if self.owner is None:
            return {}
        return {"user": self.owner[0], "group": self.owner[1], "extra_groups": []}


def place_harness(name: str, folder: Path) -> Path:
    """A harness of prove/js copied into `folder` with the protocol module it imports; its path."""
    for file in (name, PROTOCOL):
        shutil.copyfile(Path(str(JS.joinpath(file))), folder / file)
    return folder / name


def harness_bytes(name: str) -> bytes:
    """What a harness's replay depends on: its own bytes and the protocol's (for replay keys)."""
    return JS.joinpath(name).read_bytes() + JS.joinpath(PROTOCOL).read_bytes()


def sweep(work_dir: Path) -> None:
    """Remove the mirrors of runs whose process is gone (killed ones included)."""
    for base in (work_dir, Path(tempfile.gettempdir())):
        try:
            entries = list(base.iterdir()) if base.is_dir() else []
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(PREFIX) and not _alive(entry.name[len(PREFIX) :].split("-")[0]):
                shutil.rmtree(entry, ignore_errors=True)


def _alive(pid_text: str) -> bool:
    if not pid_text.isdigit():
        return True  # not ours to judge
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


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
    package_dir: Path,
    modules: list,
    checks: Path,
    work_dir: Path,
    owner: tuple[int, int] | None,
    extras: dict[str, bytes] | None = None,
) -> Iterator[Mirror]:
    """`modules` are verify.ModulePair (their real_path lies lexically under package_dir); yields
    the Mirror with every module placed, and `extras` (name -> bytes) written beside the harness."""
    base = Path(tempfile.gettempdir()) if owner else work_dir
    try:
        private_dirs(base)
        folder = base / f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        folder.mkdir(mode=0o700)
    except OSError as exc:
        raise FatalError(
            f"cannot make a verification folder in {base}: {exc.strerror}; free space "
            "or fix that folder's permissions, then retry"
        ) from exc
    try:
        yield _fill(folder, package_dir, modules, checks, owner, extras or {})
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _fill(
    folder: Path,
    package_dir: Path,
    modules: list,
    checks: Path,
    owner: tuple[int, int] | None,
    extras: dict[str, bytes],
) -> Mirror:
    root = folder / "pkg"
    real_dirs: set[Path] = set()
    # lexical paths: a folder swapped for a link since the read must not move the mirror elsewhere
    rels = {module.real_path: Path(module.real_path).relative_to(package_dir) for module in modules}
    for rel in rels.values():
        real_dirs.update(Path(*rel.parts[:depth]) if depth else Path(".") for depth in range(len(rel.parts)))
    _link_tree(root, package_dir.resolve(), real_dirs)
    harness = place_harness("harness.mjs", folder)
    checks_copy = folder / "checks.mjs"
    shutil.copyfile(checks, checks_copy)
    for script in checks.parent.glob("*.mjs"):  # (what the checks import from their own folder)
        if script.name != checks.name:
            shutil.copyfile(script, folder / script.name)
    written = {}
    for name, data in extras.items():
        written[name] = folder / name
        written[name].write_bytes(data)
    placed = {}
    for module in modules:
        candidate = root / rels[module.real_path]
        if candidate.is_symlink():
            candidate.unlink()
        candidate.write_bytes(module.candidate if module.candidate is not None else module.original)
        original = candidate.with_name(candidate.stem + ORIGINAL_SUFFIX)
        original.write_bytes(module.original)
        placed[module.real_path] = (original, candidate)
    if owner is not None:
        for path in [folder, *folder.rglob("*")]:
            with contextlib.suppress(OSError):
                os.chown(path, *owner, follow_symlinks=False)
    return Mirror(folder, harness, checks_copy, placed, owner, written)
