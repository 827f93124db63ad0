"""`senpi-guard status`: the state of each install, its last verification, and the watcher."""

from __future__ import annotations

import json
import time
from typing import Any

from senpi_guard import ui
from senpi_guard.commands import common
from senpi_guard.core.patch.classify import SETTLED, State
from senpi_guard.errors import FatalError
from senpi_guard.layers import extension, extension_plan
from senpi_guard.layers.dist import Reconciler
from senpi_guard.prove import nodes

SUMMARY = "show each install's state, its last verification and the watcher"
EXAMPLE = "senpi-guard status\n  senpi-guard status --json | jq '.installs[].state'"
EXITS = "0 every install is patched (or left to upstream by config); 1 anything else"


def configure(parser) -> None:
    common.add_install_options(parser)


def _when(stamp: Any) -> str:
    if not stamp:
        return "never"
    if isinstance(stamp, bool) or not isinstance(stamp, int | float):
        return "at an unknown time"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _layer(patch, config, agent_dir) -> extension.LayerStatus:
    try:
        return extension.inspect(patch, config, agent_dir)
    except FatalError as exc:
        return extension.LayerStatus("error", extension.target_path(patch, agent_dir), str(exc))


def risk(insp, layer_state: str, config) -> str:
    """What the extension costs where the dist layer is not in place (an update's window, or
    layers without "dist"): restarts that re-send everything, a first copy lost after a compaction."""
    if layer_state != "installed" or insp.state == State.PATCHED:
        return ""
    costs = []
    if any(f.target.role == "binding" for f in insp.files):
        costs.append("a restart that would resume re-sends the whole history instead (senpi's restart "
                     "binding hashes the stored messages, not the ones the extension sent)")
    if insp.upstream_present:
        costs.append("after a compaction, upstream's keep-last drops the first copy on the next full "
                     "re-send (the prompt's prefix changes)")
    if not costs:
        return ""
    return ("the extension is here without the dist layer: " + "; ".join(costs)
            + ("; run `senpi-guard apply`" if "dist" in config.layers else ""))


def _extension_row(patch, config, insp, place: extension_plan.Placement) -> dict[str, Any] | None:
    if patch.extension is None:
        return None
    if place.user is None:
        return {"state": "error", "detail": place.error, "path": None, "agent_dir": None, "how": None,
                "wanted": "extension" in config.layers, "risk": "", "here": None}
    layer = _layer(patch, config, place.user.path)
    here = None
    if place.here is not None and place.here.path != place.user.path:
        found = _layer(patch, config, place.here.path)
        here = {"agent_dir": str(place.here.path), "how": place.here.how, "state": found.state}
    return {"path": str(layer.path), "agent_dir": str(place.user.path), "how": place.user.how,
            "state": layer.state, "detail": layer.detail, "wanted": "extension" in config.layers,
            "risk": risk(insp, layer.state, config), "here": here}


def collect(args) -> tuple[list[dict[str, Any]], Reconciler]:
    patch, config = common.load()
    reconciler = Reconciler(patch, config, quick_locate=True)
    records = reconciler.store.load_records()
    rows = []
    for install in common.installs(args, reconciler.store.state_dir):
        insp = reconciler.inspect(install)
        record = reconciler.store.install_record(install.package_dir, records)
        layer = _extension_row(patch, config, insp, extension_plan.placement(install))
        rows.append({
            "package_dir": str(install.package_dir),
            "version": install.version,
            "manager": install.manager,
            "target": str(insp.prompt.path) if insp.prompt else None,
            "target_rel": insp.prompt.rel if insp.prompt else None,
            "shape": insp.shape.range if insp.shape else None,
            "state": insp.state,
            "layers": {"dist": insp.state, "extension": layer["state"] if layer else None},
            "extension": layer,
            "upstream_dedupe": insp.upstream_present,
            "detail": insp.detail,
            "next": None if insp.state in SETTLED else ui.NEXT_STEPS.get(insp.state),
            "node": _node(install),
            "last_verify": _dict(record.get("last_verify")),
            "last_reconcile": _dict(record.get("last_reconcile")),
        })
    return rows, reconciler


def _dict(value: Any) -> dict[str, Any] | None:
    """A record field as written by senpi-guard, or None (a hand-edited state file may hold anything)."""
    return value if isinstance(value, dict) else None


def _node(install) -> dict[str, str]:
    """The node that verifies this install (the one that runs it, where that can be told)."""
    if install.unsupported:
        return {}
    try:
        found = nodes.node_for(install.package_dir)
    except FatalError as exc:
        return {"error": str(exc)}
    return {"path": found.path, "version": found.version, "source": found.source}


def _print_row(row: dict[str, Any]) -> None:
    print(f"senpi {row['version']} ({row['manager']})  {row['package_dir']}")
    print(f"  state     {ui.state_text(row['state'])}")
    if row["target"]:
        print(f"  target    {row['target'] if ui.verbose() else row['target_rel']}")
    if row["shape"]:
        upstream = ", with upstream's keep-last dedupe" if row["upstream_dedupe"] else ""
        print(f"  shape     senpi {row['shape']}{upstream}")
    node = row["node"]
    if node:
        print(f"  node      {node['version']} ({node['source']}: {node['path']})" if "path" in node
              else f"  node      {ui.paint('error:', 'bad')} {node['error']}")
    last = row["last_verify"]
    verdict = "never verified" if not last else (
        f"{'passed' if last.get('ok') else ui.paint('FAILED', 'bad')} {last.get('checks', 0)} checks at "
        f"{_when(last.get('time'))}")
    print(f"  verified  {verdict}")
    last = row["last_reconcile"]
    if last:
        outcome = "ok" if last.get("ok") else ui.paint("FAILED", "bad")
        print(f"  watcher   last reconcile {_when(last.get('time'))}: {last.get('before')} -> "
              f"{last.get('after')} ({outcome}, {str(last.get('trigger', '')).split(' ')[0]})")
    layer = row["extension"]
    if layer:
        _print_extension(layer)
    if row["detail"]:
        print(f"  detail    {row['detail']}")
    if row["next"]:
        print(f"  next      {row['next']}")


def _print_extension(layer: dict[str, Any]) -> None:
    wanted = "" if layer["wanted"] else " (not wanted: `layers` leaves it out)"
    detail = f": {layer['detail']}" if layer["detail"] else ""
    where = f" in {layer['agent_dir']} ({layer['how']})" if layer["agent_dir"] else ""
    print(f"  extension {ui.state_text(layer['state'])}{wanted}{where}{detail}")
    if layer["risk"]:
        print(f"  {ui.paint('risk:', 'bad')}     {layer['risk']}")
    here = layer["here"]
    if here and here["state"] != "installed":
        print(f"  here      from this folder senpi uses {here['agent_dir']} ({here['how']}), where senpi-guard's "
              "extension is not: `senpi-guard apply --here` adds it there")
    elif here:
        print(f"  here      from this folder senpi uses {here['agent_dir']} ({here['how']}): the extension is there")


def run(args) -> int:
    rows, reconciler = collect(args)
    running = reconciler.store.running_watcher()
    if args.json:
        print(json.dumps({"installs": rows, "watcher": running}, indent=2))
    else:
        if not ui.quiet():
            print("watcher: " + (f"running, pid {running['pid']} since {_when(running['since'])}"
                                 if running else "not running (start it: senpi-guard daemon install)"))
        for row in rows:
            if not (ui.quiet() and row["state"] in SETTLED):
                _print_row(row)
    return 0 if rows and all(r["state"] in SETTLED for r in rows) else 1
