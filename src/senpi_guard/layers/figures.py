"""The figures a patch ships: what it saves on its own sample sessions, so that `status` answers "do I
need this?" on its first run, before anything was replayed here.

- The dist layer's, per compiled shape (the headline fixtures' replay stats, as `verify` records
  them), measured on a real senpi of that shape.
- The extension layer's: the text bytes of each headline session before and after the extension,
  which is what a provider that gets the whole context on every call is sent (its output does not
  depend on the senpi it runs in).

They hold for the settings and the patch version they were measured with (the defaults): with
other settings there is no shipped figure (`verify` measures); a change of a fixture or of the
patch's code fails the tests that measure them again until the file is written anew. `scripts/figures.py`
writes `patches/<name>/figures.json`; the tests measure them again and compare."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io import reader
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import extension_replay
from senpi_guard.layers.dist import Reconciler

FILE = "figures.json"


def stamp(patch: Patch, config: Config) -> str:
    """What the figures were measured with: this patch's version and rendered settings."""
    return patch.patch_id(config)


def shipped(patch: Patch, config: Config) -> dict[str, Any]:
    """The patch's figures file, when it was measured with this patch and `config`'s settings ({}
    otherwise: no figure is better than another patch's)."""
    data = _read(patch.root / FILE)
    return data if data.get("stamp") == stamp(patch, config) else {}


@functools.cache
def _read(path: Path) -> dict[str, Any]:
    """A figures file, parsed once a run (it ships with senpi-guard); {} when missing or unreadable."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(reader.own_data(path))
    except (FatalError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def for_shape(patch: Patch, config: Config, shape: str | None) -> tuple[dict[str, Any], str] | None:
    """The dist layer's shipped figures for a compiled shape, and the release they were measured on."""
    entry = shipped(patch, config).get("dist", {}).get(shape or "")
    if not isinstance(entry, dict) or not isinstance(entry.get("figures"), dict):
        return None
    return entry["figures"], str(entry.get("measured_on", ""))


def extension_sizes(patch: Patch, config: Config) -> dict[str, dict[str, int]]:
    sizes = shipped(patch, config).get("extension", {})
    return sizes if isinstance(sizes, dict) else {}


def measure_dist(reconciler: Reconciler, install: Install) -> tuple[str, dict[str, Any]]:
    """One install's shape and its headline figures, replayed with node (what `verify` records)."""
    insp = reconciler.inspect(install, held=False)
    if insp.shape is None:
        raise FatalError(f"senpi {install.version} at {install.package_dir}: no known shape ({insp.detail})")
    report = reconciler.replay(install, reconciler.module_pairs(insp))
    if not report.ok:
        raise FatalError(f"senpi {install.version}: the replay failed: {report.failures[:1]}")
    return insp.shape.range, reconciler.headline_figures(report)


def measure_extension(patch: Patch, config: Config, store: Store) -> dict[str, dict[str, int]]:
    """The headline sessions' text bytes before and after the extension, replayed with node."""
    headline = [f for f in patch.fixtures() if f["name"] in patch.headline]
    report = extension_replay.measure(patch, config, store, headline)
    if not report.ok:
        raise FatalError(f"the extension's replay failed: {report.failures[:1]}")
    return report.stats["sizes"]
