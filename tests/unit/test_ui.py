"""Sizes in SI units (1 kB = 1,000 B), said the same way by the CLI (ui.size) and by the extension
inside senpi (__senpiGuardSI, run here in the real node on the rendered extension)."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import HANG_S

from senpi_guard import ui
from senpi_guard.core.patch import definition
from senpi_guard.io.config import Config

CASES = {
    0: "0 B",
    999: "999 B",
    1000: "1.0 kB",
    1049: "1.0 kB",
    1050: "1.1 kB",
    9950: "10.0 kB",
    99_949: "99.9 kB",
    99_950: "100 kB",
    198_569: "199 kB",
    380_730: "381 kB",  # (the footer said "372 KB": 380,730 / 1024)
    999_499: "999 kB",
    999_500: "1.0 MB",
    1_789_022: "1.8 MB",
    99_950_000: "100 MB",
    2_500_000_000_000: "2.5 TB",
    5 * 10**15: "5,000 TB",
}


@pytest.mark.parametrize(("n", "text"), CASES.items())
def test_python_says_sizes_in_si_units(n, text):
    assert ui.size(n) == text


def test_the_extension_says_them_exactly_as_python_does(tmp_path):
    path = tmp_path / "ext.js"
    path.write_text(definition.load("directive-dedupe").render_extension(Config()), "utf-8")
    edges = (10**k + d for k in range(3, 13) for d in (-501, -500, -1, 0, 499))
    numbers = [*CASES, *range(0, 2_000_000, 4_999), *edges]
    script = (
        f"const {{ __senpiGuardSI }} = await import({json.dumps(path.as_uri())});"
        f"console.log(JSON.stringify({json.dumps(numbers)}.map(__senpiGuardSI)));"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=HANG_S, check=True
    )
    assert json.loads(out.stdout) == [ui.size(n) for n in numbers]
