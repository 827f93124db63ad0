"""The agent-dir rule read by syntax from small builds written here (our own code, in the syntax
shapes of senpi's compiled dist/config.js and dist/core/brand.js), refusals of every other shape,
and properties of resolve() against an independent pathlib oracle. Pure Python: no node."""

from __future__ import annotations

import json
import os
import posixpath
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from senpi_guard.core import agentdir
from senpi_guard.core.agentdir import Brand, EnvRead, Resolved, resolve
from senpi_guard.demo import sample
from senpi_guard.errors import FatalError

# the lookup shape (2026.7.28 - 2026.8.11) is the sample packages' own config.js; the brand-aware
# one below is built from its parts
LOOKUP = sample.sample_source("config.js")
IMPORTS = LOOKUP[LOOKUP.index("import ") : LOOKUP.index("export function getPackageDir")]
PACKAGE = LOOKUP[LOOKUP.index("export function getPackageDir") : LOOKUP.index("export const APP_NAME")].replace(
    "process.env.PI_PACKAGE_DIR", "OVERRIDE"
)
BRANDED = (
    IMPORTS
    + 'import { brandProfile, envValue } from "./core/brand.js";\n'
    + PACKAGE.replace("OVERRIDE", 'envValue("PACKAGE_DIR")')
    + """
export const BRAND = brandProfile();
export const APP_NAME = BRAND?.name || piConfigName || "pi";
export const CONFIG_DIR_NAME = BRAND?.configDir || pkg.piConfig?.configDir || ".pi";
export const CONFIG_FLAT_LAYOUT = BRAND?.flatLayout === true;
export const FLAT_LAYOUT_SENTINEL = "settings.json";
export function resolveAgentDir(cwd, homeDir, envDir) {
    if (envDir) {
        return normalizePath(envDir, { homeDir });
    }
    if (CONFIG_FLAT_LAYOUT) {
        const flat = findNearestParentConfigDir(cwd, homeDir, CONFIG_DIR_NAME, undefined, FLAT_LAYOUT_SENTINEL);
        return flat ?? join(homeDir, CONFIG_DIR_NAME);
    }
    const found = findNearestParentConfigDir(cwd, homeDir, CONFIG_DIR_NAME, "agent");
    return found ? join(found, "agent") : join(homeDir, CONFIG_DIR_NAME, "agent");
}
export function getAgentDir() {
    return resolveAgentDir(process.cwd(), homedir(), envValue("CODING_AGENT_DIR"));
}
"""
)
BRAND_JS = """export const BRAND_ENV_VAR = "SENPI_BRAND";
function isSafeConfigDirName(dir) {
    return dir !== "." && dir !== ".." && !/[\\\\/]/.test(dir);
}
function readString(from, key) {
    const v = from[key];
    return typeof v === "string" && v.trim() ? v.trim() : undefined;
}
export function parseBrandProfile(text) {
    if (!text?.trim())
        return undefined;
    let value;
    try {
        value = JSON.parse(text);
    }
    catch {
        console.error("bad brand");
        return undefined;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
        console.error("bad brand");
        return undefined;
    }
    const from = value;
    const name = readString(from, "name");
    if (!name) {
        console.error("no name");
        return undefined;
    }
    const configDir = readString(from, "configDir") || `.${name}`;
    if (!isSafeConfigDirName(configDir)) {
        console.error("unsafe");
        return undefined;
    }
    return {
        envPrefix: (readString(from, "envPrefix") || name).toUpperCase(),
        name,
        extra: 1,
        flatLayout: from.flatLayout === true,
        configDir,
    };
}
export function consumeBrandProfile(env = process.env) {
    return parseBrandProfile(env[BRAND_ENV_VAR]);
}
const LEGACY_ENV_PREFIXES = ["SENPI", "PI"];
let cached;
let done = false;
export function brandProfile() {
    if (!done) {
        cached = consumeBrandProfile();
        done = true;
    }
    return cached;
}
export function brandEnvNames(suffix, profile = brandProfile()) {
    const all = [profile?.envPrefix, ...LEGACY_ENV_PREFIXES].filter((p) => typeof p === "string" && p.length > 0);
    return [...new Set(all)].map((p) => `${p}_${suffix}`);
}
export function envValue(suffix, env = process.env) {
    for (const name of brandEnvNames(suffix)) {
        const value = env[name];
        if (value !== undefined)
            return value;
    }
    return undefined;
}
"""
PIPE = {"name": "@code-yeongyu/senpi", "piConfig": {"name": "senpi", "configDir": ".senpi"}}


