"""The figures a patch ships (layers/figures.py): the extension's are what its replay measures now,
with node; every compiled shape the patch knows has the dist layer's (measured on a real senpi of
that shape by the real tier: tests/real/test_real_figures.py); and they are offered only for the
settings and patch version they were measured with."""

from __future__ import annotations

from senpi_guard.core.patch import definition
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import figures

PATCH = definition.load("directive-dedupe")


def test_the_shipped_extension_figures_are_what_its_replay_measures(tmp_path):
    store = Store(tmp_path / "data", tmp_path / "state")
    measured = figures.measure_extension(PATCH, Config(), store)
    assert set(measured) == set(PATCH.headline)
    assert measured == figures.extension_sizes(PATCH, Config())
    for sizes in measured.values():
        assert 0 < sizes["after"] < sizes["before"]  # (the sessions repeat their directives: it saves)


def test_every_known_shape_has_the_dist_layers_figures():
    shipped = figures.shipped(PATCH, Config())
    assert set(shipped["dist"]) == {shape.range for shape in PATCH.shapes}
    for shape in PATCH.shapes:
        found, release = figures.for_shape(PATCH, Config(), shape.range)
        assert release and set(found) == set(PATCH.headline)


def test_no_figure_for_other_settings_or_an_unknown_shape():
    other = Config().with_patch(PATCH.name, tags=["ultrawork-mode"])
    assert figures.shipped(PATCH, other) == {} and figures.extension_sizes(PATCH, other) == {}
    assert figures.for_shape(PATCH, other, PATCH.shapes[0].range) is None
    assert figures.for_shape(PATCH, Config(), "2099.1.1 and later") is None
