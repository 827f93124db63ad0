"""The watcher's round: every patch's dist layer before any extension's re-proof (senpi's loader
takes seconds), each extension still after its own patch's dist layer."""

from __future__ import annotations

from senpi_guard.core.patch import definition
from senpi_guard.io import config
from senpi_guard.layers import pipeline


def test_dist_layers_first_then_the_extensions_each_after_its_own_dist_layer():
    flow = pipeline.build(definition.load_all(), config.load())
    order = [(layer.name, layer.patch.name) for layer in flow.keep_order()]
    assert sorted(order) == sorted((layer.name, layer.patch.name) for layer in flow.layers)
    names = [name for name, _ in order]
    assert "extension" in names and names.count("dist") >= 2  # (else this proves nothing)
    assert names == sorted(names, key=lambda name: name != "dist")
    dists = [patch for name, patch in order if name == "dist"]
    assert dists == [layer.patch.name for layer in flow.layers if layer.name == "dist"]  # write order kept
    for index, (name, patch) in enumerate(order):
        if name == "extension":
            assert ("dist", patch) in order[:index]
