"""`senpi-guard daemon install | uninstall | status`: run the watcher as a user service."""

from __future__ import annotations

import json
import plistlib
import shlex
import shutil
import sys
from pathlib import Path

from senpi_guard.errors import FatalError
from senpi_guard.io import made, reader, store
from senpi_guard.io.write import os_error, write_private
from senpi_guard.keep import service
from senpi_guard.prove import nodes

SUMMARY = "run the watcher as a user service (systemd user unit or launchd agent)"
EXAMPLE = (
    "senpi-guard daemon install    # write the unit, enable and start it\n"
    "  senpi-guard daemon status     # installed / enabled / running\n"
    "  senpi-guard daemon uninstall  # stop, disable and remove it"
)
EXITS = "0 done (status: installed and running); 1 no user service manager (install writes nothing), or it refused"
DESCRIPTION = (
    "install: write a systemd user unit (Linux) or a launchd agent (macOS) that runs "
    "`senpi-guard watch`, then enable and start it. uninstall: stop, disable and remove it "
    "(your installs stay as they are; run `senpi-guard revert` to unpatch them). status: whether "
    "the service is installed, enabled and running. Without a user service manager, install "
    "writes nothing and prints the `senpi-guard watch` command to run yourself instead."
)


def configure(parser) -> None:
    parser.add_argument("action", choices=("install", "uninstall", "status"), help="install, uninstall or status")
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object on stdout (what was done, or the status); the lines otherwise printed go to stderr",
    )


def _manual(reason: str) -> FatalError:
    return FatalError(
        f"{reason}; run the watcher under your own supervisor instead: {service.manual_command(service.spec())}"
    )


def _print_environment(argv: list[str], env: dict[str, str]) -> None:
    """What the service runs, and the environment it runs with (node, PATH, where things live)."""
    print(f"runs      {' '.join(shlex.quote(a) for a in argv) if argv else '(no command recorded)'}")
    node = env.get(nodes.RECORDED)
    print(f"node      {node or 'none recorded: the service finds node on its PATH only'}")
    for key, value in env.items():
        if key != nodes.RECORDED:
            print(f"  {key}={value if value.isprintable() else repr(value)}")  # one line each


class _Done:
    """What install or uninstall did: a line each as it happens (on stderr with --json, where stdout
    carries only the JSON object printed at the end)."""

    def __init__(self, action: str, as_json: bool) -> None:
        self.as_json = as_json
        self.facts: dict = {"action": action}

    def say(self, line: str, **facts) -> None:
        print(line, file=sys.stderr if self.as_json else sys.stdout)
        self.facts.update(facts)

    def finish(self) -> int:
        if self.as_json:
            print(json.dumps({**self.facts, "ok": True}, indent=2))
        return 0


def _show_recorded(spec: service.ServiceSpec, done: _Done) -> None:
    node = spec.environment.get(nodes.RECORDED)
    done.say(
        f"recorded  node {node or 'not found on PATH'}; PATH {spec.environment['PATH']}",
        node=node,
        path=spec.environment["PATH"],
    )


def _unit_place(unit: Path, action: str) -> bool:
    """Whether the unit file is there; FatalError, before anything is changed, when its place holds
    something else (a file where a folder belongs, a folder where the unit belongs)."""
    again = f"then run `senpi-guard daemon {action}` again"
    try:
        folder = next(f for f in (unit.parent, *unit.parent.parents) if f.exists())
        if not folder.is_dir():
            raise FatalError(
                f"{folder} is a file, but systemd user units live in the folder {unit.parent}: "
                f"move that file aside (e.g. `mv {folder} {folder}.bak`), {again}"
            )
        if unit.exists() and not unit.is_file():
            kind = "a folder" if unit.is_dir() else "not a regular file"
            raise FatalError(
                f"{unit} is {kind}, where senpi-guard's unit file belongs: move it aside "
                f"(e.g. `mv {unit} {unit}.bak`), {again}"
            )
        return unit.exists()
    except OSError as exc:
        raise os_error(exc, "look at", unit, f"fix that folder's permissions, {again}") from exc


