"""senpi-guard's agent-dir resolver against each real build's own getAgentDir(), run by node 24.

For every real build (and, for 2026.8.22-2, every kind of SENPI_BRAND profile) one node process
imports the build's dist/config.js afresh for each case (environment, HOME and cwd set per case)
and prints what getAgentDir() returns; the Python resolver must give the same directory, and must
refuse exactly where senpi throws. The rule itself is read from the same files, by syntax only."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import HANG_S
from realsenpi import node24_bin

from senpi_guard.core import agentdir
from senpi_guard.errors import FatalError

pytestmark = pytest.mark.real

BUILDS = ("2026.7.30", "2026.8.1", "2026.8.9", "2026.8.22-2")
FULL = "2026.8.22-2"
BRANDS = [
    None,
    '{"name":"omo"}',
    '{"name":" omo ","envPrefix":"x-y","flatLayout":true}',
    '{"name":"omo","configDir":"  .omo  ","flatLayout":true}',
    '{"name":"omo","configDir":".senpi"}',
    '{"name":"omo","configDir":".senpi","flatLayout":true}',
    '{"name":"omo","configDir":"../up"}',
    '{"name":"omo","configDir":"a\\\\b"}',
    '{"name":"omo","flatLayout":"true"}',
    '{"name":"   "}',
    '{"name":"omo","n":NaN}',
    "not json",
    "[1]",
    "   ",
    '{"name":"Straße","envPrefix":"ß"}',
]

# Only a third-party package that is missing from the build is stubbed (the dist-only builds ship
# without dependencies: config.js -> utils/child-process.js imports `cross-spawn`, used on Windows
# only). senpi's own modules, and every package that is present, load and run as shipped.
STUB_HOOK = """
export async function resolve(specifier, context, next) {
    try {
        return await next(specifier, context);
    } catch (error) {
        const bare = !/^(?:\\.|\\/|node:|data:|file:)/.test(specifier);
        if (!bare || error?.code !== "ERR_MODULE_NOT_FOUND") throw error;
        return { url: "data:text/javascript,export default {};", shortCircuit: true };
    }
}
"""
REGISTER = 'import { register } from "node:module";\nregister(new URL("./stub-missing.mjs", import.meta.url));\n'
DRIVER = """
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
const { config, cases } = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const [i, c] of cases.entries()) {
    for (const key of Object.keys(process.env)) delete process.env[key];
    Object.assign(process.env, c.env);
    process.chdir(c.cwd);
    try {
        const { getAgentDir } = await import(`${config}?case=${i}`);
        const dir = getAgentDir();
        out.push({ cwd: process.cwd(), dir, resolved: resolve(process.cwd(), dir) });
    } catch (error) {
        out.push({ cwd: process.cwd(), error: String(error?.message ?? error) });
    }
}
process.stdout.write(JSON.stringify(out));
"""


def node24() -> str:
    return str(node24_bin() / "node")


@pytest.fixture(scope="session")
def builds(unpacked) -> dict[str, Path]:
    return unpacked


@pytest.fixture(scope="session")
def scripts(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("agentdir-node")
    (out / "stub-missing.mjs").write_text(STUB_HOOK)
    (out / "register.mjs").write_text(REGISTER)
    (out / "driver.mjs").write_text(DRIVER)
    return out


def make(root: Path, *dirs: str) -> None:
    for d in dirs:
        (root / d).mkdir(parents=True, exist_ok=True)


@pytest.fixture(scope="session")
def world(tmp_path_factory) -> Path:
    """Projects, look-alikes (symlinks, files, half-made dirs), flat-brand dirs, package dirs."""
    w = tmp_path_factory.mktemp("agentdir-world").resolve()
    make(
        w,
        "home/.senpi/agent",
        "home/proj/.senpi/agent",
        "home/proj/sub/deep",
        "home/proj/nested/.senpi/agent",
        "home/proj/nested/x",
        "home/plain",
        "home/half/.senpi",
        "home/half/sub",
        "home/agentfile/.senpi",
        "home/agentfile/sub",
        "home/linked/sub",
        "home/agentlink/.senpi",
        "home/agentlink/sub",
        "home/flat/.omo",
        "home/flat/sub",
        "home/flatdir/.omo",
        "home/flatdir/sub",
        "home/flatlink/.omo",
        "home/flatlink/sub",
        "home/flatsenpi/.senpi",
        "home/flatsenpi/sub",
        "home/tauproj/.tau/agent",
        "home/tauproj/sub",
        "outside/proj2/.senpi/agent",
        "outside/proj2/x",
        "outside/none",
        "pkg-empty",
        "pkg-tau",
        "pkg-bad",
        "deep/.senpi/agent",
        "deep/" + "d/" * 101,
    )
    (w / "home/agentfile/.senpi/agent").write_text("not a dir")
    (w / "home/linked/.senpi").symlink_to(w / "home/proj/.senpi")
    (w / "home/agentlink/.senpi/agent").symlink_to(w / "home/proj/.senpi/agent")
    (w / "home/flat/.omo/settings.json").write_text("{}")
    (w / "home/flatsenpi/.senpi/settings.json").write_text("{}")
    (w / "home/flatlink/.omo/settings.json").symlink_to(w / "home/flat/.omo/settings.json")
    (w / "pkg-tau/package.json").write_text(json.dumps({"piConfig": {"name": "tau", "configDir": ".tau"}}))
    (w / "pkg-bad/package.json").write_text("{")
    (w / "homelink").symlink_to(w / "home")
    return w


def cases(w: Path) -> list[dict]:
    home = str(w / "home")
    some = [w / "home/proj/sub/deep", w / "home/plain", w / "outside/none"]
    all_cwds = [
        w / "home",
        *some,
        w / "home/proj/nested/x",
        w / "home/half/sub",
        w / "home/agentfile/sub",
        w / "home/linked/sub",
        w / "home/agentlink/sub",
        w / "home/flat/sub",
        w / "home/flatdir/sub",
        w / "home/flatlink/sub",
        w / "home/flatsenpi/sub",
        w / "home/tauproj/sub",
        w / "outside/proj2/x",
        w / ("deep/" + "d/" * 100),
        w / ("deep/" + "d/" * 101),
        w / "homelink/proj/sub",
        Path("/"),
    ]
    s = "SENPI_CODING_AGENT_DIR"
    values = [
        "",
        str(w / "abs"),
        "~",
        "~/",
        "~/x/y",
        "~x",
        "rel/dir",
        "./a/../b/",
        "/a//b/../c/",
        "file:///tmp/x%20y/../z",
        "file://localhost/abs/f",
        "file://host/x",
        "file:///a%2Fb",
        "FILE:///up",
        "file:///a%zz",
        "file:///a%e2%82",
        "file:///t ",
        "file:///q?x=%zz#f",
        "file:///%41\tb",
    ]
    envs = [
        {},
        *({s: v} for v in values),
        {"PI_CODING_AGENT_DIR": "/pi/x"},
        {s: "", "PI_CODING_AGENT_DIR": "/pi/x"},
        {"PI_CODING_AGENT_DIR": ""},
        {"OMO_CODING_AGENT_DIR": "/omo", s: "/senpi"},
        {"X-Y_CODING_AGENT_DIR": "/xy", "PI_CODING_AGENT_DIR": "/pi"},
        {"SS_CODING_AGENT_DIR": "/ss"},
        {"OMO_CODING_AGENT_DIR": "", s: "/senpi"},
    ]
    packages = [
        {"PI_PACKAGE_DIR": str(w / "pkg-empty"), "PI_CODING_AGENT_DIR": "/pi/x"},
        {"PI_PACKAGE_DIR": str(w / "pkg-empty")},
        {"PI_PACKAGE_DIR": str(w / "pkg-tau")},
        {"PI_PACKAGE_DIR": str(w / "pkg-tau"), "TAU_CODING_AGENT_DIR": "~/tau"},
        {"SENPI_PACKAGE_DIR": str(w / "pkg-tau")},
        {"PI_PACKAGE_DIR": ""},
        {"PI_PACKAGE_DIR": str(w / "pkg-bad")},
        {"PI_PACKAGE_DIR": "../pkg-tau"},
    ]
    found = [{"env": {"HOME": home, **env}, "cwd": str(cwd)} for env in envs for cwd in some]
    found += [
        {"env": {"HOME": home, **env}, "cwd": str(cwd)}
        for env in packages
        for cwd in (w / "home/tauproj/sub", w / "home/plain", w / "outside/none")
    ]
    for spelled in (home, home + "/", str(w / "homelink"), None, ""):
        env = {} if spelled is None else {"HOME": spelled}
        found += [{"env": env, "cwd": str(cwd)} for cwd in all_cwds]
    return found


def run_senpi(scripts: Path, package: Path, brand: str | None, job: list[dict]) -> list[dict]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if brand is not None:
        env["SENPI_BRAND"] = brand  # brand.js reads the profile once per process: one per brand
    config = (package / "dist/config.js").as_uri()
    out = subprocess.run(
        [node24(), "--no-warnings", "--import", (scripts / "register.mjs").as_uri(), str(scripts / "driver.mjs")],
        input=json.dumps({"config": config, "cases": job}),
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=True,
    )
    return json.loads(out.stdout)


def ours(rule: agentdir.AgentDirRule, case: dict, cwd: str) -> str:
    try:
        return str(agentdir.resolve(rule, case["env"], Path(cwd), agentdir.node_home(case["env"])).path)
    except FatalError:
        return "error"


def check(builds, scripts, world, version: str, brand: str | None) -> int:
    rule = agentdir.rule_for(builds[version])
    job = cases(world)
    if brand is not None:
        job = [{**c, "env": {**c["env"], "SENPI_BRAND": brand}} for c in job]
    theirs = run_senpi(scripts, builds[version], brand, job)
    wrong = []
    for case, got in zip(job, theirs, strict=True):
        expected = "error" if "error" in got else got["resolved"]
        mine = ours(rule, case, got["cwd"])
        if mine != expected:
            wrong.append(f"{case} -> senpi {got}, senpi-guard {mine}")
    assert not wrong, f"{len(wrong)} of {len(job)} cases differ:\n" + "\n".join(wrong[:15])
    return len(job)


@pytest.mark.parametrize("version", sorted(BUILDS))
def test_rule_read_from_each_build(builds, version):
    rule = agentdir.rule_for(builds[version])
    assert rule.package_dir == builds[version]
    if version == FULL:
        assert rule.shape == "brand-aware"
        assert agentdir.env_names(rule) == ("SENPI_CODING_AGENT_DIR", "PI_CODING_AGENT_DIR")
        assert rule.brand == agentdir.Brand("SENPI_BRAND", ("SENPI", "PI"))
        assert rule.flat_layout_sentinel == "settings.json"
        assert agentdir.agent_dir_variables(rule) == (
            "SENPI_BRAND",
            "SENPI_CODING_AGENT_DIR",
            "PI_CODING_AGENT_DIR",
            "SENPI_PACKAGE_DIR",
            "PI_PACKAGE_DIR",
            "HOME",
        )
    else:
        assert rule.shape == "project-lookup"
        assert agentdir.env_names(rule) == ("SENPI_CODING_AGENT_DIR",)
        assert rule.brand is None and rule.flat_layout_sentinel is None
        assert agentdir.agent_dir_variables(rule) == ("SENPI_CODING_AGENT_DIR", "PI_PACKAGE_DIR", "HOME")
    assert (rule.app_name, rule.config_dir, rule.project_lookup, rule.expands_tilde) == ("senpi", ".senpi", True, True)


@pytest.mark.parametrize("brand", [None, '{"name":"omo","flatLayout":true}'])
@pytest.mark.parametrize("version", sorted(set(BUILDS) - {FULL}))
def test_dist_only_builds_resolve_as_senpi_does(builds, scripts, world, version, brand):
    assert check(builds, scripts, world, version, brand) > 150


@pytest.mark.parametrize("brand", BRANDS)
def test_full_build_resolves_as_senpi_does(builds, scripts, world, brand):
    assert check(builds, scripts, world, FULL, brand) > 150


def test_user_agent_dir_is_senpi_started_at_home(builds, scripts, world):
    home = str(world / "home")
    for version in BUILDS:
        rule = agentdir.rule_for(builds[version])
        (got,) = run_senpi(scripts, builds[version], None, [{"env": {"HOME": home}, "cwd": home}])
        found = agentdir.user_agent_dir(rule, {"HOME": home}, home)
        assert (str(found.path), found.how, found.project) == (got["resolved"], "default", False)
