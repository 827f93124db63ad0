"""The one sandbox node replays in, for both layers (the dist layer's mirror of a package, the
extension layer's rendered file): made, filled with the harness and its files, node run as the
judged owner, swept when a killed run left it, removed when the run ends.

- The folder is `<PREFIX><pid><tag>-<random>` under senpi-guard's state dir (`verify/`). When root
  replays another user's code it goes in the shared temp folder instead (that user can reach it),
  and that user's own child process makes, fills and removes it from bytes root read before: root
  chowns nothing and follows no path inside it.
- Whom node runs as is prove/owners' judgement of the code it loads: as root, never another user's
  code as root (their own uid, or `nobody`, or a refusal naming the fix).
- A run sweeps the folders of runs whose process is gone (killed ones included), in every place a
  folder can be made: the state dir and each candidate temp folder.
- SIGTERM and ^C end a run as an exception (cli.Terminated), so the folder goes in `folder`'s
  `finally`; node itself is killed by verify.run_script."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import stat
import tempfile
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from senpi_guard.errors import FatalError
from senpi_guard.io import reader, runas
from senpi_guard.io.unpack import STOP_SIGNALS, as_user
from senpi_guard.io.write import private_dirs
from senpi_guard.prove import nodes, owners

JS = resources.files("senpi_guard.prove").joinpath("js")
PROTOCOL = "protocol.mjs"  # what every harness imports: its half of verify.run_script's protocol
PREFIX = "senpi-guard-verify-"
CHECK_PREFIX = "senpi-guard-check-"  # check's scratch: `<CHECK_PREFIX><pid>-<random>`
NODE_TMP = "tmp"  # node's temp folder (TMPDIR), inside the replay folder it runs in
PINNED: dict[Path, tuple[int, int]] = {}  # package folder -> (st_dev, st_ino) as it was opened


def pin(package_dir: Path, st: os.stat_result) -> None:
    """Remember the folder a release was opened as: a sandbox over it re-checks that before node runs."""
    PINNED[Path(package_dir)] = (st.st_dev, st.st_ino)


def check_pinned(package_dir: Path) -> None:
    wanted = PINNED.get(Path(package_dir))
    try:
        here = os.stat(package_dir)
    except OSError as exc:
        raise FatalError(f"{package_dir} is gone ({exc.strerror}) since it was opened; retry") from exc
    if wanted is not None and (here.st_dev, here.st_ino) != wanted:
        raise FatalError(f"{package_dir} is not the folder that was opened any more; retry")


def temp_places() -> list[Path]:
    """The temp folders a replay folder for another user may go in, in the order they are tried."""
    return list(dict.fromkeys(Path(p) for p in (tempfile.gettempdir(), "/tmp", "/var/tmp")))


def shared_temp() -> Path:
    """Where another user's replay folder goes: a root-owned, sticky, world-writable temp folder
    (any user may make a folder there, none may replace another's): TMPDIR when it is one (a
    private TMPDIR of root's is no place another user can write), else /tmp or /var/tmp."""
    for candidate in temp_places():
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if st.st_uid == 0 and stat.S_ISDIR(st.st_mode) and st.st_mode & 0o1777 == 0o1777:
            return candidate
    raise FatalError(
        "no shared temp folder (root's, sticky, world-writable: /tmp) for a replay run as another user; "
        "restore /tmp (chmod 1777 /tmp), then retry"
    )


def sweep(work_dir: Path) -> None:
    """Remove the replay folders (and check's scratch folders) of runs whose process is gone, killed
    ones included, wherever a run makes them: `work_dir` and every one of temp_places()."""
    for base in dict.fromkeys((Path(work_dir), *temp_places())):
        try:
            entries = list(base.iterdir()) if base.is_dir() else []
        except OSError:
            continue
        for entry in entries:
            prefix = next((p for p in (PREFIX, CHECK_PREFIX) if entry.name.startswith(p)), None)
            if prefix and not _alive(entry.name[len(prefix) :].split("-")[0]):
                shutil.rmtree(entry, ignore_errors=True)  # (a link is not followed: rmtree refuses it)


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


def make_private(folder: Path) -> None:
    try:
        private_dirs(folder)
    except OSError as exc:
        raise FatalError(f"cannot make {folder}: {exc.strerror}; fix that folder's permissions, then retry") from exc


def harness_files(name: str) -> dict[str, bytes]:
    """A harness of prove/js with the protocol module it imports, by name."""
    return {file: reader.own_data(JS.joinpath(file)) for file in (name, PROTOCOL)}


def harness_bytes(name: str) -> bytes:
    """What a harness's replay depends on: its own bytes and the protocol's (for replay keys)."""
    return reader.own_data(JS.joinpath(name)) + reader.own_data(JS.joinpath(PROTOCOL))


def script_bytes(checks: Path) -> dict[str, bytes]:
    """The checks and the scripts beside them they may import, by name (read by the caller, who can)."""
    found = {script.name: reader.own_data(script) for script in checks.parent.glob("*.mjs")}
    found[checks.name] = reader.own_data(checks)
    return found


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (folder / name).write_bytes(data)


@contextmanager
def _owned_folder(base: Path, tag: str, owner: runas.Account | None, fill: Callable[[Path], None]) -> Iterator[Path]:
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
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # (made and in the `try` at once)
    try:
        as_user(owner, make, "making the replay folder")
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # (a SIGTERM that came meanwhile is raised here)
        yield folder
    finally:
        with _stops_held():  # (a stop during the removal would leave the folder half removed)
            as_user(owner, lambda: shutil.rmtree(folder, ignore_errors=True), "removing the replay folder")


@contextmanager
def _stops_held() -> Iterator[None]:
    """^C and SIGTERM wait until the block ends (and are raised then)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


@contextmanager
def check_scratch() -> Iterator[Path]:
    """`check`'s scratch folder in the temp folder, named with the pid (`sweep` removes what a killed
    check left), removed when the block ends: ^C and SIGTERM are held while it is made and while it
    is removed, so a stop at either moment cannot leave it behind (it is raised after)."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        scratch = tempfile.TemporaryDirectory(prefix=f"{CHECK_PREFIX}{os.getpid()}-")
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)  # (a stop that came meanwhile is raised here)
            yield Path(scratch.name)
        finally:
            signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
            scratch.cleanup()  # (it also removes read-only folders an unpack made)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


