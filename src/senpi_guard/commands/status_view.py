"""`status` as text: per install its state, what the patch saves there (with its basis), what is
amiss and the next step; `-v` adds every line (the node, the targets, the last verification, the
watcher's last reconcile, the extension layer, the why of the figures). Prose wraps at the
terminal's width (ui.field); a path or a command is never broken."""

from __future__ import annotations

import time
from typing import Any

from senpi_guard import ui
from senpi_guard.audit.money_text import usd
from senpi_guard.core.patch.classify import State

# the extension's line without -v: but where it is in place, or absent (the state line says that)
EXTENSION_QUIET = frozenset({"installed", "package", "absent"})


def show(rows: list[dict[str, Any]], running: dict[str, Any] | None, idle: str) -> None:
    """`idle`: the watcher line's text when none runs (how to start one here)."""
    if not ui.quiet():
        now = f"running, pid {running['pid']} since {when(running['since'])}" if running else idle
        print("\n".join(ui.wrapped(f"watcher: {now}", "", "  ")))
    for row in rows:
        if not (ui.quiet() and row["as_wanted"]):
            _row(row, running)


def when(stamp: Any) -> str:
    if not stamp:
        return "never"
    if isinstance(stamp, bool) or not isinstance(stamp, int | float):
        return "at an unknown time"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _row(row: dict[str, Any], running: dict[str, Any] | None) -> None:
    ui.heading(f"senpi {row['version']} ({row['manager']})", ui.visible(row["package_dir"]))
    amiss = "".join(f"; {ui.paint(what, 'bad')}" for what in dict.fromkeys(row["amiss"]))
    print(f"  state     {ui.state_text(row['state'])}{amiss}")
    node = row["node"]
    if node.get("problem"):  # (older than senpi's `engines`: said without -v)
        ui.say("node", node["problem"], kind="")
    elif node and "path" not in node:
        ui.say("node", f"{ui.paint('error:', 'bad')} {node['error']}")
    elif node and ui.verbose():
        print(f"  node      {node['version']} ({node['source']}: {node['path']})")
    if row["replay_problem"]:
        ui.say("replay", f"{ui.paint('error:', 'bad')} {row['replay_problem']}")
    saves = next((sub["saves"] for sub in row["patches"] if sub.get("saves")), None)
    for i, line in enumerate(saves_lines(saves)):
        ui.say("" if i else "saves", line)
    for sub in row["patches"]:
        _patch(sub, len(row["patches"]) > 1 and sub["state"] != row["state"], running)
    if row["next"]:
        ui.say("next", row["next"])


def _percent(before: float, after: float) -> str:
    return f"{(after - before) / before:+.0%}" if before else ""


def saves_lines(saves: dict[str, Any] | None) -> list[str]:
    """At most three short lines: the dist layer's figure (Claude's lanes), the extension's (every
    other provider), and their basis; without a figure, how to get one. [] where nothing is saved."""
    if not saves:
        return []
    if not saves.get("dist"):
        return ["no figure for these settings yet: `senpi-guard verify` measures it"]
    a, b = saves["dist"]["installed"], saves["dist"]["patched"]
    measured = saves["source"]
    if saves["keep_last"]:
        unit = "usd" if saves["priced"] else "cache_write_tokens"
        shown = f"{usd(a[unit])} -> {usd(b[unit])}" if saves["priced"] else f"{a[unit]:,.0f} -> {b[unit]:,.0f}"
        what = "" if saves["priced"] else " cache-write tokens"
        lines = [f"Claude: {shown}{what} a call ({_percent(a[unit], b[unit])}), {saves['calls']} calls"]
        basis = f"{saves['model']} list price" if saves["priced"] else "unpriced"
        basis += f", full re-sends; {measured}"
    else:
        lines = [f"Claude: {a:,} -> {b:,} bytes ({_percent(a, b)}) a full re-send"]
        basis = f"a sample session, one full re-send; {measured}"
    if ext := saves.get("extension"):
        lines.append(
            f"other providers: {ext['before']:,} -> {ext['after']:,} bytes a call "
            f"({_percent(ext['before'], ext['after'])})"
        )
    return [*lines, basis]


