"""The layers' unit tests' shared fixtures (what they share besides: tests/layerkit.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from layerkit import dedupe, sample_install

from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.io.store import Store


@pytest.fixture
def patch() -> Patch:
    return dedupe()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "data", tmp_path / "state")


@pytest.fixture
def install(tmp_path: Path) -> Install:
    return sample_install(tmp_path / "senpi")
