"""User-level service definitions (systemd user unit, launchd agent), generated from data."""

from __future__ import annotations

import plistlib
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from senpi_guard.errors import FatalError

LABEL = "io.github.senpi-guard"
UNIT_NAME = "senpi-guard.service"


class ServiceSpec(NamedTuple):
    description: str
    argv: list[str]


def watch_command() -> list[str]:
    """The absolute command that runs this senpi-guard's watcher."""
    script = shutil.which("senpi-guard")
    here = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if here is not None and here.name == "senpi-guard" and here.is_file():
        return [str(here), "watch", "--quiet"]
    if script is not None:
        return [str(Path(script).resolve()), "watch", "--quiet"]
    return [str(Path(sys.executable).resolve()), "-m", "senpi_guard", "watch", "--quiet"]


def spec() -> ServiceSpec:
    return ServiceSpec("senpi-guard: keep senpi's prompt dedupe patched across updates",
                       watch_command())


def systemd_unit(service: ServiceSpec) -> str:
    sections = {
        "Unit": [("Description", service.description),
                 ("After", "default.target")],
        "Service": [("Type", "simple"),
                    ("ExecStart", " ".join(shlex.quote(a) for a in service.argv)),
                    ("Restart", "on-failure"),
                    ("RestartSec", "5"),
                    ("TimeoutStopSec", "5")],
        "Install": [("WantedBy", "default.target")],
    }
    return "\n\n".join(f"[{name}]\n" + "\n".join(f"{k}={v}" for k, v in items)
                       for name, items in sections.items()) + "\n"


def launchd_plist(service: ServiceSpec, log_dir: Path) -> bytes:
    return plistlib.dumps({
        "Label": LABEL,
        "ProgramArguments": service.argv,
        "RunAtLoad": True,
        "KeepAlive": True,
        "StandardOutPath": str(log_dir / "launchd.out.log"),
        "StandardErrorPath": str(log_dir / "launchd.err.log"),
    })


def systemd_unit_path() -> Path:
    from senpi_guard import store
    return store.config_dir().parent / "systemd" / "user" / UNIT_NAME


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
