"""The folder node replays in: a copy of the package made of symlinks to the real entries, except
the folders on the way to each target, which are real and hold the candidate and the original.

Mirrors live under senpi-guard's state dir (`verify/<pid>-<random>`), and a run sweeps those of
processes that are gone, so a killed run leaves nothing behind for long. When root replays
another user's package, node runs as that user (its code never runs as root), in a mirror that
user's own child process makes in the system temp dir and fills from bytes root read before: root
chowns nothing and follows no path inside it (owned_folder, shared with the extension's replay)."""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from senpi_guard.errors import FatalError
from senpi_guard.io.unpack import as_user
from senpi_guard.io.write import private_dirs

JS = resources.files("senpi_guard.prove").joinpath("js")
PROTOCOL = "protocol.mjs"  # what every harness imports: its half of verify.run_script's protocol
ORIGINAL_SUFFIX = ".senpi-guard-original.js"
PREFIX = "senpi-guard-verify-"
CHECK_PREFIX = "senpi-guard-check-"  # check's scratch: `<CHECK_PREFIX><pid>-<random>`
PINNED: dict[Path, tuple[int, int]] = {}  # package folder -> (st_dev, st_ino) as it was opened


def pin(package_dir: Path, st: os.stat_result) -> None:
    """Remember the folder a release was opened as: a mirror of it re-checks that before node runs."""
    PINNED[Path(package_dir)] = (st.st_dev, st.st_ino)


def check_pinned(package_dir: Path) -> None:
    wanted = PINNED.get(Path(package_dir))
    try:
        here = os.stat(package_dir)
    except OSError as exc:
        raise FatalError(f"{package_dir} is gone ({exc.strerror}) since it was opened; retry") from exc
    if wanted is not None and (here.st_dev, here.st_ino) != wanted:
        raise FatalError(f"{package_dir} is not the folder that was opened any more; retry")


@dataclass(frozen=True)
class Mirror:
    root: Path
    harness: Path
    checks: Path
    placed: dict[Path, tuple[Path, Path]] = field(default_factory=dict)  # real -> (original, candidate)
    owner: tuple[int, int] | None = None
    extras: dict[str, Path] = field(default_factory=dict)  # more files beside the harness, by name
    scratch: Path | None = None  # root's own folder for what root writes (the job file), never the mirror

    def in_package(self, package_dir: Path, path: Path) -> Path:
        """Where a file of the install appears in the mirror (a link, unless it was placed)."""
        return self.root / "pkg" / Path(path).relative_to(package_dir)

    def popen_kwargs(self) -> dict[str, Any]:
        """Run node as the package's owner when root replays someone else's code."""
        if self.owner is None:
            return {}
        return {"user": self.owner[0], "group": self.owner[1], "extra_groups": []}


def harness_bytes(name: str) -> bytes:
    """What a harness's replay depends on: its own bytes and the protocol's (for replay keys)."""
    return JS.joinpath(name).read_bytes() + JS.joinpath(PROTOCOL).read_bytes()


def sweep(work_dir: Path) -> None:
    """Remove the mirrors (and check's scratch folders) of runs whose process is gone (killed ones
    included)."""
    for base in dict.fromkeys((work_dir, Path(tempfile.gettempdir()), Path("/tmp"))):
        try:
            entries = list(base.iterdir()) if base.is_dir() else []
        except OSError:
            continue
        for entry in entries:
            prefix = next((p for p in (PREFIX, CHECK_PREFIX) if entry.name.startswith(p)), None)
            if prefix and not _alive(entry.name[len(prefix) :].split("-")[0]):
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
def owned_folder(base: Path, tag: str, owner: tuple[int, int] | None, fill: Callable[[Path], None]) -> Iterator[Path]:
    """A folder `base/<PREFIX><pid><tag>-<random>` made, filled by `fill(folder)` and at the end
    removed by `owner` itself (a child dropped to them, as io/unpack.as_user): nothing in it is
    chowned, and root never follows a path inside it. `fill` gets only bytes read beforehand."""
    folder = base / f"{PREFIX}{os.getpid()}{tag}-{secrets.token_hex(4)}"

    def make() -> None:
        try:
            folder.mkdir(mode=0o700)
            fill(folder)
        except OSError as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise FatalError(
                f"cannot make a verification folder in {base}: {exc.strerror}; free space "
                "or fix that folder's permissions, then retry"
            ) from exc

    make_private(base)
    as_user(owner, make, "making the replay folder")
    try:
        yield folder
    finally:
        as_user(owner, lambda: shutil.rmtree(folder, ignore_errors=True), "removing the replay folder")


def shared_temp() -> Path:
    """Where another user's replay folder goes: a root-owned, sticky, world-writable temp folder
    (any user may make a folder there, none may replace another's): TMPDIR when it is one (a
    private TMPDIR of root's is no place another user can write), else /tmp or /var/tmp."""
    for candidate in (tempfile.gettempdir(), "/tmp", "/var/tmp"):
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if st.st_uid == 0 and stat.S_ISDIR(st.st_mode) and st.st_mode & 0o1777 == 0o1777:
            return Path(candidate)
    raise FatalError(
        "no shared temp folder (root's, sticky, world-writable: /tmp) for a replay run as another user; "
        "restore /tmp (chmod 1777 /tmp), then retry"
    )


def make_private(folder: Path) -> None:
    try:
        private_dirs(folder)
    except OSError as exc:
        raise FatalError(f"cannot make {folder}: {exc.strerror}; fix that folder's permissions, then retry") from exc


def script_bytes(checks: Path) -> dict[str, bytes]:
    """The checks and the scripts beside them they may import, by name (read by the caller, who can)."""
    found = {script.name: script.read_bytes() for script in checks.parent.glob("*.mjs")}
    found[checks.name] = checks.read_bytes()
    return found


def harness_files(name: str) -> dict[str, bytes]:
    """A harness of prove/js with the protocol module it imports, by name."""
    return {file: JS.joinpath(file).read_bytes() for file in (name, PROTOCOL)}


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (folder / name).write_bytes(data)


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
    the Mirror with every module placed, and `extras` (name -> bytes) written beside the harness.
    As root for someone else, the owner makes and fills it (owned_folder)."""
    base = shared_temp() if owner else work_dir
    make_private(work_dir)  # (root's own: the job file goes there)
    files = {**harness_files("harness.mjs"), **script_bytes(checks), "checks.mjs": checks.read_bytes()}
    files.update(extras or {})
    real_package = Path(os.path.realpath(package_dir))
    # lexical paths: a folder swapped for a link since the read must not move the mirror elsewhere
    rels = {module.real_path: Path(module.real_path).relative_to(package_dir) for module in modules}

    def fill(folder: Path) -> None:
        write_files(folder, files)
        _fill(folder, real_package, modules, rels)

    with owned_folder(base, "", owner, fill) as folder:
        check_pinned(package_dir)  # (just before node runs in it)
        placed = {}
        for module in modules:
            candidate = folder / "pkg" / rels[module.real_path]
            placed[module.real_path] = (candidate.with_name(candidate.stem + ORIGINAL_SUFFIX), candidate)
        written = {name: folder / name for name in extras or {}}
        yield Mirror(folder, folder / "harness.mjs", folder / "checks.mjs", placed, owner, written, work_dir)


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
