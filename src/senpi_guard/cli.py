"""senpi-guard's command line: parse, dispatch through an explicit table, and turn errors into one
clean line and an exit code (1 an error the user can act on, 2 usage, 3 unexpected, 130 ^C, 143 SIGTERM)."""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import os
import re
import shlex
import signal
import sys
import textwrap
import threading
from itertools import islice
from pathlib import Path
from types import ModuleType

from senpi_guard import __version__, ui
from senpi_guard.errors import FatalError, UsageError
from senpi_guard.io import config as config_mod
from senpi_guard.io import logs, store

# The subcommands, in the order `--help` lists them, and the module that implements each (it has
# SUMMARY, EXAMPLE, EXITS, configure(parser) and run(args) -> int). Only the module of the command
# being run is imported: `status` must not pay for what `audit` or `watch` need.
COMMANDS: dict[str, str] = {
    name: f"senpi_guard.commands.{name}"
    for name in (
        "apply",
        "status",
        "verify",
        "revert",
        "uninstall",
        "watch",
        "daemon",
        "audit",
        "demo",
        "check",
        "export",
        "paths",
        "completion",
    )
}


def command_module(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name])


VALUED = ("--config", "--color")  # the top-level options that take a value


def _chosen(argv: list[str]) -> str | None:
    """The subcommand named in argv (skipping the values of the top-level options), if any."""
    words = iter(argv)
    for arg in words:
        if arg in VALUED:
            next(words, None)
        elif not arg.startswith("-"):
            return arg
    return None


JSON_KEY = {"audit": "sessions", "check": "patches"}  # the list key of a command's --json output; default "installs"


def _paragraphs(text: str) -> list[str]:
    """The lines of a description or epilog, a sentence the source broke over lines joined again
    (a line ending in `.` or `:`, a blank one or an indented one, as an example, stands alone)."""
    out: list[str] = []
    for line in text.splitlines():
        joins = out and out[-1].strip() and not out[-1][:1].isspace() and not out[-1].endswith((".", ":"))
        if joins and line.strip() and not line[:1].isspace():
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs wrapped to the terminal at words, each paragraph on its own (an
    example keeps its indent; its continuation goes four further)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for line in _paragraphs(text):
            lead = line[: len(line) - len(line.lstrip())]
            out.append(
                textwrap.fill(
                    line.strip(),
                    width,
                    initial_indent=indent + lead,
                    subsequent_indent=indent + lead + ("    " if lead else ""),
                    break_on_hyphens=False,
                    break_long_words=False,
                )
                if line.strip()
                else ""
            )
        return "\n".join(out)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors exit 2 through main(), like every other error
        raise UsageError(f"{message}{_did_you_mean(self, message)} (see `{self.prog} --help`)")


# Words users reach for that name a command by what it does, matched (typos included) beside the
# commands' own names: `install` means `apply`, though it is spelled like `uninstall`.
MEANT: dict[str, str] = {
    **dict.fromkeys(("install", "setup", "patch", "enable", "fix", "dedupe"), "apply"),
    **dict.fromkeys(("info", "show", "list", "state"), "status"),
    **dict.fromkeys(("test", "validate", "prove"), "verify"),
    **dict.fromkeys(("stats", "report", "savings", "analyze", "analyse"), "audit"),
    **dict.fromkeys(("try", "sample"), "demo"),
    "service": "daemon",
    "monitor": "watch",
    "preflight": "check",
    **dict.fromkeys(("config", "dirs", "where"), "paths"),
    # (words for undoing: held here so that no other command is offered for them, `unpatch` never
    # `apply`; as these are destructive, none is offered: see DESTRUCTIVE)
    **dict.fromkeys(("unpatch", "undo", "restore", "rollback", "disable"), "revert"),
    **dict.fromkeys(("remove", "delete", "purge"), "uninstall"),
}
# Suggested only for a near-typo of their own name (one letter off or two swapped), never for a
# word that means or resembles them (`remove`, `install`).
DESTRUCTIVE = frozenset({"uninstall", "revert"})


def _near(word: str, known) -> str:
    """`; did you mean X?` for the nearest of `known` (argparse of Python 3.11 does not suggest)."""
    names = {name: name for name in known}
    words = {meant: name for meant, name in MEANT.items() if name in names} | names
    near = difflib.get_close_matches(word, list(words), n=1, cutoff=0.6)
    if not near or (words[near[0]] in DESTRUCTIVE and not _one_edit(word, words[near[0]])):
        return ""
    return f"; did you mean `{words[near[0]]}`?"


