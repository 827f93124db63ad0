"""Whether senpi loads an exported package's index.js, given its settings entry: the filters of
senpi 2026.8.22-2's package manager (dist/core/package-manager.js: applyPatterns for `extensions`,
applyAutoloadDisabledPatterns for `autoload: false`), checked against what `senpi config` writes
when an item is unticked ("-index.js"), measured on the real build by a hostile pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from senpi_guard.layers.package_filter import loads_check

PKG = Path("/home/me/pkgs/senpi-guard")


@pytest.mark.parametrize(
    ("entry", "loads"),
    [
        ("../pkgs/senpi-guard", True),
        ({"source": "../pkgs/senpi-guard"}, True),
        ({"source": "x", "extensions": []}, False),
        ({"source": "x", "extensions": ["-index.js"]}, False),  # (what `senpi config` writes)
        ({"source": "x", "extensions": ["-./index.js"]}, False),
        ({"source": "x", "extensions": ["!index.js"]}, False),
        ({"source": "x", "extensions": ["!*.js", "+index.js"]}, True),
        ({"source": "x", "extensions": ["index.js"]}, True),
        ({"source": "x", "extensions": ["*.js"]}, True),
        ({"source": "x", "extensions": ["other.js"]}, False),
        ({"source": "x", "extensions": ["**/index.js"]}, True),
        ({"source": "x", "extensions": ["{index,other}.js"]}, True),
        ({"source": "x", "extensions": ["+index.js", "-index.js"]}, False),
        ({"source": "x", "autoload": False}, False),
        ({"source": "x", "autoload": False, "extensions": []}, False),
        ({"source": "x", "autoload": False, "extensions": ["+index.js"]}, True),
        ({"source": "x", "autoload": False, "extensions": ["index.js", "!index.js"]}, False),
        ({"source": "x", "autoload": True}, True),
        ({"source": "x", "extensions": "index.js"}, False),  # (senpi iterates the string: one letter each)
        ({"source": "x", "extensions": ["!!index.js"]}, False),  # (its whole path matches "not index.js")
        ({"source": "x", "extensions": ["index.j{s}"]}, False),  # (one option: no brace expansion)
        ({"source": "x", "extensions": ["#index.js"]}, False),  # (a comment)
        ({"source": "x", "extensions": ["**/senpi-guard/index.js"]}, True),
    ],
)
def test_the_filters_senpi_applies(entry, loads):
    assert loads_check(entry, PKG) is loads


def test_no_wildcard_enters_a_dot_folder():
    """minimatch's default: a `*` or `**` does not match a name that starts with a dot, so a
    package under ~/.senpi is not reached by `**/…` through it (measured on the real senpi)."""
    under_dot = Path("/home/me/.senpi/pkgs/senpi-guard")
    assert loads_check({"source": "x", "extensions": ["**/senpi-guard/index.js"]}, under_dot) is False
    assert loads_check({"source": "x", "extensions": ["**/senpi-guard/index.js"]}, PKG) is True
    assert loads_check({"source": "x", "extensions": ["**/pkgs/senpi-guard/index.js"]}, under_dot) is False
    assert loads_check({"source": "x", "extensions": ["/home/me/*/pkgs/senpi-guard/index.js"]}, under_dot) is False
    assert loads_check({"source": "x", "extensions": ["/home/me/.senpi/*/senpi-guard/index.js"]}, under_dot) is True
