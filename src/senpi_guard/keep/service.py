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
# The commands discover.discover() follows on PATH to find an install.
PATH_COMMANDS = ("senpi", "pi")
# Where things live: passed on when set, so the service finds what the user's shell finds.
PASSED_ON = (
    "HOME",
    "NPM_CONFIG_PREFIX",
    "npm_config_prefix",
    "PNPM_HOME",
    "BUN_INSTALL",
    "NVM_DIR",
    "FNM_DIR",
    "VOLTA_HOME",
    "ASDF_DATA_DIR",
    "YARN_GLOBAL_FOLDER",
    "PREFIX_YARN",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "SENPI_GUARD_CONFIG",
    "SENPI_GUARD_NODE",
)
# Where senpi looks for its agent dir (so where the extension goes): passed on whenever *defined*,
# an empty value included (senpi reads "defined but empty" as "the default", and from 2026.8.11-2 it
# then does not fall back to PI_…). A brand profile adds its own prefix's names.
AGENT_DIR_VARIABLES = (
    "SENPI_BRAND",
    "SENPI_CODING_AGENT_DIR",
    "PI_CODING_AGENT_DIR",
    "SENPI_PACKAGE_DIR",
    "PI_PACKAGE_DIR",
)


def agent_dir_variables(env: dict[str, str]) -> list[str]:
    from senpi_guard.core.agentdir import Brand, brand_profile

    profile = brand_profile(Brand("SENPI_BRAND", ("SENPI", "PI")), env)
    own = [f"{profile.env_prefix}_{suffix}" for suffix in ("CODING_AGENT_DIR", "PACKAGE_DIR")] if profile else []
    return [name for name in dict.fromkeys([*AGENT_DIR_VARIABLES, *own]) if name in env]


class ServiceSpec(NamedTuple):
    description: str
    argv: list[str]
    environment: dict[str, str]


def watch_command(quiet: bool = True) -> list[str]:
    """The absolute command that runs this senpi-guard's watcher (`quiet`: it logs to its log file only)."""
    script = shutil.which("senpi-guard")
    here = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    tail = ["watch", "--quiet"] if quiet else ["watch"]
    if here is not None and here.name == "senpi-guard" and here.is_file():
        return [str(here), *tail]
    if script is not None:
        return [str(Path(script).resolve()), *tail]
    # not resolved: a venv's python is a symlink, and only the link knows the venv
    return [os.path.abspath(sys.executable), "-m", "senpi_guard", *tail]


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


def recorded_path(tools: dict[str, str], base_path: str) -> str:
    """The folders of the tools and of the `senpi`/`pi` commands this shell finds, in this shell's
    PATH order (so each name resolves to the same file under the service), then `base_path`. The
    commands matter because discovery follows them: an install found only through a prefix's bin
    folder on PATH is found by the service only if that folder is recorded."""
    wanted = {str(Path(p).parent) for p in tools.values()}
    wanted |= {str(Path(os.path.abspath(found)).parent) for name in PATH_COMMANDS if (found := shutil.which(name))}
    shell = [os.path.abspath(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    ordered = [folder for folder in shell if folder in wanted]
    off_path = sorted(wanted.difference(ordered))  # e.g. the folder of $SENPI_GUARD_NODE
    return ":".join(dict.fromkeys([*off_path, *ordered, *base_path.split(":")]))


def environment(base_path: str) -> dict[str, str]:
    tools = resolved_tools()
    env = {"PATH": recorded_path(tools, base_path)}
    if "node" in tools:
        env[nodes.RECORDED] = tools["node"]
    env.update({k: os.environ[k] for k in PASSED_ON if os.environ.get(k)})
    env.update({k: os.environ[k] for k in agent_dir_variables(dict(os.environ))})
    return env


def spec(base_path: str = SYSTEMD_PATH) -> ServiceSpec:
    return ServiceSpec(
        "senpi-guard: keep senpi's prompt dedupe patched across updates", watch_command(), environment(base_path)
    )


# ---- systemd: quoting per systemd.syntax / systemd.service / systemd.exec, and its inverse -------
# In a double-quoted word systemd reads C escapes, so every character has a spelling that stays on
# its line (systemd ends a line at \n, \r or \r\n). `%` starts a specifier in every setting; `$` is
# expanded in ExecStart's words, argv[0] included, but not in the program path nor in Environment=.
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNESCAPES = {value[1]: key for key, value in _ESCAPES.items()}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # systemd drops any other assignment unsaid
_UNSAFE_PROGRAM = re.compile(r"[\x00-\x1f\x7f\"'\\]")  # systemd refuses these in a program path
_AGAIN = "then run `senpi-guard daemon install` again"


def _quoted(text: str, dollar: bool) -> str:
    text = "".join(_ESCAPES.get(c) or (f"\\x{ord(c):02x}" if c < " " or c == "\x7f" else c) for c in text).replace(
        "%", "%%"
    )
    return '"' + (text.replace("$", "$$") if dollar else text) + '"'


def _is_text(value: str) -> bool:
    """UTF-8 once written and free of NUL: what a unit file can carry."""
    try:
        value.encode("utf-8")  # undecodable bytes in os.environ/argv arrive as lone surrogates
    except UnicodeEncodeError:
        return False
    return "\0" not in value


def _refuse_unrepresentable(service: ServiceSpec) -> None:
    for name, value in service.environment.items():
        if not _ENV_NAME.fullmatch(name):
            raise FatalError(
                f"the environment variable {name!r} cannot be recorded in a systemd unit "
                "(systemd ignores names other than letters, digits and _): run "
                f"`env -u {shlex.quote(name)} senpi-guard daemon install` instead"
            )
        if not _is_text(value):
            raise FatalError(
                f"${name} holds bytes that are not UTF-8 text, which a systemd unit cannot "
                f"carry: fix or unset {name}, {_AGAIN}"
            )
    program = service.argv[0]
    if not (_is_text(program) and os.path.isabs(program)) or _UNSAFE_PROGRAM.search(program):
        raise FatalError(
            f"senpi-guard runs from {program!r}, which systemd does not accept as the program "
            "of ExecStart= (it must be an absolute UTF-8 path without quotes, backslashes or "
            f"control characters): install senpi-guard under a plain path, {_AGAIN}"
        )
    for word in service.argv[1:]:
        if not _is_text(word):
            raise FatalError(
                f"the argument {word!r} of senpi-guard's command is not UTF-8 text, which "
                f"a systemd unit cannot carry: install senpi-guard under a plain path, {_AGAIN}"
            )


def _exec_start(argv: list[str]) -> str:
    words = [_quoted(argv[0], dollar=False), *(_quoted(a, dollar=True) for a in argv[1:])]
    if "$" in argv[0]:  # `@`: the program path, then argv[0] spelled for its own $-expansion
        words.insert(1, _quoted(argv[0], dollar=True))
        return "@" + " ".join(words)
    return " ".join(words)


def systemd_unit(service: ServiceSpec) -> str:
    """The unit file; FatalError (nothing to write) for what systemd could not be told exactly."""
    _refuse_unrepresentable(service)
    environment_lines = [("Environment", _quoted(f"{k}={v}", dollar=False)) for k, v in service.environment.items()]
    sections = {
        "Unit": [
            ("Description", " ".join(service.description.split()).replace("%", "%%")),
            ("After", "default.target"),
        ],
        "Service": [
            ("Type", "simple"),
            *environment_lines,
            ("ExecStart", _exec_start(service.argv)),
            ("ExecReload", "/bin/kill -HUP $MAINPID"),
            ("Restart", "on-failure"),
            ("RestartSec", "5"),
            ("TimeoutStopSec", "5"),
        ],
        "Install": [("WantedBy", "default.target")],
    }
    return (
        "\n\n".join(f"[{name}]\n" + "\n".join(f"{k}={v}" for k, v in items) for name, items in sections.items()) + "\n"
    )


_WORD = re.compile(r'"((?:[^"\\]|\\.)*)"|(\S+)')
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|.)")
_LINE_END = re.compile(r"\r\n|\r|\n")


def _unquote(word: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m[1][1:], 16)) if len(m[1]) == 3 else _UNESCAPES.get(m[1], m[1]), word)


