"""Shared by the subcommands: which installs, the patch and config, printing outcomes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from senpi_guard import discover, ui
from senpi_guard.audit import resend
from senpi_guard.core.patch import definition
from senpi_guard.core.patch.classify import State
from senpi_guard.errors import FatalError
from senpi_guard.io import config as config_mod
from senpi_guard.io import reader, store
from senpi_guard.layers import pipeline


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


def print_results(flow, as_json: bool, next_steps: bool = False, say_changes: bool = True) -> None:
    """What a pipeline run did: the dist layer per install, then the extension layer per agent dir;
    with `say_changes`, what the patch changes on each install (its `changes` line)."""
    outcomes, layers = flow.split()
    headlines = {name: dist.patch.headline for name, dist in flow.dists.items()} if say_changes else {}
    changes = {id(o): changes_of(o, headlines.get(o.patch, ())) for o in outcomes}
    print_outcomes(outcomes, as_json, next_steps=next_steps, layers=layers, changes=changes)


def changes_of(outcome: pipeline.Outcome, headline: tuple[str, ...]) -> dict[str, Any]:
    """What the patch changes on this install, figures first (audit/resend.py); {} without a
    passed replay or headline figures."""
    report = outcome.report
    if report is None or not report.ok or not headline:
        return {}
    return resend.sentence(report.stats, headline, "upstream" in outcome.present, outcome.install.package_dir)


def outcome_json(outcome: pipeline.Outcome, changes: dict[str, Any] | None = None) -> dict[str, Any]:
    report = outcome.report
    return {
        "package_dir": str(outcome.install.package_dir),
        "version": outcome.install.version,
        "manager": outcome.install.manager,
        "target": str(outcome.install.package_dir / outcome.target) if outcome.target else "",
        "state_before": outcome.before,
        "state": outcome.after,
        "ok": outcome.ok,
        "changed": outcome.changed,
        "would_write": outcome.would_write,
        "diff": outcome.diff,  # (a dry run: the unified diff of what apply would write)
        "backups": outcome.backups,
        "patch": outcome.patch,
        "targets": sorted(outcome.present),
        "held": outcome.after == State.HELD,
        "detail": outcome.detail,
        "next": pipeline.next_step(outcome),  # (the one next-step vocabulary, as the extension's rows)
        "verification": None if report is None else report.as_json(),
        "millis": outcome.millis,
        "changes": changes or None,
    }


def proven_only(result) -> bool:
    """verify over a layer that is not installed, whose replay of what apply would write passed:
    nothing failed but that it is not there (its detail says both, on the state line)."""
    return not result.ok and result.report is not None and result.report.ok and result.after != "installed"


def state_line(o: pipeline.Outcome) -> str:
    if proven_only(o):
        return f"{ui.state_text(o.before)}: {o.detail}"
    verdict = ui.paint("ok", "good") if o.ok else ui.paint("FAILED", "bad")
    if o.would_write:
        return f"{ui.state_text(o.before)}, would write {', '.join(o.would_write)}  ({verdict}, dry run)"
    if o.before == o.after:
        return f"{ui.state_text(o.after)}  ({verdict}, {o.millis} ms, nothing changed)"
    return f"{ui.state_text(o.before)} -> {ui.state_text(o.after)}  ({verdict}, {o.millis} ms)"


WIDE = 8  # (the label column of apply's and verify's blocks: `  target   `)


def print_outcomes(
    outcomes: list[pipeline.Outcome],
    as_json: bool,
    next_steps: bool = False,
    layers: list | None = None,
    changes: dict[int, dict[str, Any]] | None = None,
) -> None:
    """One block per install (and one per agent dir for the extension layer when it was acted on);
    `next_steps` adds what to run when an install is not as wanted."""
    layers = layers or []
    changes = changes or {}
    if as_json:
        doc: dict[str, Any] = {"installs": [outcome_json(o, changes.get(id(o))) for o in outcomes]}
        if layers:
            doc["extension"] = [layer.as_json() for layer in layers]
        print(json.dumps(doc, indent=2))
        return
    for o in outcomes:
        if ui.quiet() and o.ok:
            continue
        install = o.install
        ui.heading(f"senpi {install.version} ({install.manager})", ui.visible(install.package_dir), f"[{o.patch}]")
        if o.target:
            ui.say("target", o.target, WIDE)
        ui.say("state", state_line(o), WIDE)
        if o.changed:
            ui.say("wrote", ", ".join(o.changed), WIDE)
        if o.backups and ui.verbose():
            ui.say("backup", ", ".join(o.backups), WIDE)
        if o.detail and not proven_only(o):
            ui.say("detail" if o.ok else "error:", o.detail, WIDE, "" if o.ok else "bad")
        if changes.get(id(o)):
            said = changes[id(o)]
            ui.say("changes", said["text"] if ui.verbose() else said.get("short", said["text"]), WIDE)
        step = pipeline.next_step(o) if next_steps else None
        if step:
            ui.say("next", step, WIDE)
        if o.diff:
            print(o.diff if ui.verbose() else diff_summary(o.diff), end="")
    for layer in layers:
        if not (ui.quiet() and layer.ok):
            _print_layer(layer, next_steps)


def _print_layer(layer, next_steps: bool) -> None:
    ui.heading("extension", ui.visible(layer.path))
    if proven_only(layer):
        ui.say("state", f"{ui.state_text(layer.after)}: {layer.detail}", WIDE)
    else:
        state = (
            f"{ui.state_text(layer.before)}"
            if layer.before == layer.after
            else f"{ui.state_text(layer.before)} -> {ui.state_text(layer.after)}"
        )
        ui.say("state", f"{state}  ({'ok' if layer.ok else ui.paint('FAILED', 'bad')})", WIDE)
    for kept in layer.kept:
        ui.say("kept", kept, WIDE)
    for pruned in layer.pruned:
        ui.say("pruned", f"{pruned} (an older kept copy)", WIDE)
    if not proven_only(layer):
        ui.say("detail" if layer.ok else "error:", layer.detail, WIDE, "" if layer.ok else "bad")
    step = pipeline.next_step(layer) if next_steps else None
    if step:
        ui.say("next", step, WIDE)


def diff_summary(diff: str) -> str:
    """What a dry run would change, per file, in a line (the whole diff with -v)."""
    files: dict[str, list[int]] = {}
    name = ""
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip().removeprefix("b/")
            files.setdefault(name, [0, 0])
        elif name and line.startswith("+") and not line.startswith("+++"):
            files[name][0] += 1
        elif name and line.startswith("-") and not line.startswith("---"):
            files[name][1] += 1
    return "".join(
        line + "\n"
        for name, (added, removed) in files.items()
        for line in ui.field("diff", f"{name}: +{added} -{removed} lines (the whole diff: -v)", label_width=WIDE)
    )
