"""The config file: defaults, every key checked, one clear error for each bad value."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from senpi_guard.errors import FatalError
from senpi_guard.io import config


def load(tmp_path, text: str) -> config.Config:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return config.load(path)


def test_missing_file_gives_defaults(tmp_path):
    assert config.load(tmp_path / "none.toml") == config.Config()


def test_every_key(tmp_path):
    found = load(tmp_path, 'tags = ["ultrawork-mode"]\nupstream_dedupe = "defer"\nverify_timeout = 5\n'
                           "rescan_interval = 30\nquiet_period = 0.2\nsettle_timeout = 10\n")
    assert found.tags == ("ultrawork-mode",) and found.upstream_dedupe == "defer"
    assert (found.verify_timeout, found.rescan_interval, found.quiet_period, found.settle_timeout) == \
        (5.0, 30.0, 0.2, 10.0)


@pytest.mark.parametrize(("text", "phrase"), [
    ("tags = []", "non-empty list"),
    ('tags = ["a b"]', "not a plain tag name"),
    ('tags = ["x", "x"]', "twice"),
    ('upstream_dedupe = "maybe"', "replace"),
    ("rescan_interval = 0", "rescan_interval"),
    ("quiet_period = true", "quiet_period"),
    ("colour = 1", "unknown key"),
    ("tags = [", "not valid TOML"),
])
def test_bad_values_are_one_line_errors(tmp_path, text, phrase):
    with pytest.raises(FatalError) as info:
        load(tmp_path, text)
    assert phrase in str(info.value) and "\n" not in str(info.value)


def test_a_named_config_that_is_missing_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SENPI_GUARD_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(FatalError, match="does not exist"):
        config.load()


def test_a_fifo_or_a_device_is_refused_without_reading_it(tmp_path, monkeypatch):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # reading it would block forever: no writer ever comes
    for target in (fifo, Path("/dev/zero")):
        monkeypatch.setenv("SENPI_GUARD_CONFIG", str(target))
        with pytest.raises(FatalError, match="not a regular file"):
            config.load()
