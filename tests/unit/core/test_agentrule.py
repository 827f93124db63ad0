"""The agent-dir rule as read by syntax from a build's dist/config.js and package.json (agentrule),
on small builds written here from the sample package's config.js: what the rule says for the
sample package the layers' tests install, the spellings of the same code that read the same, the
ones refused in one line, package.json as config.js takes it, and the cache that reads a build
again once one of its files changed or went. (agentdir's own tests resolve paths with the rule.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from senpi_guard.core.agentrule import EnvRead, package_json, rule_for
from senpi_guard.demo import sample
from senpi_guard.errors import FatalError

CONFIG = sample.sample_source("config.js")
TEMPLATE = "export const ENV_AGENT_DIR = `${APP_NAME.toUpperCase()}_CODING_AGENT_DIR`;"
# the brand-aware shape (2026.8.11-2 on), cut down to what config.js itself must hold
BRANDED = (
    CONFIG[: CONFIG.index("export function getPackageDir")]
    + 'import { envValue } from "./core/brand.js";\n'
    + 'import { brandProfile } from "./core/BRAND_MODULE";\n'
    + CONFIG[CONFIG.index("export function getPackageDir") : CONFIG.index("export const APP_NAME")].replace(
        "process.env.PI_PACKAGE_DIR", 'envValue("PACKAGE_DIR")'
    )
    + """export const BRAND = brandProfile();
export const CONFIG_DIR_NAME = BRAND?.configDir || pkg.piConfig?.configDir || ".pi";
export function resolveAgentDir(where, home, fromEnv) {
    if (fromEnv) {
        return normalizePath(fromEnv, { homeDir: home });
    }
    const found = findNearestParentConfigDir(where, home, CONFIG_DIR_NAME, "agent");
    return found ? join(found, "agent") : join(home, CONFIG_DIR_NAME, "agent");
}
export function getAgentDir() {
    return resolveAgentDir(process.cwd(), homedir(), envValue("CODING_AGENT_DIR"));
}
"""
)


def build(root: Path, config: str = CONFIG, manifest: str | None = None) -> Path:
    """A package dir holding `config` as dist/config.js and the sample's package.json (or `manifest`)."""
    (root / "dist").mkdir(parents=True, exist_ok=True)
    (root / "dist" / "config.js").write_text(config)
    data = {"name": "@code-yeongyu/senpi", "piConfig": {"name": "senpi", "configDir": ".senpi"}}
    (root / "package.json").write_text(json.dumps(data) if manifest is None else manifest)
    return root


def test_the_sample_package_reads_as_the_project_lookup_shape_of_senpi(tmp_path):
    sample.write_sample_package(tmp_path / "senpi", 3, fillers=0)
    rule = rule_for(tmp_path / "senpi")
    assert rule.shape == "project-lookup" and rule.brand is None and rule.flat_layout_sentinel is None
    assert rule.agent_dir_env == EnvRead("app-name", "_CODING_AGENT_DIR", "pi")
    assert rule.package_dir_env == EnvRead("fixed", "PI_PACKAGE_DIR")
    assert (rule.app_name, rule.config_dir, rule.config_dir_fallback) == ("senpi", ".senpi", ".pi")
    assert rule.package_dir == tmp_path / "senpi"


@pytest.mark.parametrize(
    ("change", "read"),
    [
        # the variable named directly
        (("process.env[ENV_AGENT_DIR]", "process.env.MY_AGENT_DIR"), EnvRead("fixed", "MY_AGENT_DIR")),
        # its name's template spelled inline
        (
            ("process.env[ENV_AGENT_DIR]", "process.env[`${APP_NAME.toUpperCase()}_CODING_AGENT_DIR`]"),
            EnvRead("app-name", "_CODING_AGENT_DIR", "pi"),
        ),
        # APP_NAME's fallback given by a top-level constant
        (
            ('piConfigName || "pi";', 'piConfigName || FALLBACK;\nexport const FALLBACK = "tau";'),
            EnvRead("app-name", "_CODING_AGENT_DIR", "tau"),
        ),
    ],
)
def test_spellings_of_the_same_code_read_as_the_same_rule(tmp_path, change, read):
    rule = rule_for(build(tmp_path, CONFIG.replace(*change)))
    assert rule.agent_dir_env == read and rule.shape == "project-lookup"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ((TEMPLATE, 'export const ENV_AGENT_DIR = "X_AGENT_DIR";'), "the variable's name as"),
        (('import { homedir } from "node:os";', 'import { homedir as home } from "node:os";'), "`homedir` imported"),
        (('piConfigName || "pi";', "piConfigName || pick();"), "APP_NAME's fallback as a string literal"),
        (("const piConfigName = pkg.piConfig?.name;", "const piConfigName = pkg.name;"), "piConfigName from"),
        (("let pkg = {};", "let pkg = { piConfig: {} };"), "pkg = {}, then read from package.json"),
    ],
)
def test_other_code_is_refused_in_one_line_naming_the_file(tmp_path, change, expected):
    with pytest.raises(FatalError) as caught:
        rule_for(build(tmp_path, CONFIG.replace(*change)))
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'dist' / 'config.js'}: cannot tell where this senpi looks")
    assert expected in message and "\n" not in message and message.endswith("report it with this file")


def test_a_brand_aware_build_takes_its_brand_functions_from_one_module(tmp_path):
    mixed = build(tmp_path, BRANDED.replace("BRAND_MODULE", "elsewhere.js"))
    with pytest.raises(FatalError, match="expected `brandProfile` imported from senpi brand module"):
        rule_for(mixed)
    same = build(tmp_path / "same", BRANDED.replace("BRAND_MODULE", "brand.js"))
    with pytest.raises(FatalError, match=r"core/brand\.js: cannot read it"):  # (read next: this build has none)
        rule_for(same)


@pytest.mark.parametrize(
    ("manifest", "found"),
    [
        ('{"piConfig": {"name": "tau", "configDir": ".tau"}}', ("tau", ".tau")),
        ('{"piConfig": {"name": "", "configDir": ""}}', (None, None)),  # ("" || fallback)
        ('{"piConfig": "senpi"}', (None, None)),
        ('["not", "an", "object"]', (None, None)),
        ("{}", (None, None)),
    ],
)
def test_package_json_is_taken_as_config_js_takes_it(tmp_path, manifest, found):
    (tmp_path / "package.json").write_text(manifest)
    assert package_json(tmp_path / "package.json") == found


def test_a_missing_package_json_counts_as_empty_and_an_unreadable_one_is_refused(tmp_path):
    assert package_json(tmp_path / "package.json") == (None, None)
    for text, said in [
        ("{not json", "unreadable"),
        ('{"size": NaN}', "unreadable"),  # (JSON.parse knows no NaN)
        ("null", "no object with string piConfig.name/configDir"),
        ('{"piConfig": {"configDir": ["a"]}}', "no object with string piConfig.name/configDir"),
    ]:
        (tmp_path / "package.json").write_text(text)
        with pytest.raises(FatalError, match=said):
            package_json(tmp_path / "package.json")


def test_the_rule_is_read_again_once_package_json_went_and_cached_by_its_absolute_path(tmp_path, monkeypatch):
    root = build(tmp_path / "senpi")
    first = rule_for(root)
    monkeypatch.chdir(tmp_path)
    assert rule_for(Path("senpi")) is first  # (the same build, spelled relatively)
    (root / "package.json").unlink()
    again = rule_for(root)
    assert again is not first and (again.app_name, again.config_dir) == (None, None)
    assert rule_for(root) is again
