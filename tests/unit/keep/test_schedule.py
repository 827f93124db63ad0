"""keep/schedule: what the watcher's dist schedule does with an outcome, decided on its fields."""

from __future__ import annotations

import logging
import queue
import threading

from senpi_guard.core.patch.classify import State
from senpi_guard.discover import Install
from senpi_guard.io.store import Store
from senpi_guard.keep.schedule import DistSchedule
from senpi_guard.layers import pipeline


def _recorded(tmp_path, caplog, detail: str, reason: pipeline.Reason) -> list[logging.LogRecord]:
    schedule = DistSchedule(Store(), threading.Event(), queue.SimpleQueue())
    install = Install(tmp_path / "senpi", "1.0.0", "npm")
    outcome = pipeline.Outcome(install, State.STALE, State.STALE, True, detail, patch="dedupe", reason=reason)
    with caplog.at_level(logging.INFO, logger="senpi-guard.watch"):
        schedule.recorded(outcome, "startup")
    return [r for r in caplog.records if r.levelno == logging.WARNING]


def test_a_reshape_left_for_apply_is_warned_of_by_its_reason_whatever_the_words(tmp_path, caplog):
    warned = _recorded(tmp_path, caplog, "the config would change what is sent: kept", pipeline.Reason.RESHAPE_LEFT)
    assert [r.getMessage() for r in warned] == [
        f"install={tmp_path / 'senpi'} the config would change what is sent: kept"
    ]


def test_words_alone_warn_of_nothing(tmp_path, caplog):
    assert _recorded(tmp_path, caplog, "left as it is: whatever", pipeline.Reason.NONE) == []
