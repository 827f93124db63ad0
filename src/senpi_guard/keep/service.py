"""User-level service definitions (systemd user unit, launchd agent), generated from data.

A user service starts in the manager's bare environment (systemd: PATH=/usr/local/bin:/usr/bin:/bin;
launchd: /usr/bin:/bin:/usr/sbin:/sbin), where an nvm/fnm/volta/asdf or Homebrew node is not found.
So the service records what the watcher needs: the absolute node and package managers resolved at
`daemon install`, a PATH holding their folders, and the variables that say where things live."""

from __future__ import annotations

import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from senpi_guard.errors import FatalError
from senpi_guard.prove import nodes

LABEL = "io.github.senpi-guard"
UNIT_NAME = "senpi-guard.service"
SYSTEMD_PATH = "/usr/local/bin:/usr/bin:/bin"
LAUNCHD_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
TOOLS = ("node", "npm", "pnpm", "yarn", "bun")
# Where things live: passed on when set, so the service finds what the user's shell finds.
PASSED_ON = ("HOME", "NPM_CONFIG_PREFIX", "PNPM_HOME", "BUN_INSTALL", "NVM_DIR", "FNM_DIR",
             "VOLTA_HOME", "ASDF_DATA_DIR", "YARN_GLOBAL_FOLDER", "XDG_CONFIG_HOME",
             "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "SENPI_GUARD_CONFIG",
             "SENPI_GUARD_NODE")
# Where senpi looks for its agent dir (so where the extension goes): passed on whenever *defined*,
# an empty value included (senpi reads "defined but empty" as "the default", and from 2026.8.11-2 it
# then does not fall back to PI_…). A brand profile adds its own prefix's names.
AGENT_DIR_VARIABLES = ("SENPI_BRAND", "SENPI_CODING_AGENT_DIR", "PI_CODING_AGENT_DIR", "SENPI_PACKAGE_DIR",
                       "PI_PACKAGE_DIR")


def agent_dir_variables(env: dict[str, str]) -> list[str]:
    from senpi_guard.core.agentdir import Brand, brand_profile
    profile = brand_profile(Brand("SENPI_BRAND", ("SENPI", "PI")), env)
    own = [f"{profile.env_prefix}_{suffix}" for suffix in ("CODING_AGENT_DIR", "PACKAGE_DIR")] if profile else []
    return [name for name in dict.fromkeys([*AGENT_DIR_VARIABLES, *own]) if name in env]


class ServiceSpec(NamedTuple):
    description: str
    argv: list[str]
    environment: dict[str, str]


def watch_command() -> list[str]:
    """The absolute command that runs this senpi-guard's watcher."""
    script = shutil.which("senpi-guard")
    here = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if here is not None and here.name == "senpi-guard" and here.is_file():
        return [str(here), "watch", "--quiet"]
    if script is not None:
        return [str(Path(script).resolve()), "watch", "--quiet"]
    # not resolved: a venv's python is a symlink, and only the link knows the venv
    return [os.path.abspath(sys.executable), "-m", "senpi_guard", "watch", "--quiet"]


def resolved_tools() -> dict[str, str]:
    """Absolute paths of node and the package managers as this shell finds them."""
    found = {}
    for tool in TOOLS:
        path = shutil.which(tool)
        if path:
            found[tool] = os.path.abspath(path)
    explicit = os.environ.get("SENPI_GUARD_NODE")
    if explicit:
        found["node"] = explicit
    return found


def environment(base_path: str) -> dict[str, str]:
    tools = resolved_tools()
    folders = list(dict.fromkeys(str(Path(p).parent) for p in tools.values()))
    path = ":".join(dict.fromkeys([*folders, *base_path.split(":")]))
    env = {"PATH": path}
    if "node" in tools:
        env[nodes.RECORDED] = tools["node"]
    env.update({k: os.environ[k] for k in PASSED_ON if os.environ.get(k)})
    env.update({k: os.environ[k] for k in agent_dir_variables(dict(os.environ))})
    return env