@dataclass(frozen=True)
class Sandbox:
    """Where node replays: `work_dir` (root's, or the user's own: senpi-guard's state dir) for its
    folders and the job file, `owner` whom node runs as (None: as we are), and `package_dir` the
    install whose code it loads (re-checked to be the folder that was opened, before node runs),
    `node` node's file opened when judged: what runs, whatever its path names by then."""

    work_dir: Path
    owner: runas.Account | None = None
    package_dir: Path | None = None
    node: runas.Program | None = None

    @classmethod
    def judged(cls, work_dir: Path, package_dir: Path | None, node: str, allow_foreign_root: bool) -> Sandbox:
        """The sandbox for a replay of `package_dir`'s code with `node`: what killed runs left swept,
        and node's user judged (the refusal raised)."""
        make_private(work_dir)
        sweep(work_dir)
        try:
            program = runas.pin(node)
        except OSError as exc:
            raise nodes.unrunnable(node, exc) from exc
        try:
            owner = owners.run_as(package_dir, node, allow_foreign_root, program)
        except BaseException:
            if program.fd >= 0:
                os.close(program.fd)
            raise
        sandbox = cls(work_dir, owner, package_dir, program)
        if program.fd >= 0:
            weakref.finalize(sandbox, os.close, program.fd)
        return sandbox

    def popen_kwargs(self, folder: Path) -> dict[str, Any]:
        """Run node in replay folder `folder` as the judged owner, its temp folder (TMPDIR) that
        folder's own: what node or the code it loads writes to a temp folder goes with the folder.
        senpi's loader, through jiti, caches each extension it transpiles in `<TMPDIR>/jiti`, by
        path: in the shared /tmp that was a 64 kB file per proof never read again, and, when the
        first to make /tmp/jiti was a replay run as `nobody`, a folder `nobody` owns, from which
        every later senpi on the machine reads code (and which no other user can write to).
        The rest of its environment is io/runas's allow-list: none of ours reaches the code."""
        return runas.popen_kwargs(self.owner, own={"TMPDIR": str(folder / NODE_TMP)}, program=self.node)

    @contextmanager
    def folder(
        self, tag: str, harness: str, files: dict[str, bytes], fill: Callable[[Path], None] | None = None
    ) -> Iterator[Path]:
        """A replay folder holding the harness (with the protocol it imports) and `files` (name ->
        bytes), then whatever `fill(folder)` adds (run in the owner's child, from bytes read before);
        removed when the block ends, ^C and SIGTERM included."""
        make_private(self.work_dir)  # (root's own: the job file goes there)
        base = shared_temp() if self.owner else self.work_dir  # (a folder the owner can reach)
        placed = {**files, **harness_files(harness)}  # (the harness wins over a patch's file of its name)

        def fill_all(folder: Path) -> None:
            write_files(folder, placed)
            (folder / NODE_TMP).mkdir(mode=0o700)
            if fill is not None:
                fill(folder)

        with _owned_folder(base, tag, self.owner, fill_all) as folder:
            if self.package_dir is not None:
                check_pinned(self.package_dir)  # (just before node runs in it)
            yield folder