def write_build(root: Path, config: str, brand: str | None = None, package: object = PIPE) -> Path:
    (root / "dist/core").mkdir(parents=True, exist_ok=True)
    (root / "dist/config.js").write_text(config)
    if brand is not None:
        (root / "dist/core/brand.js").write_text(brand)
    if package is not None:
        (root / "package.json").write_text(json.dumps(package))
    return root


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> dict[str, agentdir.AgentDirRule]:
    base = tmp_path_factory.mktemp("builds")
    return {
        "lookup": agentdir.rule_for(write_build(base / "lookup", LOOKUP)),
        "brand": agentdir.rule_for(write_build(base / "brand", BRANDED, BRAND_JS)),
    }


# ---- reading the rule -------------------------------------------------------------------------


def test_lookup_shape(rules):
    rule = rules["lookup"]
    assert (rule.shape, agentdir.env_names(rule), rule.brand, rule.flat_layout_sentinel) == (
        "project-lookup",
        ("SENPI_CODING_AGENT_DIR",),
        None,
        None,
    )
    assert rule.agent_dir_env == EnvRead("app-name", "_CODING_AGENT_DIR", "pi")
    assert rule.package_dir_env == EnvRead("fixed", "PI_PACKAGE_DIR")
    assert (rule.app_name, rule.config_dir, rule.config_dir_fallback) == ("senpi", ".senpi", ".pi")
    assert rule.project_lookup and rule.expands_tilde
    assert agentdir.agent_dir_variables(rule) == ("SENPI_CODING_AGENT_DIR", "PI_PACKAGE_DIR", "HOME")


def test_brand_shape(rules):
    rule = rules["brand"]
    assert (rule.shape, agentdir.env_names(rule), rule.flat_layout_sentinel) == (
        "brand-aware",
        ("SENPI_CODING_AGENT_DIR", "PI_CODING_AGENT_DIR"),
        "settings.json",
    )
    assert rule.brand == Brand("SENPI_BRAND", ("SENPI", "PI"))
    assert rule.package_dir_env == EnvRead("brand", "PACKAGE_DIR")
    assert agentdir.agent_dir_variables(rule, {"SENPI_BRAND": '{"name": "omo"}'}) == (
        "SENPI_BRAND",
        "OMO_CODING_AGENT_DIR",
        "SENPI_CODING_AGENT_DIR",
        "PI_CODING_AGENT_DIR",
        "OMO_PACKAGE_DIR",
        "SENPI_PACKAGE_DIR",
        "PI_PACKAGE_DIR",
        "HOME",
    )


def test_package_json_without_pi_config_means_pi(tmp_path):
    rule = agentdir.rule_for(write_build(tmp_path, LOOKUP, package={"name": "x"}))
    assert (agentdir.env_names(rule), rule.app_name, rule.config_dir) == (("PI_CODING_AGENT_DIR",), None, None)
    assert resolve(rule, {}, tmp_path, "/h") == Resolved(Path("/h/.pi/agent"), "default", False)


REFUSED = [
    ("getAgentDir() returning resolveAgentDir", LOOKUP.replace("process.env[ENV_AGENT_DIR]);", "x) || y;")),
    ("getAgentDir() returning resolveAgentDir", LOOKUP.replace("process.cwd()", "process.env.PWD")),
    ("resolveAgentDir(cwd, homeDir, envDir) of a known shape", LOOKUP.replace('CONFIG_DIR_NAME, "agent");', "X);")),
    (
        "resolveAgentDir(cwd, homeDir, envDir) of a known shape",
        LOOKUP.replace("normalizePath(fromEnv, { homeDir: home })", "fromEnv"),
    ),
    ("`${APP_NAME.toUpperCase()}_SUFFIX`", LOOKUP.replace("${APP_NAME.toUpperCase()}", "${APP_NAME}")),
    ("`normalizePath` imported from ./utils/paths.js", LOOKUP.replace("./utils/paths.js", "./mine.js")),
    ("`homedir` imported from node:os", LOOKUP.replace('import { homedir } from "node:os";', "")),
    ("a top-level `getAgentDir`", LOOKUP.replace("function getAgentDir", "function agentDir")),
    ("getPackageDir() reading an override variable first", LOOKUP.replace("if (override)", "if (!override)")),
    ("pkg = {}, then read from package.json", LOOKUP.replace('!== "ENOENT"', '!== "EACCES"')),
    ("CONFIG_DIR_NAME from piConfig.configDir", LOOKUP.replace('configDir || ".pi"', 'configDir ?? ".pi"')),
    ("CONFIG_DIR_NAME's fallback as a string literal", LOOKUP.replace('configDir || ".pi"', "configDir || 5")),
]
BRAND_REFUSED = [
    ("envValue() of a known shape", BRAND_JS.replace("value !== undefined", "value")),
    (
        "brandEnvNames() of a known shape",
        BRAND_JS.replace(
            "[profile?.envPrefix, ...LEGACY_ENV_PREFIXES]", "[...LEGACY_ENV_PREFIXES, profile?.envPrefix]"
        ),
    ),
    ("parseBrandProfile() of a known shape", BRAND_JS.replace(".toUpperCase()", ".toLowerCase()")),
    ("parseBrandProfile() of a known shape", BRAND_JS.replace("flatLayout: from.flatLayout === true,", "")),
    ("isSafeConfigDirName() of a known shape", BRAND_JS.replace('dir !== ".." && ', "")),
    ("LEGACY_ENV_PREFIXES as an array of strings", BRAND_JS.replace('["SENPI", "PI"]', "PREFIXES")),
    ("a legacy prefix as a string literal", BRAND_JS.replace('["SENPI", "PI"]', '["SENPI", `PI`]')),
]


