"""Where an installed senpi looks for its agent dir (`<agent dir>/extensions/` holds user extensions).

Each build decides it in its `dist/config.js`. senpi-guard never runs that file (it may belong to
another user, and a dist-only build does not even import): it recognises the known shapes of the
code by syntax, refuses any other, and redoes the same steps with node's textual path rules."""

from __future__ import annotations

import json
import os
import pwd
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote_to_bytes

from senpi_guard.core.agentrule import AgentDirRule, Brand, EnvRead, no_constants, package_json, rule_for
from senpi_guard.errors import FatalError

__all__ = [
    "AgentDirRule",
    "Brand",
    "BrandProfile",
    "Resolved",
    "agent_dir_variables",
    "default_agent_dir",
    "node_home",
    "resolve",
    "rule_for",
    "user_agent_dir",
]

HOME_VARIABLE = "HOME"  # node's os.homedir(): $HOME when set (even empty), else the passwd entry


@dataclass(frozen=True)
class Resolved:
    path: Path
    how: str  # the variable used, "project" or "default"
    project: bool


class BrandProfile(NamedTuple):
    name: str
    config_dir: str
    env_prefix: str
    flat_layout: bool


# ---- resolving, as the build's own code does ---------------------------------------------------

_JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)  # what String.prototype.trim() removes


def node_home(env: Mapping[str, str]) -> str:
    """What node's os.homedir() returns in `env`: $HOME as it is (even empty), else the passwd entry."""
    return env[HOME_VARIABLE] if HOME_VARIABLE in env else pwd.getpwuid(os.getuid()).pw_dir


def _normalize(path: str) -> str:
    """node's path.posix.normalize: textual, keeps a trailing separator."""
    absolute, trailing = path.startswith("/"), path.endswith("/")
    parts: list[str] = []
    for segment in path.split("/"):
        if segment == ".." and parts and parts[-1] != "..":
            parts.pop()
        elif segment not in ("", ".") and (segment != ".." or not absolute):
            parts.append(segment)
    out = "/".join(parts)
    if not out:
        return "/" if absolute else "./" if trailing and path else "."
    out += "/" if trailing else ""
    return "/" + out if absolute else out


def _join(*parts: str) -> str:
    return _normalize("/".join(p for p in parts if p))


def _absolute(cwd: str, path: str) -> Path:
    """path.resolve(cwd, path) for an absolute cwd."""
    return Path(_normalize(path if path.startswith("/") else f"{cwd}/{path}"))


def _expand(value: str, home: str) -> str:
    """normalizePath(value, {homeDir: home}) on POSIX; raises where node's fileURLToPath throws."""
    if value == "~" or value.startswith("~/"):
        return home if value == "~" else _join(home, value[2:])
    if not value.startswith("file://"):
        return value
    rest = re.sub(r"[\t\n\r]|[\x00-\x20]+$", "", value[len("file://") :]).replace("\\", "/")
    host, _, path = re.split(r"[?#]", rest, maxsplit=1)[0].partition("/")
    if host.lower() not in ("", "localhost"):
        why = "not a local file: URL"
    elif re.search("%2f", path, re.IGNORECASE):
        why = "an encoded / in a file: URL"
    else:
        try:
            if not re.search("%(?![0-9a-fA-F]{2})", path):
                return unquote_to_bytes("/" + path).decode("utf-8")
        except UnicodeDecodeError:
            pass
        why = "URI malformed"
    raise FatalError(f"senpi cannot use the directory {value!r} ({why}), so it does not start")


def _trimmed(source: dict, key: str) -> str | None:
    value = source.get(key)
    return (value.strip(_JS_SPACE) or None) if isinstance(value, str) else None


def brand_profile(brand: Brand, env: Mapping[str, str]) -> BrandProfile | None:
    """The brand profile senpi takes from the environment (None where senpi ignores the variable)."""
    raw = env.get(brand.variable)
    try:
        parsed = json.loads(raw, parse_constant=no_constants) if raw and raw.strip(_JS_SPACE) else None
    except (ValueError, RecursionError):
        return None
    name = _trimmed(parsed, "name") if isinstance(parsed, dict) else None
    if name is None:
        return None
    config_dir = _trimmed(parsed, "configDir") or f".{name}"
    if config_dir in (".", "..") or "/" in config_dir or "\\" in config_dir:
        return None
    prefix = (_trimmed(parsed, "envPrefix") or name).upper()
    return BrandProfile(name, config_dir, prefix, parsed.get("flatLayout") is True)


def names_read(rule: AgentDirRule, read: EnvRead, profile: BrandProfile | None, app: str | None) -> tuple[str, ...]:
    if read.kind != "brand":
        return (read.text if read.kind == "fixed" else (app or read.fallback).upper() + read.text,)
    prefixes = ((profile.env_prefix,) if profile else ()) + (rule.brand.legacy_prefixes if rule.brand else ())
    return tuple(f"{p}_{read.text}" for p in dict.fromkeys(prefixes) if p)