def _read_unit(unit: Path) -> str:
    try:
        return reader.read(unit, reader.SERVICE).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FatalError(
            f"{unit} is not UTF-8 text, so it is not a unit senpi-guard wrote: run "
            "`senpi-guard daemon install` to replace it, or `senpi-guard daemon uninstall` "
            "to remove it"
        ) from exc
    except OSError as exc:
        raise os_error(exc, "read", unit, "fix its permissions, then run `senpi-guard daemon status` again") from exc


def _install_linux(unit: Path, done: _Done) -> int:
    spec = service.spec(service.SYSTEMD_PATH)
    text = service.systemd_unit(spec)  # refuses what systemd could not be told, before any change
    _unit_place(unit, "install")
    why = service.no_user_manager()
    if why:
        return _no_manager(why, done.as_json)
    try:
        made.mkdirs(unit.parent)  # (recorded: `uninstall` removes it again when empty)
    except OSError as exc:
        raise os_error(
            exc, "create", unit.parent, "fix that folder's permissions, then run `senpi-guard daemon install` again"
        ) from exc
    write_private(unit, text.encode())
    done.say(f"wrote {unit}", unit=str(unit), written=True)
    _show_recorded(spec, done)
    for argv in (
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", service.UNIT_NAME],
    ):
        result = service.run(argv)
        if result.returncode != 0:
            raise FatalError(f"`{' '.join(argv)}` failed: {result.stderr.strip()[-300:]}")
    done.say(f"enabled and started {service.UNIT_NAME}", enabled=True, started=True)
    return done.finish()


def remove() -> list[Path]:
    """Stop, disable and remove the user service (`daemon uninstall`, and `uninstall`'s): the
    service file removed, or none when none was installed."""
    if sys.platform == "darwin":
        return _remove_macos(service.launchd_plist_path())
    if sys.platform.startswith("linux"):
        return _remove_linux(service.systemd_unit_path())
    raise _manual(f"no user service manager is supported on {sys.platform}")


def _uninstall(unit: Path, done: _Done) -> int:
    removed = remove()
    done.say(f"removed {unit}" if removed else f"{unit} was not installed", unit=str(unit), removed=bool(removed))
    return done.finish()


def _remove_linux(unit: Path) -> list[Path]:
    existed = _unit_place(unit, "uninstall")
    why = service.systemd_available()
    if not why:
        service.run(["systemctl", "--user", "disable", "--now", service.UNIT_NAME])
    try:
        unit.unlink(missing_ok=True)
    except OSError as exc:
        raise os_error(
            exc, "remove", unit, "fix that folder's permissions, then run `senpi-guard daemon uninstall` again"
        ) from exc
    if not why:
        service.run(["systemctl", "--user", "daemon-reload"])
    return [unit] if existed else []


def _linux(action: str, as_json: bool = False) -> int:
    unit = service.systemd_unit_path()
    if action == "status":
        return _status_linux(unit, as_json)
    done = _Done(action, as_json)
    return _install_linux(unit, done) if action == "install" else _uninstall(unit, done)


