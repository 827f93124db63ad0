"""A patch's settings drive what is rendered, what a replay's job says and how a change is told,
by what its patch.toml declares: a patch whose names are not directive-dedupe's gets the same
treatment under its own names, and none of directive-dedupe's appear."""

from __future__ import annotations

from pathlib import Path

import pytest

from senpi_guard.core.patch import definition, reshape
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config

PATCH_TOML = """name = "labels"
version = 1
payload = "payload.js"
marker = "[{tag} again]"
max_marker_bytes = 40
edits = ["wrap"]

[settings.labels]
kind = "tags"
default = ["alpha", "beta"]
known = ["alpha", "beta", "gamma"]
words = ["every"]
known_as = "named"
events = ["delta"]
events_as = "news"
word_means = "{count} named, others from {least} bytes"
render = true
reshapes = true

[settings.least]
kind = "number"
default = 10
min = 1
max = 1000
whole = true
render = true
reshapes = true
when = { setting = "labels", value = "every" }
job_as = "leastBytes"

[[targets]]
role = "main"
function = "f"
required = true
wrap = "__labels({expr})"
"""


@pytest.fixture
def patch(tmp_path: Path) -> definition.Patch:
    folder = tmp_path / "labels"
    folder.mkdir()
    (folder / "patch.toml").write_text(PATCH_TOML)
    (folder / "payload.js").write_text("const c = /*senpi-guard:config*/{}/*senpi-guard:config-end*/;\n")
    (folder / "checks.mjs").write_text("export const checks = [];\n")
    return definition.load("labels", folder)


def test_a_word_renders_its_known_tags_under_the_patchs_own_key(patch):
    every = Config().with_patch("labels", labels="every", least=25)
    assert patch.rendered(every) == {
        "labels": "every",
        "named": ["alpha", "beta", "gamma"],
        "news": ["delta"],
        "least": 25,
    }
    assert patch.rendered(Config()) == {"labels": ["alpha", "beta"]}  # (least: only with "every")


def test_a_replays_job_gets_the_list_and_the_declared_names(patch):
    job = patch.job_settings(Config().with_patch("labels", labels="every", least=25))
    assert job["labels"] == ["alpha", "beta", "gamma"] and job["leastBytes"] == 25 and job["maxMarkerBytes"] == 40
    assert not {"tags", "known", "autoMinBytes", "min_bytes"} & set(job)
    assert "leastBytes" not in patch.job_settings(Config())


def test_a_change_is_told_in_the_patchs_own_words(patch):
    old = patch.rendered(Config())
    said = reshape.change(patch, old, Config().with_patch("labels", labels="every", least=25))
    assert (
        said == "labels alpha, beta -> every (3 named, others from 25 bytes); least None -> 25; news None -> ['delta']"
    )
    assert (
        reshape.change(patch, old, Config().with_patch("labels", labels=["beta", "gamma"])) == "labels +gamma, -alpha"
    )
    assert reshape.change(patch, {"labels": "everything"}, Config()) is None  # (not a word it has)


def test_a_word_that_now_leaves_event_tags_alone_is_told_as_a_change(patch):
    every = Config().with_patch("labels", labels="every", least=25)
    before = {k: v for k, v in patch.rendered(every).items() if k != "news"}  # (rendered before `events`)
    assert reshape.change(patch, before, every) == "news None -> ['delta']"
    assert reshape.change(patch, patch.rendered(every), every) is None


def test_a_bad_list_is_told_with_the_patchs_own_example(patch):
    with pytest.raises(FatalError, match=r'labels = \["alpha"\] or "every"'):
        patch.settings(Config().with_patch("labels", labels=5))
