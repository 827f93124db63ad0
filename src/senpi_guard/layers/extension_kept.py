"""An edited extension file kept aside: moved out of the extensions folder (where senpi would still
load it) into senpi-guard's data folder, a bounded number of copies per file."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from senpi_guard.io import reader, write
from senpi_guard.io.store import Store
from senpi_guard.io.write import os_error, write_private

KEEP_COPIES = 3  # an agent dir's edited extension copies kept; the oldest go (a cron's applies fill no disk)


def keep_aside(path: Path, store: Store) -> tuple[str, list[str]]:
    """Move an edited extension out of the extensions folder (where senpi would still load it): a
    copy in the data folder (unless those bytes are kept already), then the file taken away (both
    only if it is still what was read); the oldest copies past KEEP_COPIES removed. The copy's
    path and those removed."""
    try:
        data = reader.read(path, reader.EXTENSION)
    except OSError as exc:
        raise os_error(exc, "read", path, "move it away by hand, then retry") from exc
    sha = hashlib.sha256(data).hexdigest()[:12]
    folder = store.data_dir / "extension-kept"
    # (named by its bytes and by the file it was: `<time>-<sha>-<file's tag>-<name>`)
    tag = f"-{hashlib.sha256(os.fsencode(path)).hexdigest()[:8]}-{path.name}"
    try:
        mine = [p for p in folder.iterdir() if p.name.endswith(tag) and p.is_file()] if folder.is_dir() else []
        mine.sort(key=lambda p: (p.stat().st_mtime_ns, p.name))  # (oldest first: two in one second too)
    except OSError as exc:
        raise os_error(exc, "list", folder, "fix that folder, then retry") from exc
    same = [p for p in mine if p.name.split("-")[2] == sha]
    kept = same[-1] if same else folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{sha}{tag}"
    if not same:
        write_private(kept, data)
    write.take(path.parent, path.name, data)
    others = [p for p in mine if p != kept]
    pruned = others[: max(0, len(others) - (KEEP_COPIES - 1))]
    for old in pruned:
        try:
            old.unlink(missing_ok=True)
        except OSError as exc:
            raise os_error(exc, "remove", old, "remove it by hand") from exc
    return str(kept), [str(p) for p in pruned]
