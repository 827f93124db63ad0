"""Replay a session the way senpi sent it: per assistant turn, which lane the call took (senpi's own
continuity record), the bytes that lane sent with and without the patch, what a prompt cache had to
write anew, and senpi's own recorded payload size beside ours. One node process serves all sessions;
requests are pipelined (audit/server.py: a reader thread collects the replies in order, and each
step is bounded by verify_timeout)."""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO

from senpi_guard import ui
from senpi_guard.audit import configuration, money, rows, session
from senpi_guard.audit.prices import PriceBook
from senpi_guard.audit.server import NodeServer
from senpi_guard.audit.summary import Summary
from senpi_guard.core import agentdir, locate
from senpi_guard.core.patch.definition import Patch
from senpi_guard.demo import sample
from senpi_guard.discover import Install, describe
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.layers import pipeline
from senpi_guard.prove import nodes, verify
from senpi_guard.prove.mirror import mirror

SESSION_FUNCTIONS = ("buildDeltaPromptBlocks", "buildSessionContext", "convertToLlm", "generateBranchSummary")
IN_FLIGHT = 64


@dataclass
class Serializer:
    """The live node process, where its serialisation comes from, and how contexts are rebuilt."""

    label: str
    node: NodeServer
    reconstruction: str  # "senpi" (its own buildSessionContext + convertToLlm) or "python"
    resident_lane: bool  # the install has a delta lane (2026.7.31-2 and later)
    package_dir: Path | None = None  # (where senpi's model registry, its list prices, is found)
    settings_print: str | None = None  # (the audit's extension's dedupe settings, as its entries print them)
    fallback: str | None = None  # why senpi's own session code was wanted and not used (None: it was)

    @property
    def sample(self) -> bool:
        """--sample: a senpi of senpi-guard's own serialises, not the user's (it has no install)."""
        return self.package_dir is None

    def send(self, request: dict[str, Any]) -> None:
        self.send_raw(json.dumps(request).encode())

    def send_raw(self, line: bytes) -> None:
        self.node.send_raw(line)

    def reply(self) -> dict[str, Any]:
        return self.node.reply()


def _pairs(dist: pipeline.DistLayer, install: Install) -> dict[str, verify.ModulePair]:
    """The serialiser and what runs after it (the roles the patch's [audit] names), unpatched and patched."""
    return dist.module_pairs(install, roles=tuple(dist.patch.audit.values()))


def _session_functions(install: Install) -> tuple[dict[str, Path], dict[str, str]]:
    """senpi's own delta serialiser and session functions, found by what the files export; a name
    defined in more than one place is left out (never guessed), and why each is missing."""
    found = locate.find_exported_functions(locate.js_files(install.package_dir / "dist"), SESSION_FUNCTIONS)
    paths = {name: sorted({h.path for h in hits}) for name, hits in found.items()}
    missing = {
        name: f"defined in {len(where)} files ({', '.join(str(p) for p in where[:2])})" if where else "not found"
        for name, where in paths.items()
        if len(where) != 1
    }
    return {name: where[0] for name, where in paths.items() if len(where) == 1}, missing


def _fallback(exact: bool, missing: dict[str, str], ready: dict[str, Any], where: str) -> str | None:
    """Why senpi's own session code, wanted (`exact`), is not (all) used: what Python found missing
    in dist/, and what node could not import."""
    if not exact:
        return None
    # (a build older than branch summaries has no generateBranchSummary: that is no fallback)
    reasons = [
        f"{name} in {where}'s dist/: {why}"
        for name, why in missing.items()
        if name in ("buildSessionContext", "convertToLlm") or (name == "generateBranchSummary" and why != "not found")
    ]
    reasons += [str(r) for r in ready.get("fallback") or []]
    return "; ".join(reasons) or None


def _job(
    patch: Patch,
    config: Config,
    place,
    install: Install,
    pairs: dict[str, verify.ModulePair],
    functions: dict[str, Path],
    exact: bool,
) -> dict[str, Any]:
    job = verify.harness_job("audit", patch, config, place, pairs)
    job["prompt"] = job["modules"].get(patch.audit.get("serialiser", ""))
    job["upstream"] = job["modules"].get(patch.audit.get("after", ""))
    job["counts"] = str(place.root / patch.audit_counts) if patch.audit_counts else None  # (placed with its scripts)

    def spec(name: str) -> dict[str, Any] | None:
        path = functions.get(name)
        return {"original": str(place.in_package(install.package_dir, path)), "export": name} if path else None

    job["delta"] = spec("buildDeltaPromptBlocks")
    if exact and spec("buildSessionContext") and spec("convertToLlm"):
        job["session"] = {"context": spec("buildSessionContext"), "convert": spec("convertToLlm")}
        job["branch"] = spec("generateBranchSummary")
    return job


