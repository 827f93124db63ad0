"""senpi-guard's own state files, one way: each is one JSON document `{"version": N, ...}` of a
known `Kind`, read through the one confined reader (a FIFO or a huge file there is refused, never
waited on), refused in one line when it is corrupt, not senpi-guard's, or written by a newer
senpi-guard, and written privately and atomically by the caller (`encode`: never when its bytes would
not change). The records (`state.json`), a revert's hold on an install, the extension's
taken-out records and the made-folders records all go through here.

Writers change a file under the write lock (`Store.lock`) or a folder lock; readers never wait:
a reader sees the old document or the new one (a rename), never half of one."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from senpi_guard.errors import FatalError
from senpi_guard.io import reader


@dataclass(frozen=True)
class Kind:
    """One kind of state file: what it holds (said in its errors), its format version, the field its
    body is under (None: the whole document but `version`), the body's type and what the user does
    when it cannot be read."""

    holds: str
    version: int
    body: str | None
    of: type
    fix: str
    first_version: int | None = 1  # what a document without `version` is (None: refused, it must say)
    migrate: Callable[[dict[str, Any], int], None] | None = None  # an older format's document, brought up to date


_EMPTY = object()


def load(path: Path, kind: Kind, missing: Any = _EMPTY) -> Any:
    """The body of the state file at `path` (`missing` when there is none; by default an empty body)."""
    try:
        raw = reader.read(path, reader.STATE)
    except FileNotFoundError:
        return kind.of() if missing is _EMPTY else missing
    except (OSError, reader.Refused) as exc:
        raise FatalError(f"cannot read state file {path} ({_why(exc)}); {kind.fix}") from exc
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        what = f"state file {path} ({kind.holds})"
        raise FatalError(f"{what} is corrupt ({exc}); nothing was changed: {kind.fix}") from exc
    body = doc.get(kind.body) if isinstance(doc, dict) and kind.body is not None else doc
    if not isinstance(doc, dict) or not isinstance(body, kind.of):
        raise FatalError(f"state file {path} is not senpi-guard's ({kind.holds}); nothing was changed: {kind.fix}")
    version = doc.get("version", kind.first_version)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise FatalError(f"state file {path} ({kind.holds}) has no format senpi-guard knows ({version!r}); {kind.fix}")
    if version > kind.version:
        raise FatalError(
            f"state file {path} ({kind.holds}) was written by a newer senpi-guard (format {version}; this one writes "
            f"{kind.version}): upgrade senpi-guard, or delete the file"
        )
    if version < kind.version and kind.migrate is not None:
        kind.migrate(doc, version)
    if kind.body is None:
        doc.pop("version", None)
        return doc
    return body


def encode(path: Path, kind: Kind, body: Any) -> bytes | None:
    """The state file's bytes for `body`, or None when the file at `path` holds them already (then
    nothing is written). The caller writes them atomically: `io/write.write_private`, or for the
    made-folders record (which write_private itself adds to) `made`'s own."""
    doc = {**body, "version": kind.version} if kind.body is None else {"version": kind.version, kind.body: body}
    encoded = json.dumps(doc, indent=2, sort_keys=True).encode()
    with contextlib.suppress(OSError, reader.Refused):
        if reader.read(path, reader.STATE) == encoded:
            return None
    return encoded


def _why(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
