"""Shared by the subcommands: which installs, the patch and config, printing outcomes."""

from __future__ import annotations

import argparse
from pathlib import Path

from senpi_guard import discover
from senpi_guard.core.patch import definition
from senpi_guard.errors import FatalError
from senpi_guard.io import config as config_mod
from senpi_guard.io import reader, store


def add_root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--root",
        action="append",
        type=Path,
        default=[],
        metavar="PKG_DIR",
        help="a senpi package dir (repeatable); skips discovery",
    )


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def add_foreign_root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-foreign-root",
        action="store_true",
        help="as root, run node's replays as root, whoever's code it is (default: as its owner, or nobody)",
    )


def add_install_options(parser: argparse.ArgumentParser) -> None:
    """--root and --json: the options of every command that works on installs."""
    add_root(parser)
    add_json(parser)


class NoInstallFound(FatalError):
    pass


PROBE_CACHE_AGE = 600.0  # seconds a read-only command trusts package managers' remembered answers


def installs(args, cache_dir: Path | None = None, store_copies: bool = False) -> list[discover.Install]:
    """The installs named by --root, else every one found. With `cache_dir` (read-only commands),
    the package managers' answers come from a cache there at most PROBE_CACHE_AGE old;
    `store_copies` (revert, uninstall): a recorded install pnpm left in its store is one too."""
    cache = discover.ProbeCache.load(cache_dir / store.PROBES_FILE, PROBE_CACHE_AGE) if cache_dir else None
    if args.root:
        found = discover.explicit(args.root)
    else:  # (and every install the state records: one shadowed on PATH, or patched with --root)
        recorded = store.Store().recorded_installs()
        found = discover.discover(cache=cache, recorded=recorded, store_copies=store_copies)
    if not found.installs:
        raise NoInstallFound(
            "no senpi install found: install @code-yeongyu/senpi, pass --root PKG_DIR, or run "
            "`senpi-guard demo` to see it work on a sample; searched " + "; ".join(found.searched)
        )
    return found.installs


def load() -> tuple[list[definition.Patch], config_mod.Config]:
    """Every patch and the config, every patch's settings checked (one line on the first problem)."""
    patches = definition.load_all()
    config = config_mod.load()
    definition.check_config(patches, config)
    reader.use(config)  # (the caps of what is read that the config may raise)
    return patches, config