def _stale(stamp: Any, running: dict[str, Any] | None) -> str:
    """Said of a watcher's last reconcile that no running watcher did (the watcher stopped, or it
    came before the one running now started): how long ago, so it does not read as current."""
    if isinstance(stamp, bool) or not isinstance(stamp, int | float):
        return ""
    since = running.get("since") if running else None
    if running and (isinstance(since, bool) or not isinstance(since, int | float) or stamp >= since):
        return ""
    ago = max(0, time.time() - stamp)
    units = (("days", 86400), ("h", 3600), ("min", 60))
    unit, size = next(((unit, size) for unit, size in units if ago >= size), ("s", 1))
    by = "a watcher not running now" if running is None else "an earlier watcher, before this one started"
    return f" ({int(ago // size)} {unit} ago, by {by})"


def _patch(sub: dict[str, Any], own_line: bool, running: dict[str, Any] | None) -> None:
    """A patch's lines: every one with -v; else only what is amiss (a patch not as wanted, a failed
    or outdated verification, a failed or stale reconcile, an extension in trouble, a risk)."""
    full = ui.verbose()
    if own_line and (full or not sub["as_wanted"]):
        print(f"  patch     {sub['patch']}: {ui.state_text(sub['state'])}")
    if sub["target"] and full:
        print(f"  target    {sub['target']}")
    if sub["shape"] and full:
        print(f"  shape     senpi {sub['shape']}")
    if sub.get("changes") and full:
        ui.say("changes", sub["changes"])
    _verified(sub, full)
    last = sub["last_reconcile"]
    stale = _stale(last.get("time"), running) if last else ""
    if last and (full or not last.get("ok") or stale):
        outcome = "ok" if last.get("ok") else ui.paint("FAILED", "bad")
        ui.say(
            "watcher",
            f"last reconcile {when(last.get('time'))}{stale}: {last.get('before')} -> {last.get('after')} "
            f"({outcome}, {str(last.get('trigger', '')).split(' ')[0]})",
        )
    if sub["extension"]:
        _extension(sub["extension"], full)
    if sub["detail"] and (full or sub["state"] in ui.BAD):
        ui.say("detail", sub["detail"])


def _verified(sub: dict[str, Any], full: bool) -> None:
    last = sub["last_verify"]
    if not sub["target"] or sub["state"] == State.CLEAN:
        return
    failed = bool(last) and not last.get("ok")
    outdated = bool(last) and not sub["last_verify_of_these_files"]
    if not (full or failed or outdated):
        return
    verdict = (
        "never verified"
        if not last
        else f"{'passed' if last.get('ok') else ui.paint('FAILED', 'bad')} {last.get('checks', 0)} checks at "
        f"{when(last.get('time'))}"
    )
    if outdated:
        verdict = f"not the files as they are now (the last verification, of other bytes: {verdict})"
    ui.say("verified", verdict)


def _extension(layer: dict[str, Any], full: bool) -> None:
    if full or layer["state"] not in EXTENSION_QUIET or layer["taken_out"] or not layer["wanted"]:
        wanted = "" if layer["wanted"] else " (not wanted: `layers` leaves it out)"
        detail = f": {layer['detail']}" if layer["detail"] else ""
        where = f" in {layer['agent_dir']} ({layer['how']})" if layer["agent_dir"] else ""
        ui.say("extension", f"{ui.state_text(layer['state'])}{wanted}{where}{detail}")
    if layer["risk"]:
        ui.say("risk:", layer["risk"])
    here = layer["here"]
    if here and here["state"] != "installed":
        ui.say(
            "here",
            f"from this folder senpi uses {here['agent_dir']} ({here['how']}), where senpi-guard's extension is "
            "not: `senpi-guard apply --here` adds it there",
        )
    elif here and full:
        ui.say("here", f"from this folder senpi uses {here['agent_dir']} ({here['how']}): the extension is there")