@pytest.mark.parametrize(("expected", "source"), REFUSED)
def test_other_shapes_are_refused_in_one_line(tmp_path, expected, source):
    with pytest.raises(FatalError) as caught:
        agentdir.rule_for(write_build(tmp_path, source))
    message = str(caught.value)
    assert "\n" not in message and str(tmp_path / "dist/config.js") in message
    assert f"expected {expected}" in message or expected in message
    assert message.endswith("report it with this file")


@pytest.mark.parametrize(("expected", "source"), BRAND_REFUSED)
def test_other_brand_modules_are_refused(tmp_path, expected, source):
    with pytest.raises(FatalError, match="report it with this file") as caught:
        agentdir.rule_for(write_build(tmp_path, BRANDED, source))
    assert expected in str(caught.value) and str(tmp_path / "dist/core/brand.js") in str(caught.value)


def test_unreadable_files_are_refused(tmp_path):
    with pytest.raises(FatalError, match=r"config\.js: cannot read it"):
        agentdir.rule_for(tmp_path)
    with pytest.raises(FatalError, match=r"brand\.js: cannot read it"):
        agentdir.rule_for(write_build(tmp_path / "b", BRANDED))
    with pytest.raises(FatalError, match=r"not JavaScript senpi-guard can read \(syntax error at line 1"):
        agentdir.rule_for(write_build(tmp_path / "c", "function ("))
    with pytest.raises(FatalError, match="string piConfig"):
        agentdir.rule_for(write_build(tmp_path / "d", LOOKUP, package={"piConfig": {"name": 5}}))


def test_rule_is_cached_until_a_file_changes(tmp_path):
    root = write_build(tmp_path, BRANDED, BRAND_JS)
    first = agentdir.rule_for(root)
    assert agentdir.rule_for(root) is first
    (root / "package.json").write_text(json.dumps({"piConfig": {"name": "tau", "configDir": ".tau"}}))
    second = agentdir.rule_for(root)
    assert second is not first and second.config_dir == ".tau"
    (root / "dist/core/brand.js").write_text(BRAND_JS.replace('"PI"]', '"PI", "TAU"]'))
    assert agentdir.rule_for(root).brand == Brand("SENPI_BRAND", ("SENPI", "PI", "TAU"))


# ---- resolving: examples ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    w = tmp_path_factory.mktemp("world").resolve()
    for d in (
        "home/.senpi/agent",
        "home/p/.senpi/agent",
        "home/p/a/b",
        "home/p/q/.senpi/agent",
        "home/p/q/r",
        "home/half/.senpi",
        "home/half/x",
        "home/ln/x",
        "home/flat/.omo",
        "home/flat/x",
        "out/p/.senpi/agent",
        "out/p/x",
        "out/none",
        "pkg",
        "deep/.senpi/agent",
        "deep/" + "d/" * 101,
    ):
        (w / d).mkdir(parents=True, exist_ok=True)
    (w / "home/ln/.senpi").symlink_to(w / "home/p/.senpi")
    (w / "home/flat/.omo/settings.json").write_text("{}")
    (w / "pkg/package.json").write_text(json.dumps({"piConfig": {"name": "tau", "configDir": ".tau"}}))
    return w