def _chosen(
    installs: list[Install], dist: pipeline.DistLayer, stack: ExitStack, sample_ok: bool
) -> tuple[Install, dict[str, verify.ModulePair], str, bool]:
    """The first usable install (its module pairs, a label, and True), else a sample senpi."""
    chosen = next((i for i in installs if not i.unsupported), None)
    why = "no senpi install found"
    if chosen is not None:
        try:
            return (
                chosen,
                _pairs(dist, chosen),
                f"senpi {chosen.version} as installed ({chosen.package_dir})",
                True,
            )
        except FatalError as exc:
            why = f"senpi {chosen.version} at {chosen.package_dir} cannot serialise: {exc}"
    if not sample_ok:
        raise FatalError(
            f"{why}; audit counts with the installed senpi's own code: install senpi, pass "
            "--root PKG_DIR, or pass --sample to count with a sample senpi of senpi-guard's"
        )
    label = f"a SAMPLE senpi 2026.8.1 of senpi-guard's own, not yours ({why}; --sample)"
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="senpi-guard-audit-")))
    folder.chmod(0o755)  # (as root, the replay runs as nobody, who must read the sample)
    sample.write_sample_package(folder / "pkg", 2, fillers=0)
    chosen = describe(folder / "pkg", "sample")
    return chosen, _pairs(dist, chosen), label, False


@contextmanager
def serializer(
    installs: list[Install],
    patch: Patch,
    config: Config,
    allow_foreign_root: bool = False,
    reconstruction: str = "auto",
    sample_ok: bool = False,
    cancel: threading.Event | None = None,
) -> Iterator[Serializer]:
    """senpi's own serialisers, from the first usable install; with `sample_ok`, from a sample senpi
    of this project's when there is none (and the label says so) — never silently. Each step in
    node is bounded by verify_timeout; `cancel` stops it."""
    flow = pipeline.build(
        pipeline.house_around(patch), config, allow_foreign_root=allow_foreign_root, only=(patch.name,)
    )
    dist = flow.dists[patch.name]
    with ExitStack() as stack:
        chosen, pairs, label, own = _chosen(installs, dist, stack, sample_ok)
        functions, missing = _session_functions(chosen)
        exact = reconstruction == "senpi" or (reconstruction == "auto" and own)
        sandbox = dist.sandbox(chosen, pairs)
        place = stack.enter_context(mirror(chosen.package_dir, list(pairs.values()), patch.checks_path, sandbox))
        job = _job(patch, config, place, chosen, pairs, functions, exact)
        if patch.extension is not None:  # the extension layer, as apply would install it
            rendered = place.root / patch.extension.file_name
            rendered.write_text(patch.render_extension(config), "utf-8")
            job["extension"] = str(rendered)
        where = f"senpi {chosen.version} at {chosen.package_dir}"
        node = stack.enter_context(_node(chosen.package_dir, place, job, config.verify_timeout, where, cancel))
        ready = node.reply("while loading senpi's code")
        if reconstruction == "senpi" and not ready.get("exact"):
            raise FatalError(
                f"senpi {chosen.version}'s own buildSessionContext/convertToLlm "
                "could not be used (not found, or they did not import under node); "
                "run without --reconstruction senpi to use senpi-guard's own"
            )
        fallback = _fallback(exact, missing, ready, where)
        if fallback:  # (never silently less exact: the report says it too)
            ui.progress(f"audit: senpi's own session code is not (all) used: {fallback}")
        yield Serializer(
            label,
            node,
            "senpi" if ready.get("exact") else "python",
            "buildDeltaPromptBlocks" in functions,
            chosen.package_dir if own else None,
            ready.get("settingsPrint"),
            fallback,
        )


@contextmanager
def _node(
    package_dir: Path, place, job: dict[str, Any], timeout: float, where: str, cancel: threading.Event | None
) -> Iterator[NodeServer]:
    script = place.root / "audit.mjs"
    shutil.copyfile(Path(str(resources.files("senpi_guard.audit").joinpath("audit.mjs"))), script)
    node = NodeServer(
        [nodes.node_for(package_dir).path, str(script)], job, timeout, where, cancel, place.popen_kwargs()
    )
    ok = False
    try:
        yield node  # the caller reads the ready line
        ok = True
    finally:
        node.close(ok)


