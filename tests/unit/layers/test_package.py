"""package_in: a package of ours found where senpi keeps what an agent dir's settings list (a local
path relative to the agent dir, `npm:` and `git:` installs under it, settings.jsonc first), and
nothing else taken for one."""

import json
from pathlib import Path

import pytest

from senpi_guard.core.patch import definition
from senpi_guard.io import config as config_mod
from senpi_guard.layers import package

PATCH = definition.load("directive-dedupe")


@pytest.fixture
def config():
    return config_mod.load()


def exported(folder: Path, config) -> Path:
    package.export(PATCH, config, folder)
    return folder


def settings(agent: Path, text: str, name: str = "settings.json") -> None:
    agent.mkdir(parents=True, exist_ok=True)
    (agent / name).write_text(text)


@pytest.mark.parametrize(
    ("source", "where"),
    [
        ("../elsewhere/pkg", "elsewhere/pkg"),
        ("npm:senpi-guard-directive-dedupe@12.0.0", "agent/npm/node_modules/senpi-guard-directive-dedupe"),
        ("npm:@me/senpi-guard@1", "agent/npm/node_modules/@me/senpi-guard"),
        ("git:github.com/me/senpi-guard-pkg@v1", "agent/git/github.com/me/senpi-guard-pkg"),
        ("https://github.com/me/senpi-guard-pkg", "agent/git/github.com/me/senpi-guard-pkg"),
    ],
)
def test_found_where_senpi_keeps_each_kind_of_source(tmp_path, config, source, where):
    agent = tmp_path / "agent"
    folder = exported(tmp_path / where, config)
    settings(agent, json.dumps({"packages": ["npm:someone-else", {"source": source}]}))
    found = package.package_in(PATCH, config, agent)
    assert found is not None and (found.path, found.source, found.current) == (folder, source, True)
    assert found.version == PATCH.version


def test_jsonc_comes_first_and_a_listed_file_of_ours_counts(tmp_path, config):
    agent = tmp_path / "agent"
    folder = exported(tmp_path / "pkg", config)
    settings(agent, json.dumps({"packages": []}))
    settings(
        agent,
        '{\n  // mine\n  "packages": [\n    "../pkg/senpi-guard-directive-dedupe.js", /* the file alone */\n  ],\n}\n',
        "settings.jsonc",
    )
    found = package.package_in(PATCH, config, agent)
    assert found is not None and found.path == folder / PATCH.extension.file_name
    assert package.remove_name(found) == str(folder / PATCH.extension.file_name)


def test_nothing_else_is_taken_for_it(tmp_path, config):
    agent = tmp_path / "agent"
    other = tmp_path / "other"
    other.mkdir()
    (other / "package.json").write_text('{"name": "x", "pi": {"extensions": ["./index.js"]}}')
    settings(agent, json.dumps({"packages": ["../other", "../missing", 7, {"no": "source"}]}))
    assert package.package_in(PATCH, config, agent) is None
    settings(agent, "{ not json")
    assert package.package_in(PATCH, config, agent) is None
    assert package.package_in(PATCH, config, tmp_path / "no-agent-dir") is None