def _status_linux(unit: Path, as_json: bool) -> int:
    installed = _unit_place(unit, "status")
    text = _read_unit(unit) if installed else None
    why = service.systemd_available()
    enabled = active = "unknown"
    if not why:
        enabled = service.run(["systemctl", "--user", "is-enabled", service.UNIT_NAME]).stdout.strip()
        active = service.run(["systemctl", "--user", "is-active", service.UNIT_NAME]).stdout.strip()
    running = store.Store().running_watcher()
    argv, env = service.read_systemd_unit(text) if text is not None else ([], {})
    ok = installed and bool(running or active == "active")
    if as_json:
        print(
            json.dumps(
                {
                    "unit": str(unit),
                    "installed": installed,
                    "enabled": enabled,
                    "active": active,
                    "service_manager": why or "systemd --user",
                    "watcher": running,
                    "command": argv,
                    "environment": env,
                    "ok": ok,
                },
                indent=2,
            )
        )
        return 0 if ok else 1
    print(f"unit      {unit} ({'installed' if installed else 'not installed'})")
    print(f"enabled   {enabled}" + (f" ({why})" if why else ""))
    print(f"active    {active}")
    print("watcher   " + (f"running, pid {running['pid']}" if running else "not running"))
    if text is not None:
        _print_environment(argv, env)
    return 0 if ok else 1


def _remove_macos(plist: Path) -> list[Path]:
    if shutil.which("launchctl") is None:
        raise _manual("launchctl is not available")
    if not plist.exists():
        return []
    service.run(["launchctl", "unload", "-w", str(plist)])
    plist.unlink()
    return [plist]


def _macos(action: str, as_json: bool = False) -> int:
    plist = service.launchd_plist_path()
    why = service.no_user_manager() if action == "install" else None
    if why:
        return _no_manager(why, as_json)
    if shutil.which("launchctl") is None:
        raise _manual("launchctl is not available")
    done = _Done(action, as_json)
    if action == "install":
        made.mkdirs(plist.parent)
        spec = service.spec(service.LAUNCHD_PATH)
        write_private(plist, service.launchd_plist(spec, store.log_dir()))
        _show_recorded(spec, done)
        result = service.run(["launchctl", "load", "-w", str(plist)])
        if result.returncode != 0:
            raise FatalError(f"launchctl load {plist} failed: {result.stderr.strip()[-300:]}")
        done.say(f"loaded {plist}", unit=str(plist), written=True, loaded=True)
        return done.finish()
    if action == "uninstall":
        return _uninstall(plist, done)
    listed = service.run(["launchctl", "list", service.LABEL]).returncode == 0
    try:
        data = plistlib.loads(reader.read(plist, reader.SERVICE)) if plist.exists() else {}
    except (plistlib.InvalidFileException, ValueError, OSError) as exc:
        raise FatalError(
            f"{plist} is not a readable property list ({exc}); move it aside, then run "
            "`senpi-guard daemon install` again"
        ) from exc
    argv, env = data.get("ProgramArguments", []), data.get("EnvironmentVariables", {})
    if as_json:
        print(
            json.dumps(
                {
                    "unit": str(plist),
                    "installed": plist.exists(),
                    "loaded": listed,
                    "service_manager": "launchd",
                    "command": argv,
                    "environment": env,
                    "ok": listed,
                },
                indent=2,
            )
        )
        return 0 if listed else 1
    print(f"agent     {plist} ({'installed' if plist.exists() else 'not installed'})")
    print(f"loaded    {'yes' if listed else 'no'}")
    if plist.exists():
        _print_environment(argv, env)
    return 0 if listed else 1


def _no_manager(why: str, as_json: bool) -> int:
    """install where no user service manager answers: nothing written; the watcher's command to run
    instead, on a line of its own (on stdout; in the JSON object with --json)."""
    line = f"no user service manager here ({why}); nothing written. Run the watcher yourself:"
    print(f"senpi-guard: error: {line}", file=sys.stderr, flush=True)
    command = service.watch_line()
    if as_json:
        print(json.dumps({"action": "install", "error": line, "watch": command, "ok": False}, indent=2))
    else:
        print(command)
    return 1


def run(args) -> int:
    if sys.platform == "darwin":
        return _macos(args.action, args.json)
    if sys.platform.startswith("linux"):
        return _linux(args.action, args.json)
    if args.action == "install":
        return _no_manager(service.no_user_manager() or sys.platform, args.json)
    raise _manual(f"no user service manager is supported on {sys.platform}")