def audit_session(
    path: Path, server: Serializer, on_turn: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """Audit one session; each turn's row goes to `on_turn` as soon as it is measured. Returns the
    summary, the warnings and the per-turn byte series (not the rows). A session that fails part-way
    leaves node ready for the next one (its replies in flight are read and dropped)."""
    found = session.index(path)
    summary = Summary(server.resident_lane)
    prices = PriceBook(server.package_dir, models_json(path))
    recorded = any(e.custom_type == configuration.SENT_ENTRY for e in found.entries.values())
    judge = configuration.Judge(server.settings_print, recorded_by_extension=recorded)
    server.send({"op": "reset"})
    try:
        with session.open_session(path) as handle:
            _measure_turns(
                found,
                handle,
                server,
                summary,
                lambda meta, result: rows.finish(meta, result, summary, prices, judge, on_turn),
            )
    except Exception:
        _resync(server)
        raise
    for why, count in judge.ignored.items():
        found.warnings[f"{configuration.SENT_ENTRY} entry ignored: {why} (the call's configuration is inferred)"] += (
            count
        )
    if judge.other_settings:
        found.warnings[
            "calls the extension sent with dedupe settings other than the audit's (their layer figures "
            "are the audit's settings')"
        ] += judge.other_settings
    return {
        "session": str(path),
        "serializer": server.label,
        "sample": server.sample,
        "reconstruction": server.reconstruction,
        "fallback": server.fallback,
        "summary": summary.result(),
        "warnings": dict(found.warnings),
        "warning_lines": dict(found.warning_lines),
        "series": (summary.unpatched_series, summary.patched_series),
        "series_by_layers": dict(summary.series),
        "money_series": {"tokens": dict(summary.ledger.tokens_series), "usd": dict(summary.ledger.usd_series)},
    }


def models_json(path: Path) -> Path:
    """The user's models.json (custom models and price overrides) of the agent dir the session is
    in (<agent dir>/sessions/<folder>/<file>.jsonl), else of the default agent dir."""
    parent = path.resolve().parent
    agent = parent.parent.parent if parent.parent.name == "sessions" else agentdir.default_agent_dir()
    return agent / "models.json"


def _measure_turns(
    found: session.SessionIndex,
    handle: BinaryIO,
    server: Serializer,
    summary: Summary,
    finish: Callable[[dict[str, Any], dict[str, Any]], None],
) -> None:
    tools = sorted(found.tools)
    sent: set[str] = set()
    silent: set[str] = set()
    claimed: set[str] = set()  # (the extension's entries a call of a row answers)
    pending: list[dict[str, Any]] = []

    def settle(limit: int) -> None:
        while len(pending) > limit:
            finish(pending.pop(0), server.reply())

    provider = None  # (a summary request goes to the provider of the call before it)
    for turn in session.turns(found):
        ids = turn.chain if server.reconstruction == "senpi" else turn.path
        for entry_id in ids:
            if entry_id not in sent and entry_id not in silent:
                _put(found, handle, server, entry_id, silent)
        sent = set(ids)
        raw_turn = session.read_entry(handle, found.entries[turn.entry_id], found.path)
        summary_call = turn.kind != "turn"
        call = session.Call(None, None, None, None, provider) if summary_call else session.call_of(raw_turn)
        provider = call.provider
        lane = "summary" if summary_call else rows.lane_of(call, server.resident_lane)
        server.send(
            {
                "op": "measure",
                "ids": [i for i in ids if i not in silent],
                "leaf": turn.leaf,
                "call": turn.kind,
                "window": session.context_window(turn.model),
                "lane": lane,
                "delta": call.delta_messages,
                "tools": tools,
            }
        )
        pending.append(
            {
                "turn": turn,
                "call": call,
                "lane": lane,
                "usage": session.usage_of({"message": raw_turn} if summary_call else raw_turn),
                "recorded": money.recorded(raw_turn if summary_call else raw_turn.get("message")),
                "entry": configuration.sent_entry_of(found, handle, turn, claimed),
            }
        )
        settle(IN_FLIGHT)
    server.send({"op": "flush"})
    settle(0)
    server.reply()  # the flush request's own reply
    configuration.unanswered(found, handle, claimed)


def _put(found: session.SessionIndex, handle: BinaryIO, server: Serializer, entry_id: str, silent: set[str]) -> None:
    entry = found.entries[entry_id]
    if server.reconstruction == "senpi" or entry.plain:  # sent as stored: no parse, no encode
        server.send_raw(
            b'{"op":"put","id":'
            + json.dumps(entry_id).encode()
            + b',"entry":'
            + session.read_raw(handle, entry, found.path)
            + b"}"
        )
        return
    message = session.to_message(session.read_entry(handle, entry, found.path))
    if message is None:  # e.g. a `!!cmd` or an empty branch summary: senpi sends nothing
        silent.add(entry_id)
    else:
        server.send({"op": "put", "id": entry_id, "message": message})


def _resync(server: Serializer) -> None:
    """Drop the replies still in flight: up to the empty reply of a flush (no measure replies {})."""
    with suppress(FatalError):  # node itself is gone: the next session says so
        server.send({"op": "flush"})
        while server.reply():
            pass
