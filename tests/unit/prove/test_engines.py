"""A node older than the install's `engines.node`: the ranges npm reads, read the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from senpi_guard.prove import engines
from senpi_guard.prove.nodes import Node


def package(tmp_path: Path, manifest: dict) -> Path:
    folder = tmp_path / "senpi"
    folder.mkdir(exist_ok=True)
    (folder / "package.json").write_text(json.dumps({"name": "@code-yeongyu/senpi", **manifest}))
    return folder


def problem(tmp_path: Path, wanted, version: str, source: str = "PATH") -> str | None:
    folder = package(tmp_path, {"version": "2026.8.22-2", "engines": {"node": wanted}})
    return engines.node_problem(folder, Node("/usr/bin/node", version, source))


@pytest.mark.parametrize(
    ("wanted", "allowed", "refused"),
    [
        (">=24", ["v24.0.0", "v25.1.2"], ["v20.19.0", "v23.99.99"]),
        (">=22.0.0", ["v22.0.0", "v24.22.3"], ["v21.7.3", "v20.20.2"]),
        (">= 22.1", ["v22.1.0"], ["v22.0.9"]),
        ("^20 || >=22", ["v20.0.0", "v20.99.1", "v22.0.0"], ["v18.20.0", "v21.0.0"]),
        ("^20.10.0 || ^22.2", ["v20.10.0", "v22.9.0"], ["v20.9.9", "v21.0.0", "v22.1.0", "v23.0.0"]),
        ("^0.10.2", ["v0.10.9"], ["v0.11.0", "v0.10.1"]),
        ("^0.0.3", ["v0.0.3"], ["v0.0.4"]),
        ("~22.3", ["v22.3.9"], ["v22.4.0", "v22.2.0"]),
        ("~22", ["v22.9.0"], ["v23.0.0"]),
        ("22.x", ["v22.0.0", "v22.5.1"], ["v21.9.9", "v23.0.0"]),
        ("22", ["v22.5.1"], ["v23.0.0"]),
        ("=22.1.2", ["v22.1.2"], ["v22.1.3"]),
        (">18 <23", ["v19.0.0", "v22.9.9"], ["v18.20.0", "v23.0.0"]),
        ("<=22", ["v22.9.9"], ["v23.0.0"]),
        ("20.1 - 22", ["v20.1.0", "v22.9.9"], ["v20.0.9", "v23.0.0"]),
        ("*", ["v0.0.1", "v24.0.0"], []),
        ("", ["v24.0.0"], []),
        (">=24.0.0-rc.1", ["v24.0.0"], ["v23.9.9"]),
    ],
)
def test_ranges_as_npm_reads_them(tmp_path, wanted, allowed, refused):
    assert [v for v in allowed if problem(tmp_path, wanted, v)] == []
    assert [v for v in refused if not problem(tmp_path, wanted, v)] == []


def test_the_line_names_the_node_the_need_and_what_to_do(tmp_path):
    assert problem(tmp_path, ">=24.0.0", "v20.20.2") == (
        "v20.20.2 is older than senpi 2026.8.22-2 needs (>=24.0.0); put node 24 first on PATH or set SENPI_GUARD_NODE"
    )
    assert problem(tmp_path, "^20 || >=22", "v18.1.0").startswith("v18.1.0 is older than senpi 2026.8.22-2 needs")
    assert "put node 20 first" in problem(tmp_path, "^20 || >=22", "v18.1.0")
    assert problem(tmp_path, "<22", "v24.1.0", "$SENPI_GUARD_NODE") == (
        "v24.1.0 is not a node senpi 2026.8.22-2 supports (<22); point SENPI_GUARD_NODE at a node it supports"
    )
    assert problem(tmp_path, ">=24", "v20.1.0", "$SENPI_GUARD_NODE").endswith("; point SENPI_GUARD_NODE at node 24")


@pytest.mark.parametrize(
    "manifest",
    [
        {"version": "1"},
        {"version": "1", "engines": "node >= 24"},
        {"version": "1", "engines": {"npm": ">=10"}},
        {"version": "1", "engines": {"node": ["24"]}},
        {"version": "1", "engines": {"node": "node twenty-four"}},
    ],
)
def test_nothing_readable_asked_is_no_problem(tmp_path, manifest):
    folder = package(tmp_path, manifest)
    assert engines.node_problem(folder, Node("/usr/bin/node", "v20.20.2", "PATH")) is None


def test_no_package_json_or_one_that_is_not_a_file_is_no_problem(tmp_path):
    assert engines.node_problem(tmp_path, Node("/usr/bin/node", "v20.20.2", "PATH")) is None
    (tmp_path / "package.json").mkdir()
    assert engines.node_problem(tmp_path, Node("/usr/bin/node", "v20.20.2", "PATH")) is None