def env_names(rule: AgentDirRule) -> tuple[str, ...]:
    """The agent-dir variables, in order, for the package as shipped and no brand profile."""
    return names_read(rule, rule.agent_dir_env, None, rule.app_name)


def _first_defined(env: Mapping[str, str], names: tuple[str, ...]) -> tuple[str, str] | None:
    return next(((name, env[name]) for name in names if name in env), None)  # `undefined` vs ""


def _is(path: str, kind: int) -> bool:
    try:
        return stat.S_IFMT(os.lstat(path).st_mode) == kind
    except (OSError, ValueError):
        return False


def _nearest(cwd: str, home: str, config_dir: str, child: str, kind: int) -> str | None:
    """findNearestParentConfigDir: the cwd and its ancestors, 101 at most, stopping at HOME (spelled as
    given); a candidate and its child count only as themselves, not through a symlink."""
    home, current = _normalize(home), _normalize(cwd)
    for _ in range(101):
        if current == home:
            return None
        candidate = _join(current, config_dir)
        if _is(candidate, stat.S_IFDIR) and _is(_join(candidate, child), kind):
            return candidate
        parent = os.path.dirname(current.rstrip("/")) or "/"
        if parent == current:
            return None
        current = parent
    return None


def resolve(rule: AgentDirRule, env: Mapping[str, str], cwd: Path | str, home: Path | str) -> Resolved:
    """The agent dir the build uses when started in `cwd` (absolute and physical, as process.cwd()
    reports it) with `env`; `home` is node's os.homedir() (node_home), a str to keep its spelling."""
    cwd, home = os.fspath(cwd), os.fspath(home)
    if not cwd.startswith("/"):
        raise ValueError(f"cwd must be absolute: {cwd!r}")
    profile = brand_profile(rule.brand, env) if rule.brand else None
    app_name, config_dir = rule.app_name, rule.config_dir
    override = _first_defined(env, names_read(rule, rule.package_dir_env, profile, None))
    if override is not None and override[1]:
        app_name, config_dir = package_json(_absolute(cwd, _expand(override[1], home)) / "package.json")
    app_name = (profile.name if profile else None) or app_name
    config_dir = (profile.config_dir if profile else None) or config_dir or rule.config_dir_fallback
    found = _first_defined(env, names_read(rule, rule.agent_dir_env, profile, app_name))
    if found is not None and found[1]:
        return Resolved(_absolute(cwd, _expand(found[1], home)), found[0], False)
    if rule.flat_layout_sentinel and profile and profile.flat_layout:
        project = _nearest(cwd, home, config_dir, rule.flat_layout_sentinel, stat.S_IFREG)
        default = _join(home, config_dir)
    else:
        project = _nearest(cwd, home, config_dir, "agent", stat.S_IFDIR) if rule.project_lookup else None
        project, default = project and _join(project, "agent"), _join(home, config_dir, "agent")
    if project:
        return Resolved(_absolute(cwd, project), "project", True)
    return Resolved(_absolute(cwd, default), "default", False)


def user_agent_dir(rule: AgentDirRule, env: Mapping[str, str], home: Path | str) -> Resolved:
    """The agent dir senpi uses when started in the home folder, where senpi-guard installs its
    extension by default (the project lookup stops there at once, unless HOME ends in a slash)."""
    cwd = _normalize(os.fspath(home)).rstrip("/") or "/"
    if not cwd.startswith("/"):
        raise FatalError(
            f"HOME is {os.fspath(home)!r}, not an absolute path, so senpi's agent dir depends "
            "on the folder it starts in; set HOME to your home folder"
        )
    return resolve(rule, env, cwd, home)


def agent_dir_variables(rule: AgentDirRule, env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Every environment variable the rule reads (given `env`, also the brand profile's own names)."""
    profile = brand_profile(rule.brand, env) if rule.brand and env is not None else None
    app_name = (profile.name if profile else None) or rule.app_name
    names = [rule.brand.variable] if rule.brand else []
    names += [
        *names_read(rule, rule.agent_dir_env, profile, app_name),
        *names_read(rule, rule.package_dir_env, profile, None),
    ]
    return tuple(dict.fromkeys([*names, HOME_VARIABLE]))


def default_agent_dir(env: Mapping[str, str] | None = None) -> Path:
    """The agent dir as the newest known rule resolves it from the home folder, without reading an
    install (for `paths` and for finding sessions when no senpi is installed): the first defined of
    SENPI_CODING_AGENT_DIR, PI_CODING_AGENT_DIR (empty: the default), `~` expanded; else
    ~/.senpi/agent. `status` shows the one each install really uses."""
    env = os.environ if env is None else env
    home = node_home(env)
    found = _first_defined(env, ("SENPI_CODING_AGENT_DIR", "PI_CODING_AGENT_DIR"))
    if found is not None and found[1]:
        return _absolute(_normalize(home) or "/", _expand(found[1], home))
    return Path(_join(home, ".senpi", "agent"))