def spec(base_path: str = SYSTEMD_PATH) -> ServiceSpec:
    return ServiceSpec("senpi-guard: keep senpi's prompt dedupe patched across updates",
                       watch_command(), environment(base_path))


# ---- systemd: quoting per systemd.syntax / systemd.service, and its inverse ---------------------
def _quoted(text: str, dollar: bool) -> str:
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    text = text.replace("\n", "\\n")
    return '"' + (text.replace("$", "$$") if dollar else text) + '"'


def systemd_unit(service: ServiceSpec) -> str:
    environment_lines = [("Environment", _quoted(f"{k}={v}", dollar=False))
                         for k, v in service.environment.items()]
    sections = {
        "Unit": [("Description", service.description.replace("%", "%%")),
                 ("After", "default.target")],
        "Service": [("Type", "simple"),
                    *environment_lines,
                    ("ExecStart", " ".join(_quoted(a, dollar=True) for a in service.argv)),
                    ("ExecReload", "/bin/kill -HUP $MAINPID"),
                    ("Restart", "on-failure"),
                    ("RestartSec", "5"),
                    ("TimeoutStopSec", "5")],
        "Install": [("WantedBy", "default.target")],
    }
    return "\n\n".join(f"[{name}]\n" + "\n".join(f"{k}={v}" for k, v in items)
                       for name, items in sections.items()) + "\n"


_WORD = re.compile(r'"((?:[^"\\]|\\.)*)"|(\S+)')


def _unquote(word: str) -> str:
    out, i = [], 0
    while i < len(word):
        if word[i] == "\\" and i + 1 < len(word):
            out.append({"n": "\n", "t": "\t"}.get(word[i + 1], word[i + 1]))
            i += 2
        else:
            out.append(word[i])
            i += 1
    return "".join(out)


def _words(value: str, dollar: bool) -> list[str]:
    words = []
    for match in _WORD.finditer(value):
        word = _unquote(match[1]) if match[1] is not None else match[2]
        word = word.replace("%%", "%")
        words.append(word.replace("$$", "$") if dollar else word)
    return words


def read_systemd_unit(text: str) -> tuple[list[str], dict[str, str]]:
    """ExecStart's argv and the Environment= values, as systemd would pass them."""
    argv: list[str] = []
    env: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key == "ExecStart":
            argv = _words(value, dollar=True)
        elif key == "Environment":
            for word in _words(value, dollar=False):
                name, _, val = word.partition("=")
                env[name] = val
    return argv, env


def launchd_plist(service: ServiceSpec, log_dir: Path) -> bytes:
    return plistlib.dumps({
        "Label": LABEL,
        "ProgramArguments": service.argv,
        "EnvironmentVariables": service.environment,
        "RunAtLoad": True,
        "KeepAlive": True,
        "StandardOutPath": str(log_dir / "launchd.out.log"),
        "StandardErrorPath": str(log_dir / "launchd.err.log"),
    })


def systemd_unit_path() -> Path:
    from senpi_guard.io import config
    return config.config_dir().parent / "systemd" / "user" / UNIT_NAME


def launchd_plist_path() -> Path:
    return Path.home() / "Library" / "LaunchAgents" / f"{LABEL}.plist"


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FatalError(f"`{' '.join(argv)}` could not run ({exc})") from exc


def systemd_available() -> str | None:
    """None when `systemctl --user` works here, else why not."""
    if shutil.which("systemctl") is None:
        return "systemctl is not installed"
    probe = run(["systemctl", "--user", "show-environment"])
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or ["no user service manager"])[-1]
        return f"systemctl --user does not work here ({reason})"
    return None


def manual_command(service: ServiceSpec) -> str:
    """The same service as one shell line, for a supervisor of the user's own."""
    env = " ".join(shlex.quote(f"{k}={v}") for k, v in service.environment.items())
    return f"env -i {env} " + " ".join(shlex.quote(a) for a in service.argv)