def test_examples(rules, world):
    home, lookup, brand = str(world / "home"), rules["lookup"], rules["brand"]

    def at(rule, cwd, **env):
        return resolve(rule, env, world / cwd, home)

    assert at(lookup, "home/p/a/b") == Resolved(world / "home/p/.senpi/agent", "project", True)
    assert at(lookup, "home/p/q/r") == Resolved(world / "home/p/q/.senpi/agent", "project", True)
    assert at(lookup, "home/half/x").how == at(lookup, "home/ln/x").how == at(lookup, "home").how == "default"
    assert at(lookup, "out/p/x") == Resolved(world / "out/p/.senpi/agent", "project", True)
    assert at(lookup, "deep/" + "d/" * 100).project and not at(lookup, "deep/" + "d/" * 101).project
    assert at(lookup, "out/none", SENPI_CODING_AGENT_DIR="~/x/../y") == Resolved(
        world / "home/y", "SENPI_CODING_AGENT_DIR", False
    )
    assert at(lookup, "out/none", SENPI_CODING_AGENT_DIR="rel").path == world / "out/none/rel"
    assert at(lookup, "out/none", SENPI_CODING_AGENT_DIR="~rel").path == world / "out/none/~rel"
    assert at(lookup, "out/none", SENPI_CODING_AGENT_DIR="file:///a%20b/../c").path == Path("/c")
    assert at(lookup, "out/none", SENPI_CODING_AGENT_DIR="file://localhost/t\t%41 ?q#f").path == Path("/tA ")
    for bad, why in (
        ("file://host/c", "not a local file"),
        ("file:///a%2fb", "an encoded /"),
        ("file:///a%zz", "URI malformed"),
        ("file:///a%e2%82", "URI malformed"),
    ):
        with pytest.raises(FatalError, match=why):
            at(lookup, "out/none", SENPI_CODING_AGENT_DIR=bad)
    assert at(lookup, "home/p/a/b", PI_CODING_AGENT_DIR="/pi").how == "project"  # not read before 2026.8.11-2
    assert at(brand, "home/p/a/b", PI_CODING_AGENT_DIR="/pi").path == Path("/pi")
    assert at(brand, "home/p/a/b", PI_CODING_AGENT_DIR="/pi", SENPI_CODING_AGENT_DIR="").how == "project"
    assert at(lookup, "out/none", PI_PACKAGE_DIR=str(world / "pkg"), TAU_CODING_AGENT_DIR="/t").path == Path("/t")
    assert at(brand, "out/none", SENPI_PACKAGE_DIR=str(world / "pkg")).path == world / "home/.tau/agent"
    assert at(lookup, "out/none", SENPI_PACKAGE_DIR=str(world / "pkg")).path == world / "home/.senpi/agent"
    flat = '{"name": " omo ", "flatLayout": true}'
    assert at(brand, "home/flat/x", SENPI_BRAND=flat) == Resolved(world / "home/flat/.omo", "project", True)
    assert at(brand, "home/p/a/b", SENPI_BRAND=flat) == Resolved(world / "home/.omo", "default", False)
    assert at(lookup, "home/flat/x", SENPI_BRAND=flat).path == world / "home/.senpi/agent"
    assert at(brand, "out/none", SENPI_BRAND=flat, OMO_CODING_AGENT_DIR="", PI_CODING_AGENT_DIR="/pi").how == "default"


def test_home_spellings(rules, world):
    rule, home = rules["lookup"], str(world / "home")
    assert agentdir.user_agent_dir(rule, {}, home) == Resolved(world / "home/.senpi/agent", "default", False)
    # a trailing slash or a symlinked HOME never equals the physical cwd: the lookup walks past it
    assert resolve(rule, {}, world / "home", home + "/").how == "project"
    (world / "homelink").symlink_to(world / "home")
    assert resolve(rule, {}, world / "home/half/x", str(world / "homelink")) == Resolved(
        world / "home/.senpi/agent", "project", True
    )
    assert resolve(rule, {}, world / "out/none", "").path == world / "out/none/.senpi/agent"
    with pytest.raises(FatalError, match="set HOME"):
        agentdir.user_agent_dir(rule, {}, "")
    assert agentdir.node_home({"HOME": ""}) == "" and agentdir.node_home({}) != ""


