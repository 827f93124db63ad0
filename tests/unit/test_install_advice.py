"""No text of the project tells users to install senpi-guard by a bare name from a package index
(issue 46, item 8): no release exists under that name, and anyone could register it. The advice is
one constant (senpi_guard.INSTALL_ADVICE): a clone of the repository and its README's install line."""

from __future__ import annotations

import re
from pathlib import Path

import senpi_guard
from senpi_guard.core.patch import definition
from senpi_guard.io.config import Config
from senpi_guard.layers import package

ROOT = Path(__file__).resolve().parents[2]
SEARCHED = ("README.md", "docs", "integrations", "src", "patches")
TEXT = {".md", ".py", ".js", ".mjs", ".toml", ".json", ".jsonc", ".txt", ".yml", ".yaml", ".sh", ".cfg", ""}
BY_NAME = re.compile(r"\b(?:pipx install|pip install|uv tool install)\s+(?:--?\S+\s+)*['\"]?senpi-guard\b", re.I)


def _texts() -> list[Path]:
    found = []
    for name in SEARCHED:
        top = ROOT / name
        for path in [top] if top.is_file() else sorted(top.rglob("*")):
            if path.is_file() and path.suffix in TEXT and "__pycache__" not in path.parts:
                found.append(path)
    return found


def test_no_text_installs_senpi_guard_by_a_bare_name_from_an_index():
    texts = _texts()
    assert len(texts) > 50, texts  # (the folders are there: a moved tree would pass vacuously)
    said = [
        f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}: {m[0]}"
        for path in texts
        for text in [path.read_text("utf-8", "replace")]
        for m in BY_NAME.finditer(text)
    ]
    assert not said, "install advice by a bare name from an index:\n" + "\n".join(said)


def test_the_pattern_finds_each_form():
    for line in (
        "pipx install senpi-guard",
        "pip install senpi-guard",
        "uv tool install senpi-guard",
        "PIPX INSTALL --force senpi-guard",
    ):
        assert BY_NAME.search(line), line
    assert not BY_NAME.search("pipx install .  # from a clone of senpi-guard")


def test_the_exported_package_gives_the_one_advice():
    patch = definition.load("directive-dedupe")
    index = package.files(patch, Config())[package.CHECK].decode()
    assert senpi_guard.INSTALL_ADVICE in index and not BY_NAME.search(index)
    assert "a clone of senpi-guard's repository" in senpi_guard.INSTALL_ADVICE
