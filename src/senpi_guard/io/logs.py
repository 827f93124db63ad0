"""Where senpi-guard's logs go, and the crash log an unexpected error leaves for the user to report."""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import platformdirs

from senpi_guard.errors import FatalError
from senpi_guard.io.write import private_dirs

APP = "senpi-guard"


def log_dir() -> Path:
    return Path(platformdirs.user_log_dir(APP))


def crash_log(exc: BaseException) -> str:
    """Write the traceback of an unexpected error where the user can find it; return the path (in
    the log dir, else a new file in the system temp dir: the log dir may be what failed)."""
    text = f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} senpi-guard {' '.join(sys.argv[1:])}\n" + "".join(
        traceback.format_exception(exc)
    )
    folder = log_dir()
    try:
        private_dirs(folder)
        path = folder / "crash.log"
        with path.open("a", encoding="utf-8") as out:
            out.write(text)
        return str(path)
    except (OSError, FatalError):  # (FatalError: a log folder root will not write in: io/made.foreign)
        pass
    try:
        fd, name = tempfile.mkstemp(prefix="senpi-guard-crash-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        return name
    except OSError:
        return "(could not be written: " + "".join(traceback.format_exception_only(exc)).strip() + ")"


def unexpected(exc: BaseException) -> str:
    """The one line an unexpected error (a bug) is said in, its traceback kept in the crash log."""
    return f"unexpected error: {type(exc).__name__}: {exc}; the traceback is in {crash_log(exc)}; please report it"
