"""How every command that reports installs and agent dirs shows a layer's results: one JSON row
and one text block for both layers (the dist layer's per install, the extension's per agent dir),
the same keys and types, the one next-step vocabulary (pipeline.next_step)."""

from __future__ import annotations

import json
from typing import Any

from senpi_guard import ui
from senpi_guard.audit import resend
from senpi_guard.core.patch.classify import State
from senpi_guard.layers import pipeline

WIDE = 8  # (the label column of a block: `  target   `)


def print_results(flow, as_json: bool, next_steps: bool = False, say_changes: bool = True) -> None:
    """What a pipeline run did: the dist layer per install, then the extension layer per agent dir;
    with `say_changes`, what the patch changes on each install (its `changes` line)."""
    outcomes, layers = flow.split()
    headlines = {name: dist.patch.headline for name, dist in flow.dists.items()} if say_changes else {}
    changes = {id(o): changes_of(o, headlines.get(o.patch, ())) for o in outcomes}
    show([*outcomes, *layers], as_json, next_steps, changes)


def changes_of(outcome: pipeline.Outcome, headline: tuple[str, ...]) -> dict[str, Any]:
    """What the patch changes on this install, figures first (audit/resend.py); {} without a
    passed replay or headline figures."""
    report = outcome.report
    if report is None or not report.ok or not headline:
        return {}
    return resend.sentence(report.stats, headline, "upstream" in outcome.present, outcome.install.package_dir)


def documents(results: list[pipeline.Result], changes: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The rows of a run: `installs` (the dist layer's), `extension` (the agent dirs')."""
    changes = changes or {}
    rows = [row(r, changes.get(id(r))) for r in results]
    return {
        "installs": [r for r in rows if r["layer"] == "dist"],
        "extension": [r for r in rows if r["layer"] == "extension"],
    }


def row(result: pipeline.Result, changes: dict[str, Any] | None = None) -> dict[str, Any]:
    """One result as JSON: the keys both layers share, then the layer's own."""
    report = result.report
    dist = result.layer == "dist"
    shared = {
        "layer": result.layer,
        "patch": result.patch,
        "path": str(result.install.package_dir if dist else result.path),
        "state_before": result.before,
        "state": result.after,
        "ok": result.ok,
        "changed": written(result),
        "would_write": result.would_write if dist else [str(result.path)] * bool(result.would_write),
        "kept": result.backups if dist else result.kept,  # (copies in senpi-guard's data folder)
        "detail": result.detail,
        "next": pipeline.next_step(result),
        "checks": report.checks_run if report else None,
        "verification": None if report is None else {**report.as_json(), "host": report.stats.get("host")},
    }
    if not dist:
        return shared | {"pruned": result.pruned, "installs": [str(i.package_dir) for i in result.installs]}
    install = result.install
    return shared | {
        "package_dir": str(install.package_dir),
        "version": install.version,
        "manager": install.manager,
        "target": str(install.package_dir / result.target) if result.target else "",
        "targets": sorted(result.present),
        "held": result.after == State.HELD,
        "diff": result.diff,  # (a dry run: the unified diff of what apply would write)
        "millis": result.millis,
        "changes": changes or None,
    }


def written(result: pipeline.Result) -> list[str]:
    """What a result changed: the target files written, or the agent dir's file written or taken out."""
    if result.layer == "dist":
        return result.changed
    return [str(result.path)] * (result.before != result.after or result.took_out)


def proven_only(result) -> bool:
    """verify over a layer that is not installed, whose replay of what apply would write passed:
    nothing failed but that it is not there (its detail says both, on the state line)."""
    return not result.ok and result.report is not None and result.report.ok and result.after != "installed"


def state_line(result: pipeline.Result) -> str:
    before, after = ui.state_text(result.before), ui.state_text(result.after)
    if proven_only(result):
        return f"{after}: {result.detail}"
    verdict = ui.paint("ok", "good") if result.ok else ui.paint("FAILED", "bad")
    took = f", {result.millis} ms" if result.layer == "dist" else ""  # (the extension's steps are not timed)
    if result.layer == "dist" and result.would_write:
        return f"{before}, would write {', '.join(result.would_write)}  ({verdict}, dry run)"
    if result.before == result.after:
        return f"{after}  ({verdict}{took}{', nothing changed' if took else ''})"
    return f"{before} -> {after}  ({verdict}{took})"


def show(
    results: list[pipeline.Result], as_json: bool, next_steps: bool = False, changes: dict[int, dict] | None = None
) -> None:
    """One block per result; `next_steps` adds what to run where a layer is not as wanted."""
    changes = changes or {}
    if as_json:
        print(json.dumps(documents(results, changes), indent=2))
        return
    for result in results:
        if not (ui.quiet() and result.ok):
            block(result, next_steps, changes.get(id(result)))


def block(result: pipeline.Result, next_steps: bool, changes: dict[str, Any] | None) -> None:
    if result.layer == "dist":
        install = result.install
        ui.heading(f"senpi {install.version} ({install.manager})", ui.visible(install.package_dir), f"[{result.patch}]")
        if result.target:
            ui.say("target", result.target, WIDE)
    else:
        ui.heading("extension", ui.visible(result.path))
    ui.say("state", state_line(result), WIDE)
    if result.layer == "dist" and result.changed:
        ui.say("wrote", ", ".join(result.changed), WIDE)
    if result.layer == "dist" and result.backups and ui.verbose():
        ui.say("backup", ", ".join(result.backups), WIDE)
    for kept in [] if result.layer == "dist" else result.kept:
        ui.say("kept", kept, WIDE)
    for pruned in [] if result.layer == "dist" else result.pruned:
        ui.say("pruned", f"{pruned} (an older kept copy)", WIDE)
    if result.detail and not proven_only(result):
        ui.say("detail" if result.ok else "error:", result.detail, WIDE, "" if result.ok else "bad")
    if changes:
        ui.say("changes", changes["text"] if ui.verbose() else changes.get("short", changes["text"]), WIDE)
    if step := pipeline.next_step(result) if next_steps else None:
        ui.say("next", step, WIDE)
    if result.layer == "dist" and result.diff:
        print(result.diff if ui.verbose() else diff_summary(result.diff), end="")


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
