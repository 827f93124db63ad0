"""The user's config file: the engine's own settings (layers, timings, the watcher) at the top, and
each patch's settings in its own `[patches.<name>]` table, checked against what that patch declares
(patches/<name>/patch.toml `[settings]`). A patch setting may also be given at the top of the file
when the patch says so (`top_level`): configs written before the tables keep working."""

from __future__ import annotations

import math
import os
import stat
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import platformdirs

from senpi_guard.errors import FatalError
from senpi_guard.io import made, reader

LAYERS = ("dist", "extension")
DRIFT_MODES = ("report", "rebuild")
# Numeric settings: (lowest, highest). nan and inf fall outside every range.
RANGES = {
    "verify_timeout": (0.01, 3600),
    "rescan_interval": (1, 86400),
    "quiet_period": (0.05, 60),
    "settle_timeout": (0.5, 3600),
    "dist_file_max_bytes": (1e6, 1e11),  # io/reader: the most read of one file of senpi's dist/
    "session_line_max_bytes": (1e6, 1e11),  # ... and of one line of a session file
    "check_max_bytes": (1e6, 1e13),  # what `check` may unpack of a release
    "check_max_entries": (1, 1e8),
}
WHOLE = frozenset({"check_max_bytes", "check_max_entries"})  # counted, not measured: whole numbers
ENGINE_KEYS = frozenset({"on_drift", "layers", "patches", *RANGES})


