"""The user's config file: which tags to dedupe, and how to treat upstream's own dedupe."""

from __future__ import annotations

import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from senpi_guard.errors import FatalError

DEFAULT_TAGS = (
    "ultrawork-mode",
    "omo-senpi-task",
    "omo-senpi-ulw-loop",
    "omo-senpi-start-work",
    "omo-fallback-architect",
    "omo-fallback-architect-reminder",
    "system-reminder",
)
UPSTREAM_MODES = ("replace", "defer")
LAYERS = ("dist", "extension")
DRIFT_MODES = ("report", "rebuild")
# Numeric settings: (lowest, highest). nan and inf fall outside every range.
RANGES = {"verify_timeout": (0.01, 3600), "rescan_interval": (1, 86400), "quiet_period": (0.05, 60),
          "settle_timeout": (0.5, 3600)}
TAG_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]{0,39}")


@dataclass(frozen=True)
class Config:
    tags: tuple[str, ...] = DEFAULT_TAGS
    upstream_dedupe: str = "replace"
    verify_timeout: float = 60.0
    rescan_interval: float = 60.0
    quiet_period: float = 0.5
    settle_timeout: float = 30.0
    on_drift: str = "report"  # the watcher: "report" a hand-edited patched file, or "rebuild" it
    layers: tuple[str, ...] = LAYERS  # which layers apply installs: the dist patch, the extension
    source: Path | None = field(default=None, compare=False)


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir("senpi-guard"))


def config_file() -> Path:
    return config_dir() / "config.toml"


def config_path() -> Path:
    override = os.environ.get("SENPI_GUARD_CONFIG")
    return Path(override) if override else config_file()


def load(path: Path | None = None) -> Config:
    named = path is None and bool(os.environ.get("SENPI_GUARD_CONFIG"))
    path = path or config_path()
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO or a device would hang or lie
            raise FatalError(f"config {path} is not a regular file; point SENPI_GUARD_CONFIG at a "
                             "TOML file, or unset it")
        raw = path.read_bytes()
    except FileNotFoundError:
        if named:
            raise FatalError(f"SENPI_GUARD_CONFIG names {path}, which does not exist; create it "
                             "or unset the variable") from None
        return Config()
    except OSError as exc:
        raise FatalError(f"cannot read config {path}: {exc.strerror}; fix its permissions") from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise FatalError(f"config {path} is not valid TOML ({exc}); fix or delete it") from exc
    return _validate(data, path)


def _validate(data: dict, path: Path) -> Config:
    def bad(what: str) -> FatalError:
        return FatalError(f"config {path}: {what}; nothing was changed")

    known = {"tags", "upstream_dedupe", "on_drift", "layers", *RANGES}
    unknown = sorted(set(data) - known)
    if unknown:
        return_keys = ", ".join(sorted(known))
        raise bad(f"unknown key {unknown[0]!r} (known keys: {return_keys})")
    tags = data.get("tags", list(DEFAULT_TAGS))
    if not isinstance(tags, list) or not tags or not all(isinstance(t, str) for t in tags):
        raise bad("'tags' must be a non-empty list of tag names, e.g. tags = [\"ultrawork-mode\"]")
    for tag in tags:
        if not TAG_PATTERN.fullmatch(tag):
            raise bad(f"tag {tag!r} is not a plain tag name (letters, digits, - _ . :; at most 40)")
    if len(set(tags)) != len(tags):
        raise bad("'tags' lists a tag twice")
    mode = data.get("upstream_dedupe", "replace")
    if mode not in UPSTREAM_MODES:
        raise bad(f"'upstream_dedupe' is {mode!r}; use \"replace\" or \"defer\"")
    drift = data.get("on_drift", "report")
    if drift not in DRIFT_MODES:
        raise bad(f"'on_drift' is {drift!r}; use \"report\" or \"rebuild\"")
    layers = data.get("layers", list(LAYERS))
    if not isinstance(layers, list) or not layers or not all(layer in LAYERS for layer in layers) \
            or len(set(layers)) != len(layers):
        raise bad(f"'layers' is {layers!r}; use a non-empty list of \"dist\" and \"extension\", "
                  "e.g. layers = [\"dist\", \"extension\"]")
    numbers = {}
    for key in RANGES:
        problem = number_problem(key, data.get(key, getattr(Config, key)))
        if problem:
            raise bad(problem)
        numbers[key] = float(data.get(key, getattr(Config, key)))
    return Config(tags=tuple(tags), upstream_dedupe=mode, on_drift=drift, layers=tuple(layers),
                  source=path, **numbers)


def number_problem(key: str, value: object) -> str | None:
    """Why `value` is no good for the numeric setting `key` (None when it is)."""
    low, high = RANGES[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        return f"'{key}' must be a number from {low} to {high}, got {value!r}"
    return None
