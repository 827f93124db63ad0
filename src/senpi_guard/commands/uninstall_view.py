"""What `uninstall` says: the text lines and the one JSON document, from its plan (the changes the
revert makes, grouped per install and per agent dir) and what removing its folders did."""

from __future__ import annotations

import json
import os
import pwd
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from senpi_guard import ui
from senpi_guard.commands import results_view
from senpi_guard.layers import pipeline


class Why(StrEnum):
    """Why a folder senpi-guard made was left."""

    NOT_EMPTY = "not-empty"  # something else keeps files there (as it should: -q says nothing of it)
    HANDS_OFF = "hands-off"  # the folder above has no write bits
    FAILED = "failed"  # the system refused (`detail` says how)


@dataclass(frozen=True)
class Left:
    """A folder senpi-guard made that uninstall left, and why (what is printed is made from it)."""

    folder: Path
    why: Why
    detail: str = ""

    def __str__(self) -> str:
        above = self.folder.parent
        reason = {
            Why.NOT_EMPTY: "not empty: something else keeps files there",
            Why.HANDS_OFF: f"{above} has no write bits: chmod u+w {above}, then remove it",
        }.get(self.why, self.detail)
        return f"{self.folder} ({reason})"


def _json_report(acted, plan, removed, left, dry_run: bool, flow: pipeline.Pipeline | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"dry_run": dry_run, "ok": True, "reverts": acted}
    if flow is not None:
        outcomes, layers = flow.split()
        doc |= results_view.documents([*outcomes, *layers])
    else:
        doc["installs"] = []
    would = [plan["service"], *map(str, plan["own"])] + (
        [str(plan["config_removed"])] if plan["config_removed"] else []
    )
    doc |= {"removed": removed, "left": [str(item) for item in left], "refused": plan.get("refused", [])}
    # (whether anything was, or would be, changed: what configuration management reports)
    doc["changed"] = bool(acted) or (
        any(Path(w).exists() for w in would if w) or any(p.is_dir() for p in plan["made"]) if dry_run else bool(removed)
    )
    if dry_run:
        doc |= {"would_remove": [w for w in would if w], "would_remove_if_empty": [str(p) for p in plan["made"]]}
    return doc


def _edited(changes: list[pipeline.Change], dry_run: bool, purge: bool) -> str:
    """What becomes of a hand edit the revert finds (a drifted target, a modified extension)."""
    if not any(c.keep_aside for c in changes):
        return ""
    if purge:
        return "  (edited by hand: your edit is discarded, --purge)"
    return "  (edited by hand: your copy " + ("would be kept aside" if dry_run else "kept aside, named below") + ")"


def _user_name() -> str:
    """Whose senpi-guard this was (other users' own are theirs); a uid no user database names is
    said as its number."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return f"uid {os.geteuid()}"


def _acted(changes: list[pipeline.Change]) -> dict[tuple[str, str, Path], list[pipeline.Change]]:
    """The changes the revert makes, one group per line: per install for the dist layer (its files),
    per agent dir for the extension."""
    groups: dict[tuple[str, str, Path], list[pipeline.Change]] = {}
    for c in changes:
        if c.writes:
            where = c.installs[0] if c.layer == "dist" and c.installs else c.where
            groups.setdefault((c.layer, c.patch, where), []).append(c)
    return groups


def report(
    args, rows, plan, removed, left, dry_run: bool, flow: pipeline.Pipeline | None = None, installs: tuple = ()
) -> None:
    groups = _acted(rows)
    acted = [c.as_json() for group in groups.values() for c in group]
    kept = [str(plan["config_kept"])] if plan["config_kept"] else []
    edits = [str(p) for p in plan["edits"] if not p.name.endswith(".about.json")]
    # (a senpi package carrying the extension is the user's: left, and said)
    packages = [str(c.where) for c in rows if c.layer == "extension" and c.found == "package"]
    if args.json:
        doc = _json_report(acted, plan, removed, left, dry_run, flow)
        print(json.dumps(doc | {"kept": kept + edits, "packages_left": packages}, indent=2))
        return
    for line in plan.get("refused", ()):
        print(f"refused   {line}", file=sys.stderr)
    if ui.quiet() and not dry_run:  # (-q: only what failed: a folder left for a reason other than its files)
        for item in left:
            if item.why is not Why.NOT_EMPTY:
                print(f"left      {item}")
        return
    versions = {i.package_dir: i.version for i in installs}
    for (layer, patch, where), group in groups.items():
        what = f"senpi {versions.get(where, '?')} at {where}" if layer == "dist" else f"extension {where}"
        verb = (
            ("would revert" if dry_run else "reverted")
            if layer == "dist"
            else ("would remove" if dry_run else "removed ")
        )
        print(f"{verb}  {what}  [{patch}]{_edited(group, dry_run, args.purge)}")
    if dry_run:
        for item in filter(None, [plan["service"], *plan["own"], plan["config_removed"]]):
            but = any(Path(edit).is_relative_to(item) for edit in edits)
            print(f"would remove  {item}" + ("  (all but the hand-edited files kept in it)" if but else ""))
        for folder in plan["made"]:
            if folder.is_dir():
                print(f"would remove  {folder}  (if empty then)")
    for line in removed:
        print(f"removed   {line}")
    for item in left:
        print(f"left      {item}")
    for path in kept:
        print(f"kept      {path}  (your config; --purge removes it)")
    for path in edits:
        print(f"kept      {path}  (a file you edited, kept aside by senpi-guard; --purge removes it)")
    for where in packages:
        print(f"kept      {where}  (the senpi package carrying the extension: yours; `senpi remove` takes it out)")
    if not dry_run:
        who = f"for {_user_name()}" + (", the files kept above aside" if edits else "")
        print(f"senpi-guard is uninstalled {who}; remove the tool itself: pipx uninstall senpi-guard")
        if edits:  # (the tool gone, no --purge can come: the way without it)
            print(f"(once you no longer want them: senpi-guard uninstall --purge, or rm -r {plan['data_dir']})")
