"""How an installed senpi decides where its agent dir is, read from its own `dist/config.js` (and
`dist/core/brand.js`) by syntax: senpi-guard never runs that file (it may belong to another user,
and a dist-only build does not even import). The known shapes of the code are recognised; any other
is refused with one line. agentdir.py redoes the steps the rule names."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from tree_sitter import Node

from senpi_guard.core import jssyntax as js
from senpi_guard.errors import FatalError
from senpi_guard.io import reader

CONFIG_JS = "dist/config.js"


class EnvRead(NamedTuple):
    """How a setting is read: kind "fixed" (the variable `text`), "app-name" (APP_NAME.toUpperCase()
    + `text`, APP_NAME being piConfig.name or `fallback`) or "brand" (the first *defined* of
    `<prefix>_<text>`, the brand profile's prefix first, then the legacy ones)."""

    kind: str
    text: str
    fallback: str = ""


class Brand(NamedTuple):
    variable: str  # the JSON brand profile's variable (SENPI_BRAND)
    legacy_prefixes: tuple[str, ...]  # read after the profile's own prefix


@dataclass(frozen=True)
class AgentDirRule:
    package_dir: Path
    shape: str  # "project-lookup" (2026.7.28 – 2026.8.11) | "brand-aware" (2026.8.11-2 on)
    agent_dir_env: EnvRead
    package_dir_env: EnvRead  # a package dir named there supplies package.json (missing: `{}`)
    app_name: str | None  # package.json piConfig.name and .configDir, as shipped
    config_dir: str | None
    config_dir_fallback: str
    expands_tilde: bool = True  # normalizePath: `~`, `~/x` (with HOME) and file:// URLs
    project_lookup: bool = True  # nearest ancestor of the cwd (below HOME) with <configDir>/agent
    flat_layout_sentinel: str | None = None  # the flat-layout branch exists, keyed on this file
    brand: Brand | None = None


# ---- the shapes senpi's code has taken (placeholders `$NAME`: see jssyntax.pattern) ------------

_GET = "function getAgentDir() { return resolveAgentDir(process.cwd(), homedir(), $SRC); }"
_RESOLVE = """function resolveAgentDir($CWD, $HOME, $ENV) {
    if ($ENV) { return normalizePath($ENV, { homeDir: $HOME }); }
    $FLAT;
    const $D = findNearestParentConfigDir($CWD, $HOME, CONFIG_DIR_NAME, "agent");
    return $D ? join($D, "agent") : join($HOME, CONFIG_DIR_NAME, "agent"); }"""
_FLAT = """if (CONFIG_FLAT_LAYOUT) {
    const $F = findNearestParentConfigDir($CWD, $HOME, CONFIG_DIR_NAME, undefined, $FILE);
    return $F ?? join($HOME, CONFIG_DIR_NAME); }"""
_ENV = {"fixed": "process.env.$NAME", "constant": "process.env[$NAME]", "brand": "envValue($NAME)"}
_PKG_DIR = ("const $P = $SRC;", "if ($P) { return normalizePath($P); }")
_PKG_PATH = 'function getPackageJsonPath() { return join(getPackageDir(), "package.json"); }'
_PKG_TRY = """try { pkg = JSON.parse(readFileSync(getPackageJsonPath(), "utf-8")); }
    catch ($X) { const $R = $X; if ($R.code !== "ENOENT") throw $X; }"""
_CONSTANTS = {
    "piConfigName": "pkg.piConfig?.name",
    "APP_NAME": "piConfigName || $D",
    "CONFIG_FLAT_LAYOUT": "BRAND?.flatLayout === true",
    "BRAND": "brandProfile()",
}
_CONFIG_DIR = {"plain": "pkg.piConfig?.configDir || $D", "brand": "BRAND?.configDir || pkg.piConfig?.configDir || $D"}
_BRAND_JS = {
    "envValue": """function envValue($S, $ENV = process.env) { for (const $N of brandEnvNames($S)) {
        const $V = $ENV[$N]; if ($V !== undefined) return $V; } return undefined; }""",
    "brandEnvNames": """function brandEnvNames($S, $PROFILE = brandProfile()) {
        const $ALL = [$PROFILE?.envPrefix, ...LEGACY_ENV_PREFIXES].filter(($X) => typeof $X === "string"
            && $X.length > 0); return [...new Set($ALL)].map(($Y) => `${$Y}_${$S}`); }""",
    "brandProfile": "function brandProfile() { if (!$DONE) { $C = consumeBrandProfile(); $DONE = true; } return $C; }",
    "consumeBrandProfile": "function consumeBrandProfile($E = process.env) { return parseBrandProfile($E[$VAR]); }",
    "parseBrandProfile": """function parseBrandProfile($RAW) {
        if (!$RAW?.trim()) return undefined; let $P; try { $P = JSON.parse($RAW); } catch { $_; return undefined; }
        if (typeof $P !== "object" || $P === null || Array.isArray($P)) { $_; return undefined; } const $S = $P;
        const $NAME = readString($S, "name"); if (!$NAME) { $_; return undefined; }
        const $DIR = readString($S, "configDir") || `.${$NAME}`;
        if (!isSafeConfigDirName($DIR)) { $_; return undefined; }
        return { name: $NAME, configDir: $DIR, flatLayout: $S.flatLayout === true,
                 envPrefix: (readString($S, "envPrefix") || $NAME).toUpperCase(), ...$$ }; }""",
    "readString": """function readString($S, $K) {
        const $V = $S[$K]; return typeof $V === "string" && $V.trim() ? $V.trim() : undefined; }""",
    "isSafeConfigDirName": r"""function isSafeConfigDirName($V) {
        return $V !== "." && $V !== ".." && !/[\\/]/.test($V); }""",
}
_IMPORTS = {
    "homedir": ("node:os", "os"),
    "join": ("node:path", "path"),
    "normalizePath": ("./utils/paths.js",),
    "findNearestParentConfigDir": ("./nearest-parent-config.js",),
}
_APP_NAME_UPPER = ["${", "APP_NAME", ".", "toUpperCase", "(", ")", "}"]


class _Source:
    """One file of the build, parsed; what it must hold, or a one-line refusal saying what it holds."""

    def __init__(self, path: Path) -> None:
        self.path, self.brand_spec = path, None
        try:
            self.tree = js.parse(reader.read(path, reader.DIST))
        except OSError as e:
            raise FatalError(f"{path}: cannot read it ({e.strerror}): is this a senpi install?") from e
        except js.JsSyntaxError as e:
            raise FatalError(f"{path}: not JavaScript senpi-guard can read ({e}); report it with this file") from e

    def fail(self, what: str, found: Node | None) -> FatalError:
        text = (found.text or b"").decode("utf-8", "replace") if found is not None else "nothing"
        shown = " ".join(text.split())[:120]
        return FatalError(
            f"{self.path}: cannot tell where this senpi looks for its agent dir: expected {what}, "
            f"found `{shown}`; report it with this file"
        )

    def get(self, name: str) -> Node:
        node = js.top_level_binding(self.tree, name)
        if node is None:
            raise self.fail(f"a top-level `{name}`", None)
        return node

    def want(
        self, options: str | dict[str, str], node: Node | None, what: str, binds: dict[str, Node] | None = None
    ) -> tuple[str, dict[str, Node]]:
        found = js.match_first({"": options} if isinstance(options, str) else options, node, binds)
        if found is None:
            raise self.fail(what, node)
        return found

    def text(self, node: Node, what: str) -> str:
        value = js.constant_string(self.tree, node)
        if value is None:
            raise self.fail(f"{what} as a string literal", node)
        return value

    def imports(self, name: str, sources: tuple[str, ...] | None = None) -> None:
        """`name` is imported as itself from one of `sources` (None: from senpi's one brand module)."""
        found = js.import_binding(self.tree, name)
        brand = (
            sources is None
            and found is not None
            and found[1].startswith(("./", "../"))
            and self.brand_spec in (None, found[1])
        )
        if found is None or found[0] != name or not (brand or (sources and found[1] in sources)):
            raise self.fail(f"`{name}` imported from {sources[0] if sources else 'senpi brand module'}", None)
        if brand:
            self.brand_spec = found[1]


def _read(package_dir: Path) -> tuple[AgentDirRule, list[Path]]:
    src = _Source(package_dir / CONFIG_JS)
    _, found = src.want(
        _GET,
        src.get("getAgentDir"),
        "getAgentDir() returning resolveAgentDir(process.cwd(), homedir(), <the variable>)",
    )
    for name, sources in _IMPORTS.items():
        src.imports(name, sources)
    agent_env = _env_read(src, found["$SRC"])
    sentinel = _flat_layout(src)
    package_env = _package_dir(src)
    kind, config_dir = src.want(_CONFIG_DIR, src.get("CONFIG_DIR_NAME"), "CONFIG_DIR_NAME from piConfig.configDir")
    if kind == "brand" or sentinel:
        src.want(_CONSTANTS["BRAND"], src.get("BRAND"), "BRAND from the brand profile")
        src.imports("brandProfile")
    brand_js = src.path.parent / src.brand_spec if src.brand_spec else None
    brand = _brand(_Source(brand_js)) if brand_js else None
    files = [p for p in (src.path, brand_js, package_dir / "package.json") if p]
    name, dir_name = package_json(files[-1])
    rule = AgentDirRule(
        package_dir,
        "brand-aware" if brand else "project-lookup",
        agent_env,
        package_env,
        name,
        dir_name,
        src.text(config_dir["$D"], "CONFIG_DIR_NAME's fallback"),
        flat_layout_sentinel=sentinel,
        brand=brand,
    )
    return rule, files


def _env_read(src: _Source, node: Node) -> EnvRead:
    kind, found = src.want(_ENV, node, "process.env.NAME, process.env[ENV_AGENT_DIR] or envValue(SUFFIX)")
    name = found["$NAME"]
    if kind == "fixed":
        return EnvRead("fixed", js.tokens(name)[0])
    if kind == "brand":
        src.imports("envValue")
        return EnvRead("brand", src.text(name, "envValue's argument"))
    template = src.get(js.tokens(name)[0]) if name.type == "identifier" else name
    parts = template.named_children if template.type == "template_string" else []
    if len(parts) != 2 or parts[1].type != "string_fragment" or js.tokens(parts[0]) != _APP_NAME_UPPER:
        raise src.fail("the variable's name as `${APP_NAME.toUpperCase()}_SUFFIX`", template)
    src.want(_CONSTANTS["piConfigName"], src.get("piConfigName"), "piConfigName from package.json")
    _, app_name = src.want(_CONSTANTS["APP_NAME"], src.get("APP_NAME"), "APP_NAME from piConfig.name")
    return EnvRead("app-name", js.tokens(parts[1])[0], src.text(app_name["$D"], "APP_NAME's fallback"))


def _flat_layout(src: _Source) -> str | None:
    """resolveAgentDir's shape: the flat-layout sentinel file when it has that branch."""
    node = src.get("resolveAgentDir")
    if js.match(js.pattern(_RESOLVE.replace("$FLAT;", "")), node) is not None:
        return None
    _, found = src.want(_RESOLVE, node, "resolveAgentDir(cwd, homeDir, envDir) of a known shape")
    _, flat = src.want(_FLAT, found["$FLAT"], "the flat-layout branch of a known shape", found)
    src.want(_CONSTANTS["CONFIG_FLAT_LAYOUT"], src.get("CONFIG_FLAT_LAYOUT"), "the brand's flat-layout flag")
    return src.text(flat["$FILE"], "the flat-layout sentinel file")


def _package_dir(src: _Source) -> EnvRead:
    """The variable that points getPackageDir() elsewhere (package.json is read there; missing: {})."""
    body = src.get("getPackageDir").child_by_field_name("body")
    statements = [c for c in body.named_children if c.type != "comment"] if body else [None]
    what = "getPackageDir() reading an override variable first"
    _, found = src.want(_PKG_DIR[0], statements[0], what)
    src.want(_PKG_DIR[1], statements[1] if len(statements) > 1 else None, what, found)
    src.want(_PKG_PATH, src.get("getPackageJsonPath"), "getPackageJsonPath() of a known shape")
    pkg = src.get("pkg")
    tries = [s for s in src.tree.root_node.named_children if s.type == "try_statement"]
    if js.tokens(pkg) != ["{", "}"] or not any(js.match(js.pattern(_PKG_TRY), s) for s in tries):
        raise src.fail("pkg = {}, then read from package.json unless it is missing", pkg)
    return _env_read(src, found["$SRC"])


def _brand(src: _Source) -> Brand:
    binds = {
        name: src.want(source, src.get(name), f"{name}() of a known shape")[1] for name, source in _BRAND_JS.items()
    }
    prefixes = src.get("LEGACY_ENV_PREFIXES")
    if prefixes.type != "array":
        raise src.fail("LEGACY_ENV_PREFIXES as an array of strings", prefixes)
    legacy = tuple(src.text(p, "a legacy prefix") for p in prefixes.named_children)
    return Brand(src.text(binds["consumeBrandProfile"]["$VAR"], "the brand profile's variable"), legacy)


def no_constants(name: str) -> None:
    raise ValueError(name)  # JSON.parse knows no NaN or Infinity


def package_json(path: Path) -> tuple[str | None, str | None]:
    """piConfig's name and configDir as config.js takes them (a missing file counts as {})."""
    try:
        data = json.loads(reader.read(path, reader.MANIFEST).decode("utf-8", "replace"), parse_constant=no_constants)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as e:
        raise FatalError(f"{path}: unreadable ({e}), so senpi does not start; reinstall it") from e
    config = data.get("piConfig") if isinstance(data, dict) else None
    found = [config.get(key) if isinstance(config, dict) else None for key in ("name", "configDir")]
    if data is None or any(value and not isinstance(value, str) for value in found):
        raise FatalError(f"{path}: no object with string piConfig.name/configDir; senpi-guard cannot use it")
    return found[0] or None, found[1] or None


_CACHE: dict[Path, tuple[list[tuple[int, int] | None], list[Path], AgentDirRule]] = {}


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        return (st := path.stat()).st_mtime_ns, st.st_size
    except OSError:
        return None


def rule_for(package_dir: Path) -> AgentDirRule:
    """The agent-dir rule of the senpi at `package_dir` (cached in-process while its files are unchanged)."""
    key = Path(os.path.abspath(package_dir))
    cached = _CACHE.get(key)
    if cached is not None and [_stamp(f) for f in cached[1]] == cached[0]:
        return cached[2]
    rule, files = _read(key)
    _CACHE[key] = [_stamp(f) for f in files], files, rule
    return rule