def _one_edit(typed: str, name: str) -> bool:
    """At most one letter missing, extra or wrong, or two neighbours swapped."""
    if abs(len(typed) - len(name)) > 1:
        return False
    i = next((i for i, (a, b) in enumerate(zip(typed, name, strict=False)) if a != b), min(len(typed), len(name)))
    swapped = typed[i + 1 : i + 2] + typed[i : i + 1] + typed[i + 2 :]
    return name[i + 1 :] in (typed[i + 1 :], typed[i:]) or typed[i + 1 :] == name[i:] or swapped == name[i:]


def _did_you_mean(parser: argparse.ArgumentParser, message: str) -> str:
    """For a mistyped command or sub-action (`daemon instal`): the nearest of that parser's choices."""
    match = re.match(r"argument [^:]+: invalid choice: '([^']*)'", message)
    if not match:
        return ""
    return _near(match[1], [choice for action in parser._actions if action.choices for choice in action.choices])


def _unknown_options(parser: argparse.ArgumentParser, command: str | None, extra: list[str]) -> str:
    """`unrecognized arguments: …`, with the nearest option for a mistyped one (`--jsn`), or the
    commands that take an option this one does not (`uninstall --root`)."""
    known = list(parser._option_string_actions)
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if command and sub is not None and command in sub.choices:
        known += list(sub.choices[command]._option_string_actions)
    option = next((arg.split("=", 1)[0] for arg in extra if arg.startswith("--")), None)
    hint = _near(option, known) if option else ""
    if command and option and option not in known:
        taking = _commands_taking()
        if others := _of(taking, option):
            hint = f"; `{command}` takes no {option} (it is an option of {others})"
        else:  # (a typo of another command's option: that one, not a far-fetched one of this command's)
            near = difflib.get_close_matches(option, [*known, *{o for opts in taking.values() for o in opts}], 1, 0.6)
            if near and near[0] not in known:
                hint = f"; did you mean {near[0]}? `{command}` takes none (it is an option of {_of(taking, near[0])})"
    return f"unrecognized arguments: {' '.join(extra)}{hint}"


