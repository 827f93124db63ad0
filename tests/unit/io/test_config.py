"""The config file: defaults, every key checked, one clear error for each bad value."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from senpi_guard.core.patch import definition
from senpi_guard.errors import FatalError
from senpi_guard.io import config

PATCHES = definition.load_all()
DEDUPE = next(p for p in PATCHES if p.name == "directive-dedupe")


def load(tmp_path, text: str) -> config.Config:
    """The config as the commands load it: read, then every patch's settings checked."""
    path = tmp_path / "config.toml"
    path.write_text(text)
    found = config.load(path)
    definition.check_config(PATCHES, found)
    return found


def test_missing_file_gives_defaults(tmp_path):
    assert config.load(tmp_path / "none.toml") == config.Config()


ENGINE = {
    "verify_timeout": ("5", 5.0),
    "rescan_interval": ("30", 30.0),
    "quiet_period": ("0.2", 0.2),
    "settle_timeout": ("10", 10.0),
    "check_max_bytes": ("2_000_000", 2e6),
    "check_max_entries": ("500", 500.0),
    "dist_file_max_bytes": ("200_000_000", 2e8),
    "session_line_max_bytes": ("1e9", 1e9),
    "on_drift": ('"rebuild"', "rebuild"),
    "layers": ('["extension"]', ("extension",)),
}


def test_every_engine_key_lands(tmp_path):
    # every key the engine knows is in this test (a new one fails it until it is added here)
    assert set(ENGINE) == set(config.ENGINE_KEYS) - {"patches"}
    found = load(tmp_path, "".join(f"{key} = {text}\n" for key, (text, _) in ENGINE.items()))
    assert {key: getattr(found, key) for key in ENGINE} == {key: value for key, (_, value) in ENGINE.items()}


@pytest.mark.parametrize("form", ["table", "top level"])
def test_every_patch_setting_lands_in_its_table_or_at_the_top(tmp_path, form):
    given = {"tags": '["ultrawork-mode"]', "upstream_dedupe": '"defer"'}
    lines = "".join(f"{key} = {text}\n" for key, text in given.items())
    found = load(tmp_path, f"[patches.directive-dedupe]\n{lines}" if form == "table" else lines)
    assert {k: v for k, v in DEDUPE.settings(found).items() if k in given} == {
        "tags": ("ultrawork-mode",),
        "upstream_dedupe": "defer",
    }
    assert {s.name for s in DEDUPE.settings_schema if s.top_level} == set(given)  # every top-level one


def test_table_only_settings_and_sub_tables(tmp_path):
    found = load(
        tmp_path,
        '[patches.directive-dedupe]\ntags = "auto"\nmin_bytes = 2048\n'
        "[patches.directive-dedupe.budget]\nwarn_at = 0.5\nblock_at = 0.9\n",
    )
    assert DEDUPE.settings(found) == {
        "tags": "auto",
        "min_bytes": 2048,
        "budget.warn_at": 0.5,
        "budget.block_at": 0.9,
        "record_calls": "on",
        "upstream_dedupe": "replace",
    }
    assert {s.name for s in DEDUPE.settings_schema} == set(DEDUPE.settings(found))  # every setting


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("tags = []", "non-empty list"),
        ('tags = ["a b"]', "not a plain tag name"),
        ('tags = ["x", "x"]', "twice"),
        ('upstream_dedupe = "maybe"', "replace"),
        ("rescan_interval = 0", "rescan_interval"),
        ("session_line_max_bytes = 10", "'session_line_max_bytes' must be a number from"),
        ('dist_file_max_bytes = "64M"', "'dist_file_max_bytes' must be a number from"),
        ("dist_file_max_bytes = nan", "'dist_file_max_bytes' must be a number from"),
        ("quiet_period = true", "quiet_period"),
        ("colour = 1", "unknown key"),
        ("tags = [", "not valid TOML"),
        ('[patches.directive-dedupe]\ntags = ["x", "x"]', "twice"),
        ("[patches.directive-dedupe]\ncolour = 1", "unknown setting"),
        ('[patches.directive-dedupe]\ntags = "everything"', 'or "auto"'),
        ("[patches.directive-dedupe]\nmin_bytes = 0", "'min_bytes' must be a whole number from 1"),
        ('[patches.directive-dedupe]\nmin_bytes = "big"', "'min_bytes' must be a whole number from 1 to 100,000,000"),
        ("[patches.directive-dedupe]\nmin_bytes = 512.5", "'min_bytes' must be a whole number"),
        ("[patches.directive-dedupe]\nmin_bytes = true", "'min_bytes' must be a whole number"),
        ("[patches.directive-dedupe.budget]\nwarn_at = 2", "'budget.warn_at' must be a number from 0.05 to 1"),
        ("[patches.directive-dedupe.budget]\ncolour = 2", "unknown setting 'budget.colour'"),
        (
            '[patches.directive-dedupe]\n"budget.warn_at" = 0.5\n[patches.directive-dedupe.budget]\nwarn_at = 0.6',
            "'budget.warn_at' is given twice",
        ),
        ("[patches.nothing-by-this-name]\nx = 1", "names no patch"),
        ('on_drift = "maybe"', "on_drift"),
        ('layers = ["dist", "dist"]', "layers"),
        ("tags = " + "[" * 5000 + "]" * 5000, "nests arrays or tables too deeply"),
        ("tags = " + "{a = " * 3000 + "1" + "}" * 3000, "nests arrays or tables too deeply"),
    ],
)
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
