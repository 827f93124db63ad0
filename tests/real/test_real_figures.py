"""The dist layer's figures the patch ships (layers/figures.py: what `status` says a patch saves
before anything was replayed on that install) are what a replay measures now on the real senpi each
was measured on, one per compiled shape, with node 24 (senpi's own engine)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import add_path
from realsenpi import FULL_VERSION, node24_bin, senpi_guard

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


def test_the_readmes_status_example_and_dollars_are_what_status_says_on_the_full_package(unpacked, monkeypatch):
    """What the README shows `status` saying on a fresh 2026.8.22-2 (node 24 first on PATH) is what
    it says at 80 columns: the shipped figures, priced at that package's own model registry."""
    add_path(monkeypatch, node24_bin())
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    example = readme[readme.index("`status` on a fresh senpi 2026.8.22-2:") :].split("```")[1]
    said = senpi_guard("status", "--root", unpacked[FULL_VERSION], env={"COLUMNS": "80"})
    assert said.returncode == 1, said.stdout + said.stderr  # (not patched: not as wanted)
    shown = [line for line in said.stdout.splitlines() if line.startswith("  saves")]
    at = said.stdout.splitlines().index(shown[0])
    assert said.stdout.splitlines()[at : at + 3] == example.splitlines()[3:6], said.stdout
    assert "  node  " not in said.stdout  # (node 24: nothing to say of it without -v)
    price = re.search(r"Claude: (\$[\d.]+) -> (\$[\d.]+) a call", shown[0])
    assert f"({price[1]} → {price[2]} at claude-opus-4-5 list price)" in " ".join(readme.split())
