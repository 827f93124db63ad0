"""`senpi-guard status`: the state of each install, its last verification, and the watcher."""

from __future__ import annotations

import json
import os
from typing import Any

from senpi_guard import ui
from senpi_guard.audit import resend
from senpi_guard.commands import common, metrics, status_view
from senpi_guard.core import agentdir
from senpi_guard.core.patch.classify import SETTLED, State
from senpi_guard.errors import FatalError, fix_of
from senpi_guard.io.store import cache_dir
from senpi_guard.keep import service
from senpi_guard.layers import pipeline
from senpi_guard.prove import engines, nodes, owners

SUMMARY = "show each install's state, its last verification and the watcher"
EXAMPLE = (
    "senpi-guard status\n  senpi-guard status --json | jq '.installs[].state'\n"
    "  senpi-guard status --textfile /var/lib/node_exporter/textfile_collector"
)
EXITS = (
    "0 every install is as asked: patched, left to upstream by config, or held by `senpi-guard revert` "
    "(its next step, apply, lifts the hold), or --exit-zero; 1 anything else "
    "(with --exit-zero: only an error, such as no senpi found)"
)
DESCRIPTION = (
    "The state of each senpi install and of the extension layer, each install's last verification, "
    "and the watcher. Read-only: it changes no install and writes nothing outside senpi-guard's "
    "cache folder (where it keeps package managers' answers for 10 minutes; `senpi-guard paths` "
    "shows that folder), except the metrics file --textfile names."
)


def configure(parser) -> None:
    common.add_install_options(parser)
    metrics.add_options(parser)
    parser.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 when something is not patched (for `status && ...`); still 1 on an error",
    )


def risk(patch, insp, layer_state: str, config) -> str:
    """What the extension costs where the dist layer is not in place (an update's window, or
    layers without "dist"): the patch's own list (`[[extension.risks]]`), for the targets there."""
    if layer_state not in ("installed", "package") or insp.state == State.PATCHED or patch.extension is None:
        return ""
    costs = pipeline.alone_costs(patch, insp.present)
    if not costs:
        return ""
    owners = {f.snapshot.uid for f in insp.files}
    step = f"; {pipeline.as_owner(pipeline.APPLY, owners)}" if "dist" in config.layers else ""
    if layer_state == "package" and patch.extension.unsafe_alone_with in insp.present:
        return (  # (the package's own start-up check keeps it off that provider: layers/package_check.js)
            "the senpi package is here without the dist layer: it leaves senpi's Claude provider's calls as "
            "senpi sends them (only senpi's own keep-last collapses anything there)" + step
        )
    lead = (  # (a file of it edited by hand: there, but not known to work)
        "the dist layer was edited by hand, so the extension may be here without it"
        if insp.state == State.DRIFTED
        else "the extension is here without the dist layer"
    )
    return f"{lead}: " + "; ".join(costs) + step


def _extension_row(agent_dirs, patch, config, insp, place: pipeline.Placement) -> dict[str, Any] | None:
    if patch.extension is None:
        return None
    if place.user is None:
        return {
            "state": "error",
            "detail": place.error,
            "path": None,
            "agent_dir": None,
            "how": None,
            "wanted": "extension" in config.layers,
            "risk": "",
            "here": None,
            "taken_out": None,
        }
    layer = agent_dirs.status_at(place.user.path)
    here = None
    if place.here is not None and place.here.path != place.user.path:
        found = agent_dirs.status_at(place.here.path)
        here = {"agent_dir": str(place.here.path), "how": place.here.how, "state": found.state}
    out = agent_dirs.taken_out(place.user.path) if layer.state == "absent" else None  # (by the watcher)
    held = layer.state == "absent" and agent_dirs.store.hold(place.user.path) is not None  # (by a revert)
    return {
        "path": str(layer.path),
        "agent_dir": str(place.user.path),
        "how": place.user.how,
        "state": State.HELD if held else layer.state,
        "detail": str(out.get("problem")) if out else layer.detail,
        "taken_out": out,
        "wanted": "extension" in config.layers,
        "risk": risk(patch, insp, layer.state, config),
        "here": here,
    }


def _judged(results: list, install, config) -> tuple[bool, str | None, list[str]]:
    """Whether every layer the config wants is in place for this install, what to run when not (or to
    lift a hold), and the extension states that are not: the pipeline's own judgment
    (layers/pipeline), which verify prints too, from inspection alone. The step is the first layer's,
    a layer apply cannot change (error, unsupported) after the others: apply still does theirs."""
    mine = [r for r in results if pipeline.concerns(r, install)]
    mine.sort(key=lambda r: r.after in (State.ERROR, State.UNSUPPORTED))
    steps = [step for r in mine if (step := pipeline.next_step(r))]
    amiss = [f"extension {r.after}" for r in mine if not r.ok and r.layer == "extension"]
    return all(r.ok for r in mine), steps[0] if steps else None, amiss