def _flat(table: dict[str, Any]) -> dict[str, Any]:
    """A patch's table with its sub-tables as dotted keys: `[patches.x.budget] warn_at` is `budget.warn_at`."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        for name, item in (
            {f"{key}.{k}": v for k, v in value.items()} if isinstance(value, dict) else {key: value}
        ).items():
            if name in out:
                raise ValueError(name)
            out[name] = item
    return out


def _frozen(table: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in table.items()))


@dataclass(frozen=True)
class Config:
    verify_timeout: float = 60.0
    rescan_interval: float = 60.0
    quiet_period: float = 0.5
    settle_timeout: float = 30.0
    dist_file_max_bytes: float = 64 * 2**20  # a larger file in senpi's dist/ is refused (64 MiB) ...
    session_line_max_bytes: float = 128 * 2**20  # ... and a longer line of a session (128 MiB)
    check_max_bytes: float = 1e9  # `check` refuses a release that unpacks to more (1 GB) ...
    check_max_entries: float = 100_000  # ... or to more entries
    on_drift: str = "report"  # the watcher: "report" a hand-edited patched file, or "rebuild" it
    layers: tuple[str, ...] = LAYERS  # which layers apply installs: the dist patch, the extension
    tables: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()  # [patches.<name>] -> its settings
    loose: tuple[tuple[str, Any], ...] = ()  # other top-level keys: patch settings given the old way
    source: Path | None = field(default=None, compare=False)

    def table(self, patch: str) -> dict[str, Any]:
        """The settings this config gives one patch: its table, else what it has at the top."""
        return dict(dict(self.tables).get(patch, ()))

    def loose_value(self, key: str) -> Any:
        return dict(self.loose).get(key)

    def with_patch(self, patch: str, **settings: Any) -> Config:
        """A copy with these settings for one patch (tests, benchmarks)."""
        tables = dict(self.tables)
        tables[patch] = _frozen({**dict(tables.get(patch, ())), **settings})
        return replace(self, tables=tuple(sorted(tables.items())))

    def check_claimed(self, claimed: Iterable[str], patches: Iterable[str]) -> None:
        """Every top-level key is the engine's or a patch's, and every table names a patch."""
        where = self.source or "config"
        unknown = sorted(k for k, _ in self.loose if k not in set(claimed))
        if unknown:
            known = ", ".join(sorted({*ENGINE_KEYS - {"patches"}, *claimed}))
            raise FatalError(f"config {where}: unknown key {unknown[0]!r} (known keys: {known}); nothing was changed")
        names = set(patches)
        stray = sorted(name for name, _ in self.tables if name not in names)
        if stray:
            raise FatalError(
                f"config {where}: [patches.{stray[0]}] names no patch (known: "
                f"{', '.join(sorted(names))}); nothing was changed"
            )


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
            raise FatalError(
                f"config {path} is not a regular file; point SENPI_GUARD_CONFIG at a TOML file, or unset it"
            )
        if (problem := made.foreign(path.parent)) is not None:  # (as root: a config another user could write)
            raise FatalError(made.foreign_text(path, problem))
        raw = reader.read(path, reader.CONFIG)  # (a FIFO swapped in since the stat is refused, not waited on)
    except FileNotFoundError:
        if named:
            raise FatalError(
                f"the config file {path} (named by --config or SENPI_GUARD_CONFIG) does not "
                "exist; create it, or leave it out for the default one"
            ) from None
        return Config()
    except OSError as exc:
        raise FatalError(f"cannot read config {path}: {exc.strerror}; fix its permissions") from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise FatalError(f"config {path} is not valid TOML ({exc}); fix or delete it") from exc
    except RecursionError as exc:  # (tomllib parses nested arrays and tables recursively)
        raise FatalError(
            f"config {path} nests arrays or tables too deeply to read; senpi-guard's "
            "settings nest at most two levels: fix or delete it"
        ) from exc
    return _validate(data, path)


def _validate(data: dict, path: Path) -> Config:
    def bad(what: str) -> FatalError:
        return FatalError(f"config {path}: {what}; nothing was changed")

    drift = data.get("on_drift", "report")
    if drift not in DRIFT_MODES:
        raise bad(f'\'on_drift\' is {drift!r}; use "report" or "rebuild"')
    layers = data.get("layers", list(LAYERS))
    if (
        not isinstance(layers, list)
        or not layers
        or not all(layer in LAYERS for layer in layers)
        or len(set(layers)) != len(layers)
    ):
        raise bad(
            f'\'layers\' is {layers!r}; use a non-empty list of "dist" and "extension", '
            'e.g. layers = ["dist", "extension"]'
        )
    numbers = {}
    for key in RANGES:
        problem = number_problem(key, data.get(key, getattr(Config, key)))
        if problem:
            raise bad(problem)
        numbers[key] = float(data.get(key, getattr(Config, key)))
    tables = data.get("patches", {})
    if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
        raise bad("'patches' must hold one table per patch, e.g. [patches.directive-dedupe]")
    loose = {k: v for k, v in data.items() if k not in ENGINE_KEYS}
    try:
        flat = {name: _flat(t) for name, t in tables.items()}
    except ValueError as exc:
        raise bad(f"'{exc}' is given twice (as a quoted key and in a sub-table); keep one") from None
    return Config(
        on_drift=drift,
        layers=tuple(layers),
        source=path,
        tables=tuple(sorted((name, _frozen(t)) for name, t in flat.items())),
        loose=_frozen(loose),
        **numbers,
    )


def in_range(value: object, low: float, high: float, whole: bool = False) -> bool:
    """A number (not a bool; a whole one when `whole`: 3 or 1e9, not 1.5) from low to high; nan and
    inf never are."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return False
    if not low <= value <= high:
        return False
    return not whole or isinstance(value, int) or value.is_integer()


def out_of_range(name: str, value: object, low: float, high: float, whole: bool = False, also: str = "") -> str | None:
    """The one check of every numeric setting (the config's and patches', an option's, an
    environment variable's): why `value` is no good for `name` (None when it is): a number, finite,
    from `low` to `high`, whole where it must be (`also`: what else is taken, said after the range)."""
    if in_range(value, low, high, whole):
        return None
    what = "a whole number" if whole else "a number"
    return f"{name} must be {what} from {_figure(low)} to {_figure(high)}{also}, got {value!r}"


def _figure(x: float) -> str:
    return f"{int(x):,}" if x == int(x) else f"{x:g}"


def number_problem(key: str, value: object) -> str | None:
    """Why `value` is no good for the numeric setting `key` (None when it is)."""
    return out_of_range(f"'{key}'", value, *RANGES[key], whole=key in WHOLE)