def test_brand_profile_parsing():
    brand = Brand("SENPI_BRAND", ("SENPI", "PI"))

    def parse(raw: str) -> agentdir.BrandProfile | None:
        return agentdir.brand_profile(brand, {"SENPI_BRAND": raw})

    assert parse('{"name":" omo ","configDir":" .o ","envPrefix":"x-y","flatLayout":true}') == agentdir.BrandProfile(
        "omo", ".o", "X-Y", True
    )
    assert parse('{"name":"Straße"}') == agentdir.BrandProfile("Straße", ".Straße", "STRASSE", False)
    for ignored in (
        "",
        " \u00a0 ",
        "nope",
        "[]",
        "null",
        '"omo"',
        '{"name":" "}',
        '{"name":1}',
        '{"name":"o","x":NaN}',
        '{"name":"o","configDir":".."}',
        '{"name":"o","configDir":"a/b"}',
        '{"name":"o","configDir":"a\\\\b"}',
    ):
        assert parse(ignored) is None, ignored
    assert parse('{"name":"o","flatLayout":1}').flat_layout is False
    assert agentdir.brand_profile(brand, {}) is None


# ---- resolving: properties against an independent oracle ---------------------------------------


def real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def oracle(world: Path, cwd: Path, value: str | None) -> tuple[Path, str]:
    home = world / "home"
    if value:
        if value == "~" or value.startswith("~/"):
            value = str(home) + value[1:]
        joined = posixpath.normpath(os.path.join(cwd, value))
        return Path(joined[1:] if joined.startswith("//") else joined), "SENPI_CODING_AGENT_DIR"
    for depth, folder in enumerate([cwd, *cwd.parents]):
        if folder == home or depth > 100:
            break
        if real_dir(folder / ".senpi") and real_dir(folder / ".senpi/agent"):
            return folder / ".senpi/agent", "project"
    return home / ".senpi/agent", "default"


CWDS = [
    "home",
    "home/p",
    "home/p/a/b",
    "home/p/q/r",
    "home/half/x",
    "home/ln/x",
    "home/flat/x",
    "out/p/x",
    "out/none",
    "deep/" + "d/" * 99,
    "deep/" + "d/" * 100,
    "deep/" + "d/" * 101,
]
segment = st.sampled_from(["a", "b", ".", "..", "", "x y", "~", ".senpi"])
relative = st.lists(segment, min_size=1, max_size=5).map("/".join)
values = st.one_of(
    st.none(), st.just(""), relative, relative.map(lambda p: "/" + p), relative.map(lambda p: "~/" + p), st.just("~")
)


@settings(max_examples=300, deadline=None)
@given(cwd=st.sampled_from(CWDS), value=values, pi=st.one_of(st.none(), st.just("/pi")))
def test_resolve_matches_the_oracle(rules, world, cwd, value, pi):
    env = {} if value is None else {"SENPI_CODING_AGENT_DIR": value}
    if pi is not None:
        env["PI_CODING_AGENT_DIR"] = pi
    got = resolve(rules["lookup"], env, world / cwd, str(world / "home"))
    assert (got.path, got.how) == oracle(world, world / cwd, value)
    assert got.path.is_absolute() and got.project == (got.how == "project")
    branded = resolve(rules["brand"], env, world / cwd, str(world / "home"))
    if value is None and pi is not None:
        assert branded == Resolved(Path("/pi"), "PI_CODING_AGENT_DIR", False)
    else:
        assert branded == got  # SENPI_ first; an empty one is defined and stops the PI_ fallback


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "bc", ".", "..", ""]), max_size=8).map("/".join), st.booleans())
def test_normalize_is_posix_normpath_but_keeps_a_trailing_slash(path, absolute):
    path = ("/" if absolute else "") + path
    expected = posixpath.normpath(path) if path else "."
    expected = expected[1:] if expected.startswith("//") else expected  # node: one leading slash
    if path.endswith("/") and expected != "/":
        expected += "/"
    assert agentdir._normalize(path) == expected


def test_syntax_patterns():
    from senpi_guard.core import jssyntax as js

    def node(source: str):
        statement = js.parse(source.encode()).root_node.named_children[0]
        return statement.named_children[0] if statement.type == "expression_statement" else statement

    found = js.match(js.pattern("f($A, { home: $B }, $A)"), node("f(x /* c */, { home }, x);"))
    assert found is not None and js.tokens(found["$B"]) == ["home"]
    assert js.match(js.pattern("f($A, $A)"), node("f(x, y)")) is None
    assert js.match(js.pattern("({ a: $X, ...$$ })"), node("({ b: 2, a: 1 })")) is not None
    assert js.match(js.pattern("({ a: $X, c: 3, ...$$ })"), node("({ b: 2, a: 1 })")) is None
    assert js.match(js.pattern("function g() { $_; return 1; }"), node("function g() { if (x) y(); return 1; }")) == {}