def _patch_row(flow, dist, results, install, record, place) -> dict[str, Any]:
    patch, config = dist.patch, dist.reconciler.config
    insp = dist.inspection(install)
    layer = _extension_row(flow.agent_dirs.get(patch.name), patch, config, insp, place)
    as_wanted, step, amiss = _judged(results, install, config)
    last = _dict(record.get("last_verify"))
    measured = _figures(patch, config, insp, last)
    return {
        "patch": patch.name,
        "target": str(insp.primary.path) if insp.primary else None,
        "target_rel": insp.primary.rel if insp.primary else None,
        "targets": sorted(insp.present),
        "shape": insp.shape.range if insp.shape else None,
        "state": insp.state,
        "layers": {"dist": insp.state, "extension": layer["state"] if layer else None},
        "extension": layer,
        "detail": insp.detail,
        "as_wanted": as_wanted,
        "next": step,
        "amiss": amiss,
        "last_verify": last,
        "last_verify_of_these_files": _of_these_files(last, insp),
        "last_reconcile": _dict(record.get("last_reconcile")),
        "changes": _changes(patch, insp, measured),
        "saves": _saves(patch, config, insp, measured),
    }


def _priced(patch, insp) -> bool:
    """Whether the patch changes something here that figures can say (not clean, upstream's or an error)."""
    return (
        bool(patch.headline)
        and insp.primary is not None
        and insp.state not in (State.CLEAN, State.UPSTREAM, State.ERROR)
    )