def _words(value: str) -> list[str]:
    """Specifiers first (only `%%` is written), then the words, unquoted and unescaped."""
    return [_unquote(m[1]) if m[1] is not None else m[2] for m in _WORD.finditer(value.replace("%%", "%"))]


def _exec_argv(value: str) -> list[str]:
    words = _words(value[1:]) if value.startswith("@") else _words(value)
    if value.startswith("@"):
        del words[1:2]  # argv[0]: the program path is what runs, and what was meant
    return [*words[:1], *(word.replace("$$", "$") for word in words[1:])]


def read_systemd_unit(text: str) -> tuple[list[str], dict[str, str]]:
    """ExecStart's argv and the Environment= values, as systemd would pass them."""
    argv: list[str] = []
    env: dict[str, str] = {}
    for line in _LINE_END.split(text):
        key, _, value = line.partition("=")
        if key == "ExecStart":
            argv = _exec_argv(value)
        elif key == "Environment":
            for word in _words(value):
                name, _, val = word.partition("=")
                env[name] = val
    return argv, env


def launchd_plist(service: ServiceSpec, log_dir: Path) -> bytes:
    return plistlib.dumps(
        {
            "Label": LABEL,
            "ProgramArguments": service.argv,
            "EnvironmentVariables": service.environment,
            "RunAtLoad": True,
            "KeepAlive": True,
            "StandardOutPath": str(log_dir / "launchd.out.log"),
            "StandardErrorPath": str(log_dir / "launchd.err.log"),
        }
    )


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
        return f"systemctl --user: {reason}"
    return None


def no_user_manager() -> str | None:
    """Why no user service manager can be reached here, else None: the one answer `daemon install`
    (which then writes nothing) and `status` (which then points at `senpi-guard watch`) both use."""
    if sys.platform == "darwin":
        return None if shutil.which("launchctl") else "launchctl is not available"
    if sys.platform.startswith("linux"):
        return systemd_available()
    return f"senpi-guard supports none on {sys.platform}"


def _shell_word(text: str) -> str:
    if text.isprintable():
        return shlex.quote(text)
    # $'…' (bash, zsh, ksh; POSIX sh since 2024) spells a line break without breaking the line
    return (
        "$'"
        + "".join(
            "\\" + c
            if c in "\\'"
            else c
            if c.isprintable()
            else f"\\x{ord(c):02x}"
            if ord(c) < 0x80
            else f"\\u{ord(c):04x}"
            for c in text
        )
        + "'"
    )


def watch_line() -> str:
    """The watcher as a shell line to run yourself (in your own shell, so with your own PATH)."""
    return " ".join(_shell_word(a) for a in watch_command(quiet=False))


def manual_command(service: ServiceSpec) -> str:
    """The same service as one shell line, for a supervisor of the user's own."""
    env = " ".join(_shell_word(f"{k}={v}") for k, v in service.environment.items())
    return f"env -i {env} " + " ".join(_shell_word(a) for a in service.argv)
