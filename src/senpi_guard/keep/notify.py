"""How the watcher tells the user: a rotating log file (and stderr), and desktop notifications."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import TYPE_CHECKING

from senpi_guard.io import store
from senpi_guard.io.visible import visible
from senpi_guard.io.write import os_error, private_dirs

if TYPE_CHECKING:
    from senpi_guard.layers import pipeline

log = logging.getLogger("senpi-guard.watch")


def _escaped(record: logging.LogRecord) -> bool:
    """A log line's values (paths, versions, messages from a user's files) escaped where they
    enter it: a newline or an escape sequence in one cannot forge a line of watch.log."""
    if isinstance(record.args, tuple):  # (an exception's text too: it quotes a user's path)
        record.args = tuple(a if isinstance(a, int | float | None) else visible(a) for a in record.args)
    if not record.args:  # (a message built by its caller, nothing to format: `not started: {exc}`)
        record.msg = visible(record.msg)
    return True


def setup_logging(verbose: bool = True, rounds: bool = False) -> Path:
    """watch.log (and stderr): the watcher's own lines and senpi-guard's others (its parent
    logger's: the write lock's wait), in one place; `rounds` (-v): each round's start and end too."""
    folder = store.log_dir()
    logfile = folder / "watch.log"
    try:
        private_dirs(folder)
        handler = RotatingFileHandler(logfile, maxBytes=1 << 20, backupCount=3, encoding="utf-8")
    except OSError as exc:
        raise os_error(exc, "open the log", logfile, "fix that folder (or set XDG_STATE_HOME), then retry") from exc
    parent = logging.getLogger("senpi-guard")  # (made now if not yet: log's parent from here on)
    parent.setLevel(logging.DEBUG if rounds else logging.INFO)
    for logger in (log, parent):
        logger.handlers.clear()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    handler.addFilter(_escaped)
    parent.addHandler(handler)
    if verbose:
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(logging.Formatter("senpi-guard watch: %(message)s"))
        console.addFilter(_escaped)
        parent.addHandler(console)
    return logfile


def to_log_file(level: int, message: str) -> None:
    """A line for the log file alone: the caller says it on stderr itself (once)."""
    record = log.makeRecord(log.name, level, __file__, 0, message, (), None)
    for handler in logging.getLogger("senpi-guard").handlers:
        if isinstance(handler, RotatingFileHandler):
            handler.handle(record)


def notify(title: str, message: str) -> None:
    """One desktop notification where the platform has a notifier; never fails the caller."""
    if sys.platform == "darwin" and shutil.which("osascript"):
        script = f"display notification {message!r} with title {title!r}".replace("'", '"')
        argv = ["osascript", "-e", script]
    elif shutil.which("notify-send"):
        argv = ["notify-send", "--app-name=senpi-guard", title, message]
    else:
        return
    try:
        subprocess.run(argv, timeout=10, check=False, capture_output=True)
    except (OSError, subprocess.TimeoutExpired):
        log.info("desktop notification could not be shown")


def log_extension(result: pipeline.Result) -> None:
    """What the extension layer's round did in one agent dir, or a standing problem it saw first."""
    if result.standing:
        where = "" if result.path == Path("-") else f" {result.path}"  # ("-": no agent dir could be told)
        log.warning("extension layer%s: %s", where, result.detail)
    elif result.ok:
        log.info("extension layer %s: %s -> %s (%s)", result.path, result.before, result.after, result.detail)
    else:
        log.error("extension layer %s: %s", result.path, result.detail)
