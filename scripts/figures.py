"""Measure the figures a patch ships (src/senpi_guard/layers/figures.py) and write them to
patches/<name>/figures.json: the dist layer's on one real senpi per compiled shape, the extension's
through its replay. Run it after a change of a headline fixture or of the patch's code (the tests
that measure them again say when):

    .venv/bin/python scripts/figures.py PKG_DIR [PKG_DIR ...]

Each PKG_DIR is an installed real senpi (its package.json's folder), one per shape; the release
measured is named beside its figures. Writes nothing of senpi-guard's state but a throw-away store."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from senpi_guard import discover
from senpi_guard.core.patch import definition
from senpi_guard.io import config as config_mod
from senpi_guard.io.store import Store
from senpi_guard.layers import figures, pipeline


def main(roots: list[str]) -> int:
    config = config_mod.Config()
    patch = definition.load("directive-dedupe")
    with tempfile.TemporaryDirectory(prefix="senpi-guard-figures-") as temp:
        store = Store(Path(temp) / "data", Path(temp) / "state")
        flow = pipeline.build([patch], config, store)
        reconciler = flow.dists[patch.name].reconciler
        dist = {}
        for root in roots:
            install = discover.describe(Path(root).resolve())
            if install is None:
                print(f"{root}: not a senpi package", file=sys.stderr)
                return 1
            shape, measured = figures.measure_dist(reconciler, install)
            dist[shape] = {"measured_on": install.version, "figures": measured}
            print(f"{shape}: measured on senpi {install.version}")
        data = {
            "stamp": figures.stamp(patch, config),
            "dist": dict(sorted(dist.items())),
            "extension": figures.measure_extension(patch, config, store),
        }
    (patch.root / figures.FILE).write_text(json.dumps(data, indent=1) + "\n", "utf-8")
    print(f"wrote {patch.root / figures.FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