def _figures(patch, config, insp, last: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
    """The dist layer's figures for this install and where they come from: its last passed replay
    of these settings, else those the patch ships for this compiled shape (None where the patch
    changes nothing: clean, upstream's, unsupported, an error)."""
    if not _priced(patch, insp):
        return None, ""
    recorded = last.get("figures") if last and last.get("ok") and last.get("patch") == patch.patch_id(config) else None
    longest = (recorded or {}).get(patch.headline[-1])  # (one an older senpi-guard recorded may lack its bytes)
    if isinstance(longest, dict) and ("resend" in longest or "originalBytes" in longest):
        return recorded, "by your last verify"
    found = pipeline.figures.for_shape(patch, config, insp.shape.range if insp.shape else None)
    return (found[0], f"measured on {found[1]}") if found else (None, "")


def _changes(patch, insp, measured: tuple[dict[str, Any] | None, str]) -> str | None:
    """What the patch changes on this install, with why (`-v`): priced here, no replay."""
    if not _priced(patch, insp):
        return None
    keep_last = "upstream" in insp.present
    found, source = measured
    said = resend.sentence(found, patch.headline, keep_last, insp.install.package_dir) if found else {}
    return f"{said['text']} ({source})" if said.get("text") else resend.unverified(keep_last)


def _saves(patch, config, insp, measured: tuple[dict[str, Any] | None, str]) -> dict[str, Any] | None:
    """What the patch saves here, in figures: the dist layer's (`measured`) and the extension's as
    shipped (the same on every senpi). None without a figure."""
    dist, source = measured
    if not dist:  # (other settings than the figures': said, so the field is never silently gone)
        return {"source": "", "dist": None} if _changes(patch, insp, measured) else None
    keep_last = "upstream" in insp.present
    said = resend.sentence(dist, patch.headline, keep_last, insp.install.package_dir)
    name = patch.headline[-1]  # (the longest sample session)
    per_call = (said.get("per_call") or {}).get(name)
    return {
        "source": source,
        "keep_last": keep_last,
        "session": name,
        "dist": per_call if keep_last else _bytes(dist.get(name)),
        "calls": ((dist.get(name) or {}).get("resend") or {}).get("calls"),
        "model": said.get("model"),
        "priced": bool(per_call) and per_call["installed"]["usd"] is not None,
        "extension": pipeline.figures.extension_sizes(patch, config).get(name),
    }


def _bytes(stats: dict[str, Any] | None) -> dict[str, int] | None:
    """One full re-send as installed and patched, in bytes (a record from before these were kept: None)."""
    stats = stats or {}
    if not isinstance(stats.get("originalBytes"), int) or not isinstance(stats.get("patchedBytes"), int):
        return None
    return {"installed": stats["originalBytes"], "patched": stats["patchedBytes"]}


def _combined(states: list[State]) -> State:
    """An install's state over every patch: the first that is not as wanted, else the first."""
    unsettled = [s for s in states if s not in SETTLED]
    if unsettled:
        return unsettled[0]
    return next((s for s in states if s != State.CLEAN), states[0] if states else State.CLEAN)


def collect(args) -> tuple[list[dict[str, Any]], Any]:
    patches, config = common.load()
    flow = pipeline.build(patches, config, quick_locate=True)
    records = flow.store.load_records()
    try:
        found = common.installs(args, cache_dir())
    except common.NoInstallFound as exc:
        raise common.NoInstallFound(f"{exc}{_extension_alone(flow)}") from None
    results: dict[str, list] = {patch.name: [] for patch in patches}
    for layer in flow.layers:  # (what verify judges, without its replay)
        results[layer.patch.name] += layer.inspect(found, pipeline.Run())
    changes = flow.plan(found, [r for mine in results.values() for r in mine])
    return [_install_row(flow, results, records, install, changes) for install in found], flow.store


def _install_row(flow, results, records, install, changes) -> dict[str, Any]:
    """One install's row: every patch's, the first with targets giving the install's fields."""
    place = pipeline.placement(install)
    subs = [
        _patch_row(
            flow,
            dist,
            results[name],
            install,
            flow.store.install_record(install.package_dir, records, patch=name),
            place,
        )
        for name, dist in flow.dists.items()
    ]
    first = next((sub for sub in subs if sub["target"]), subs[0])
    row = {
        "package_dir": str(install.package_dir),
        "version": install.version,
        "manager": install.manager,
        **{
            k: first[k]
            for k in (
                "target",
                "target_rel",
                "targets",
                "shape",
                "layers",
                "extension",
                "detail",
                "last_verify",
                "last_reconcile",
            )
        },
        "state": _combined([sub["state"] for sub in subs]),
        "node": _node(install),
        "patches": subs,
    }
    refused = _replay_problem(install, row["node"])
    row["replay_problem"] = None if refused is None else str(refused)
    row["as_wanted"] = all(sub["as_wanted"] for sub in subs) and not row["replay_problem"]
    row["next"] = pipeline.fix_step(fix_of(refused) if refused else "") or next(
        (sub["next"] for sub in sorted(subs, key=lambda sub: sub["as_wanted"]) if sub["next"]), None
    )
    row["amiss"] = [what for sub in subs for what in sub["amiss"]]
    row["plan"] = [c.as_json() for c in changes if install.package_dir in c.installs]
    return row


def _extension_alone(flow) -> str:
    """With no senpi found: whether an extension is still installed in the default agent dir or one
    it was written to (it works for any senpi that starts with that agent dir; revert takes it out)."""
    there, ours = [], False
    places = dict.fromkeys([agentdir.default_agent_dir(), *pipeline.extension_written(flow.store)])
    for name, agent_dirs in flow.agent_dirs.items():
        for place in places:
            layer = agent_dirs.status_at(place)
            if layer.state in ("installed", "stale", "modified", "package"):  # (not an error, not absent)
                there.append(f"{name}'s is {layer.state} at {ui.visible(layer.path)}")
                ours = ours or layer.state != "package"  # (a package is the user's: `senpi remove`)
    if ours:
        there[-1] += " (`senpi-guard revert` takes senpi-guard's own file out)"
    return f"; the extension layer: {', '.join(there)}" if there else ""


def _of_these_files(last: dict[str, Any] | None, insp) -> bool:
    """Whether the last verification was of the target files as they are now (not of a release
    since replaced, nor of bytes an apply could not write)."""
    return bool(last) and last.get("shas") == {tf.rel: tf.snapshot.sha256 for tf in insp.files}


def _dict(value: Any) -> dict[str, Any] | None:
    """A record field as written by senpi-guard, or None (a hand-edited state file may hold anything)."""
    return value if isinstance(value, dict) else None


def _replay_problem(install, node: dict[str, str]) -> FatalError | None:
    """As root: the refusal a replay of this install would meet (whose code it is), else None."""
    if os.geteuid() != 0 or install.unsupported or "path" not in node:
        return None
    return owners.refused(install.package_dir, node["path"])


def _node(install) -> dict[str, str | None]:
    """The node that verifies this install (the one that runs it, where that can be told)."""
    if install.unsupported:
        return {}
    try:
        found = nodes.node_for(install.package_dir)
    except FatalError as exc:
        return {"error": str(exc)}
    problem = engines.node_problem(install.package_dir, found)  # (older than senpi's `engines`)
    return {"path": found.path, "version": found.version, "source": found.source, "problem": problem}


def _start_watcher() -> str:
    """The watcher line when none runs: where no user service manager answers, `daemon install`
    installs nothing, so the step is to run the watcher itself."""
    if service.no_user_manager():
        return "not running (no user service manager here: run `senpi-guard watch` yourself)"
    return "not running (start it: senpi-guard daemon install)"


def run(args) -> int:
    fmt = metrics.chosen(args)
    rows, store = collect(args)
    running = store.running_watcher()
    if fmt == "prometheus":
        metrics.emit(args, metrics.status_families(rows, running), metrics.AUDIT_NAMES)
    elif args.json:
        print(json.dumps({"installs": rows, "watcher": running}, indent=2))
    else:
        status_view.show(rows, running, _start_watcher())
    return 0 if args.exit_zero or (rows and all(r["as_wanted"] for r in rows)) else 1
