"""The dist layer's figures the patch ships (layers/figures.py: what `status` says a patch saves
before anything was replayed on that install) are what a replay measures now on the real senpi each
was measured on, one per compiled shape, with node 24 (senpi's own engine)."""

from __future__ import annotations

import pytest
from conftest import add_path
from realsenpi import node24_bin

from senpi_guard import discover
from senpi_guard.core.patch import definition
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import figures, pipeline

pytestmark = pytest.mark.real

PATCH = definition.load("directive-dedupe")
SHIPPED = figures.shipped(PATCH, Config()).get("dist", {})


@pytest.mark.parametrize("shape", sorted(SHIPPED))
def test_the_shipped_figures_are_what_a_replay_measures_on_that_release(shape, unpacked, tmp_path, monkeypatch):
    add_path(monkeypatch, node24_bin())
    entry = SHIPPED[shape]
    install = discover.describe(unpacked[entry["measured_on"]])
    assert install is not None and install.version == entry["measured_on"]
    store = Store(tmp_path / "data", tmp_path / "state")
    reconciler = pipeline.build([PATCH], Config(), store).dists[PATCH.name].reconciler
    measured_shape, measured = figures.measure_dist(reconciler, install)
    assert measured_shape == shape
    assert measured == entry["figures"], "the figures changed: run scripts/figures.py (its docstring says how)"