def _misplaced(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """For a command's own options given before the command (`--dry-run apply`): where they go, as
    the command line with them moved after the command; None for anything else."""
    at = 0
    while at < len(argv) and argv[at] not in COMMANDS and argv[at] != "--":
        at += 2 if argv[at] in VALUED else 1
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if sub is None or at >= len(argv) or argv[at] not in COMMANDS:
        return None
    command, child = argv[at], sub.choices[argv[at]]._option_string_actions
    kept: list[str] = []
    moved: list[str] = []
    options: list[str] = []
    words = iter(argv[:at])
    for arg in words:
        name, given = arg.split("=", 1)[0], "=" in arg
        if name in parser._option_string_actions:
            kept += [arg, *islice(words, int(name in VALUED and not given))]
        elif name in child and (child[name].nargs != 0 or not given):
            moved += [arg, *islice(words, int(child[name].nargs != 0 and not given))]  # (with its value)
            options.append(name)
        else:
            return None
    if not options:
        return None
    line = shlex.join(["senpi-guard", *kept, command, *moved, *argv[at + 1 :]])
    if len(options) == 1:
        return f"`{options[0]}` is an option of {command}: put it after the command: {line}"
    return f"{', '.join(f'`{o}`' for o in options)} are options of {command}: put them after the command: {line}"


def _of(taking: dict[str, set[str]], option: str) -> str:
    return ", ".join(name for name, options in taking.items() if option in options)


def _commands_taking() -> dict[str, set[str]]:
    """Each command's options (every command's module loaded: an error's path)."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {name: set(child._option_string_actions) for name, child in sub.choices.items()}


def _paths_epilog() -> str:
    where = store.Store()
    return (
        f"files:\n  config  {config_mod.config_file()}  (or $SENPI_GUARD_CONFIG)\n"
        f"  data    {where.data_dir}  (backups of original bytes)\n"
        f"  state   {where.state_dir}  (records, write lock, watcher pid)\n"
        f"  logs    {store.log_dir()}\n"
        f"  cache   {store.cache_dir()}  (only to be faster; the one folder `status` writes to)\n"
        "`senpi-guard paths` shows the effective config and every path."
    )


def _globals(parser: argparse.ArgumentParser, top: bool) -> None:
    """The options every command takes, before or after its name."""
    _verbosity(parser, 0 if top else argparse.SUPPRESS)
    default = {} if top else {"default": argparse.SUPPRESS}
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        **({"default": None} | default),
        help="the config file to use (as $SENPI_GUARD_CONFIG; the watcher and service keep it)",
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        **({"default": "auto"} | default),
        help="colour: auto (a terminal, unless NO_COLOR; FORCE_COLOR forces it), always, never",
    )


def _verbosity(parser: argparse.ArgumentParser, default) -> None:
    parser.add_argument(
        "-q",
        "--quiet",
        dest="verbosity",
        action="store_const",
        const=-1,
        default=default,
        help="print only what failed (watch: log to the log file only)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        dest="verbosity",
        action="count",
        default=default,
        help="full paths, backup paths, wide tables, the whole diff (its very long compiled lines "
        "clipped around the change); -vv: those lines whole (watch: each round's start and end logged too)",
    )


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The full parser; with `chosen` (a known command), only that command's module is loaded."""
    parser = _Parser(
        prog="senpi-guard",
        formatter_class=_Formatter,
        description="Keep senpi's prompt free of repeated directive blocks: patch every install, "
        "verified by replay with node, and keep it patched across `senpi update`.",
        epilog="start here:\n"
        "  senpi-guard demo             see it work on a sample (yours stays untouched)\n"
        "  senpi-guard status           each senpi found and its state (read-only)\n"
        "  senpi-guard apply            patch every senpi install\n"
        "  senpi-guard daemon install   keep it patched across updates\n\n" + _paths_epilog(),
    )
    parser.add_argument("-V", "--version", action="version", version=f"senpi-guard {__version__}")
    _globals(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        if chosen in COMMANDS and name != chosen:
            sub.add_parser(name)  # never shown: the help printed is the chosen command's own
            continue
        module = command_module(name)
        child = sub.add_parser(
            name,
            help=module.SUMMARY,
            formatter_class=_Formatter,
            description=getattr(module, "DESCRIPTION", module.SUMMARY[0].upper() + module.SUMMARY[1:] + "."),
            epilog=f"example:\n  {module.EXAMPLE}\n\nexit codes:\n  {module.EXITS}; 2 usage; "
            "3 unexpected (a log names the traceback); 130 interrupted",
        )
        _globals(child, top=False)
        module.configure(child)
    return parser


def _fail(args, message: str) -> None:
    print(f"senpi-guard: {message}", file=sys.stderr)
    if getattr(args, "json", False):  # --json promises JSON on stdout, errors included
        print(json.dumps({JSON_KEY.get(args.command, "installs"): [], "error": message.removeprefix("error: ")}))


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is (as ^C is), so every cleanup on the way runs."""


_terminations: list[int] = []  # SIGTERMs received by this run


def _terminate(signum, _frame) -> None:
    _terminations.append(signum)
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    previous = signal.signal(signal.SIGTERM, _terminate)  # (`watch` sets its own)
    _terminations.clear()
    try:
        code = _main(argv)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if _terminations and code != 143:  # raised where Python drops it (a __del__, an at-fork hook)
        print("senpi-guard: terminated (SIGTERM) after its work had finished", file=sys.stderr)
        return 143
    return code


def _main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    parser = build_parser(_chosen(argv))
    args = argparse.Namespace(command=None)
    try:
        if misplaced := _misplaced(parser, argv):
            raise UsageError(misplaced)
        args, extra = parser.parse_known_args(argv)
        if extra:  # (argparse blames the top parser: point at the command's own help)
            where = f"senpi-guard {args.command}" if args.command else "senpi-guard"
            raise UsageError(f"{_unknown_options(parser, args.command, extra)} (see `{where} --help`)")
        ui.configure(args.verbosity, args.color)
        if args.config is not None:  # (for this process and every one it starts)
            os.environ["SENPI_GUARD_CONFIG"] = str(args.config.absolute())
        if args.command is None:
            parser.print_help()
            return 0
        return command_module(args.command).run(args)
    except UsageError as exc:
        if not getattr(args, "json", False) and "--json" in argv:  # (parsing stopped before it saw --json)
            command = _chosen(argv)
            args = argparse.Namespace(command=command if command in COMMANDS else None, json=True)
        _fail(args, str(exc))
        return 2
    except FatalError as exc:
        _fail(args, f"error: {exc}")
        return 1
    except Terminated:
        print("senpi-guard: terminated (SIGTERM); stopped, its temporary files removed", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("senpi-guard: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`| head`): say nothing more, as Python's docs advise for SIGPIPE
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # the last line of defence: one line and a log
        _fail(args, logs.unexpected(exc))
        return 3
