"""The record of the folders senpi-guard made outside its own state, data and cache folders
(`~/.config/systemd/user`, `~/.senpi/agent/extensions`, a project's `.senpi/agent/extensions`, an
XDG parent that was missing), so `uninstall` can take away those it made, and only those, once
they are empty again.

The record is `made-folders.json` in the state folder (and, for the cache folder's own chain, one
in the cache folder, so `status` writes nothing outside it; and, once `uninstall` has kept the files a
user edited in the data folder, one there for the folders above them, for a later `--purge`),
written atomically (a temp file beside it, renamed) each time a folder is made:

    {"version": 1, "folders": ["/home/me/.config/systemd", "/home/me/.config/systemd/user", ...]}

Absolute paths, in the order they were made. A folder inside senpi-guard's own folders is not
recorded (uninstall removes those whole). This module imports nothing of senpi-guard's own, so the
writers everything else uses (io/write, io/folders) can call it."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

import platformdirs

from senpi_guard.errors import FatalError
from senpi_guard.io import flock, statefile

APP = "senpi-guard"
VERSION = 1
NAME = "made-folders.json"
RECORD_WAIT_S = 1.0  # (as the memos': the record is read and written whole, in a moment)


def own_folders() -> list[Path]:
    """senpi-guard's own folders: removed whole by `uninstall`, never recorded inside."""
    return [
        Path(platformdirs.user_state_dir(APP)),
        Path(platformdirs.user_data_dir(APP)),
        Path(platformdirs.user_cache_dir(APP)),
        Path(platformdirs.user_log_dir(APP)),
    ]


def record_file() -> Path:
    return Path(platformdirs.user_state_dir(APP)) / NAME


def cache_record_file() -> Path:
    """Where the folders made for the cache folder itself (it, and a missing ~/.cache) are recorded:
    in the cache folder, so a read-only command (`status`) writes nothing outside it."""
    return Path(platformdirs.user_cache_dir(APP)) / NAME


def data_record_file() -> Path:
    """Where an uninstall that keeps the files a user edited (in the data folder) records the folders
    made above it: the state folder's record goes, and a later `uninstall --purge` needs them."""
    return Path(platformdirs.user_data_dir(APP)) / NAME


def keep_for_data(folders: Iterable[Path]) -> None:
    _add(data_record_file(), [Path(os.path.abspath(f)) for f in folders], own_folders())


def _for_cache(folder: Path) -> bool:
    cache = Path(os.path.abspath(platformdirs.user_cache_dir(APP)))
    return cache == folder or cache.is_relative_to(folder)


def missing_chain(folder: Path) -> list[Path]:
    """`folder` and its parents that do not exist yet, outermost first."""
    missing = []
    folder = Path(os.path.abspath(folder))
    while not os.path.lexists(folder):
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    return missing[::-1]


def below_own(folder: Path) -> bool:
    """Whether the nearest folder that exists at or above `folder` is ours: a cache is written only
    there (as root with a user's XDG_CACHE_HOME, nothing of root's is left in the user's folders),
    and, as root, no folder above it is another user's (`foreign`)."""
    chain = missing_chain(folder)
    above = chain[0].parent if chain else Path(os.path.abspath(folder))
    try:
        return above.stat().st_uid == os.geteuid() and foreign(above) is None
    except OSError:
        return False


def foreign(folder: Path) -> str | None:
    """As root, why `folder` is not root's own (None when it is, and always as a user): the one rule
    for senpi-guard's own folders (config, data, state, cache, logs) and HOME as root. Every folder
    that exists from `/` down to it (links resolved) must be owned by root and writable by no one
    else (a sticky folder such as /tmp excepted: no one else can move what root has in it). Else
    another user (root run with their HOME or XDG folders: `sudo -E`) could plant or swap what root
    trusts there."""
    if os.geteuid() != 0:
        return None
    path = Path(os.path.realpath(folder))
    for each in [path, *path.parents]:
        try:
            st = os.stat(each)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"{each} cannot be looked at ({exc.strerror})"
        if st.st_uid != 0:
            return f"{each} belongs to uid {st.st_uid}, not to root"
        if st.st_mode & 0o022 and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
            return f"{each} is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def foreign_text(folder: Path, problem: str) -> str:
    """The one line for a folder of senpi-guard's that `foreign` refuses."""
    return (
        f"as root senpi-guard trusts only folders of root's own, and {problem}: {folder} is not used; "
        "run senpi-guard as that user, or as root with root's own HOME (sudo -H, not sudo -E)"
    )


def make_private(folder: Path) -> list[Path]:
    """Make `folder` and its missing parents 0700 (whatever the umask); the ones made."""
    made = []
    for each in missing_chain(folder):
        try:
            each.mkdir(mode=0o700)
        except FileExistsError:
            continue
        made.append(each)
    return made


def recorded() -> list[Path]:
    """The folders recorded as made, in every record (an unreadable or unknown record, or one in a
    folder `foreign` refuses: none, never a guess)."""
    found: list[Path] = []
    for path in (record_file(), cache_record_file(), data_record_file()):
        if foreign(path.parent) is None:
            found += [folder for folder in _read(path) if folder not in found]
    return found


# (a record without its version is not taken for one: uninstall removes what it names)
FOLDERS = statefile.Kind("the folders senpi-guard made", VERSION, "folders", list, "delete it", first_version=None)


def _read(path: Path) -> list[Path]:
    try:  # (a record that cannot be read names no folder: never a guess)
        found = statefile.load(path, FOLDERS)
    except FatalError:
        return []
    return [Path(p) for p in found if isinstance(p, str) and os.path.isabs(p)]


def _inside_own(folder: Path, own: list[Path]) -> bool:
    return any(folder != top and folder.is_relative_to(top) for top in own)


def record(folders: Iterable[Path], in_cache: bool = False) -> None:
    """Add `folders` (just made) to the record: the cache folder's own chain (`in_cache`: all of
    them, as a read-only command's) to the record in it, the rest to the state folder's. Best
    effort: a record that cannot be written never fails the command that made the folder
    (uninstall then leaves that folder, as if not ours)."""
    own = own_folders()
    new = [Path(os.path.abspath(f)) for f in folders]
    new = [f for f in new if not _inside_own(f, own)]
    for path, group in (
        (cache_record_file(), [f for f in new if in_cache or _for_cache(f)]),
        (record_file(), [f for f in new if not (in_cache or _for_cache(f))]),
    ):
        if group:
            _add(path, group, own)


def _add(path: Path, new: list[Path], own: list[Path]) -> None:
    if not below_own(path.parent):  # (root with a user's HOME: nothing of root's made in their folders)
        return
    with contextlib.suppress(OSError):
        made_now = make_private(path.parent)
        with flock.folder_lock(path.parent, RECORD_WAIT_S):  # (what another run recorded meanwhile stays)
            known = [str(p) for p in _read(path)]
            for folder in [*made_now, *new]:
                if str(folder) not in known and not _inside_own(folder, own):
                    known.append(str(folder))
            if (encoded := statefile.encode(path, FOLDERS, known)) is not None:
                _write(path, encoded)


def _write(path: Path, data: bytes) -> None:
    """(write_private records the folders it makes here: this record is written on its own)"""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def mkdirs(folder: Path) -> None:
    """`folder.mkdir(parents=True, exist_ok=True)`, the folders made recorded."""
    missing = missing_chain(folder)
    folder.mkdir(parents=True, exist_ok=True)
    record(f for f in missing if f.is_dir())
