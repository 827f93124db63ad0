"""Replay a session the way the Claude provider serialises it: per assistant turn, the prompt bytes
with and without the patch, through senpi's own buildPromptBlocks (one node process per session)."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from senpi_guard import engine, sample, session, verify
from senpi_guard.config import Config
from senpi_guard.errors import FatalError
from senpi_guard.install import Install, describe
from senpi_guard.patchset import Patch


@dataclass
class Serializer:
    """Where the serialisation comes from, and the live node process that runs it."""

    label: str
    proc: subprocess.Popen[str]

    def put(self, entry_id: str, message: dict[str, Any]) -> None:
        self.proc.stdin.write(json.dumps({"op": "put", "id": entry_id, "message": message}) + "\n")

    def measure(self, ids: list[str]) -> dict[str, Any]:
        self.proc.stdin.write(json.dumps({"op": "measure", "ids": ids}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise FatalError("the audit's node process ended early: "
                             + (self.proc.stderr.read().strip().splitlines() or ["no output"])[-1])
        reply = json.loads(line)
        if "error" in reply:
            raise FatalError(f"senpi's buildPromptBlocks failed on a session context: {reply['error']}")
        return reply


def _pairs(install: Install, patch: Patch, config: Config) -> dict[str, verify.ModulePair]:
    insp = engine.inspect(install, patch, config)
    if insp.state in (engine.ERROR, engine.UNSUPPORTED):
        raise FatalError(insp.detail)
    pairs = {}
    for tf in insp.files:
        if tf.target.role == "upstream" and config.upstream_dedupe == "defer":
            continue
        base = engine.base_of(install, patch, config, tf)
        candidate = engine.render(patch, config, tf.target, base, tf.path)
        pairs[tf.target.role] = verify.ModulePair(tf.path, tf.target.function, base, candidate)
    return pairs


@contextmanager
def serializer(installs: list[Install], patch: Patch, config: Config) -> Iterator[Serializer]:
    with ExitStack() as stack:
        chosen = next((i for i in installs if not i.unsupported), None)
        pairs = None
        if chosen is not None:
            try:
                pairs = _pairs(chosen, patch, config)
                label = f"senpi {chosen.version}'s own buildPromptBlocks ({chosen.package_dir})"
            except FatalError as exc:
                label = f"the sample shape-2 serialisation (senpi {chosen.version} unusable: {exc})"
        if pairs is None:
            if chosen is None:
                label = "the sample shape-2 serialisation (no senpi install found)"
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="senpi-guard-audit-")))
            sample.write_sample_package(folder / "pkg", 2, fillers=0)
            chosen = describe(folder / "pkg", "sample")
            pairs = _pairs(chosen, patch, config)
        node, _ = verify.find_node()
        placed = stack.enter_context(verify.mirror(chosen.package_dir, list(pairs.values())))

        def spec(role: str) -> dict[str, Any] | None:
            pair = pairs.get(role)
            if pair is None:
                return None
            original, candidate = placed[pair.real_path]
            return {"original": str(original), "candidate": str(candidate), "export": pair.export}

        job = {"mode": "serve", "call": patch.call, "tags": list(config.tags),
               "marker": patch.marker_template, "maxMarkerBytes": patch.max_marker_bytes,
               "prompt": spec("prompt"), "upstream": spec("upstream")}
        proc = subprocess.Popen([node, str(verify.harness_path())], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            proc.stdin.write(json.dumps(job) + "\n")
            proc.stdin.flush()
            ready = proc.stdout.readline()
            if not ready.startswith('{"ready"'):
                tail = (proc.stderr.read().strip().splitlines() or [ready.strip() or "no output"])[-1]
                raise FatalError(f"the audit could not load senpi's modules in node: {tail}")
            yield Serializer(label, proc)
        finally:
            if proc.stdin and not proc.stdin.closed:
                proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def audit_session(path: Path, server: Serializer) -> dict[str, Any]:
    found = session.index(path)
    rows: list[dict[str, Any]] = []
    sent: set[str] = set()
    with path.open("rb") as handle:
        for turn in session.turns(found):
            for entry_id in turn.path:
                if entry_id not in sent:
                    message = session.to_message(session.read_entry(handle, found.entries[entry_id]))
                    server.put(entry_id, message)
            sent = set(turn.path)
            result = server.measure(turn.path)
            usage = session.usage_of(session.read_entry(handle, found.entries[turn.entry_id]))
            rows.append({
                "index": turn.index, "entry_id": turn.entry_id,
                "unpatched_bytes": result["originalBytes"], "patched_bytes": result["patchedBytes"],
                "collapsed": result["collapsed"],
                "est_tokens_unpatched": result["originalBytes"] // 4,
                "est_tokens_patched": result["patchedBytes"] // 4,
                "usage": usage, "model": turn.model,
            })
    return {"session": str(path), "serializer": server.label, "turns": rows,
            "summary": summarize(rows), "warnings": dict(found.warnings)}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    unpatched = sum(r["unpatched_bytes"] for r in rows)
    patched = sum(r["patched_bytes"] for r in rows)
    largest = max(rows, key=lambda r: r["unpatched_bytes"], default=None)
    window = next((session.context_window(r["model"]) for r in rows if r["model"]), None)
    first_over = patched_over = None
    if window:
        first_over = next((r for r in rows if r["est_tokens_unpatched"] > window), None)
        patched_over = next((r for r in rows if r["est_tokens_patched"] > window), None)
    collapsed: dict[str, int] = {}
    for row in rows:
        for tag, n in row["collapsed"].items():
            collapsed[tag] = max(collapsed.get(tag, 0), n)
    return {
        "turns": len(rows),
        "total_unpatched_bytes": unpatched,
        "total_patched_bytes": patched,
        "saved_bytes": unpatched - patched,
        "saved_percent": round(100 * (unpatched - patched) / unpatched, 1) if unpatched else 0.0,
        "largest_turn": None if largest is None else {
            "index": largest["index"], "unpatched_bytes": largest["unpatched_bytes"],
            "patched_bytes": largest["patched_bytes"]},
        "context_window_tokens": window,
        "first_turn_over_window_unpatched": None if first_over is None else first_over["index"],
        "that_turn_over_window_patched": None if first_over is None else
        first_over["est_tokens_patched"] > window,
        "first_turn_over_window_patched": None if patched_over is None else patched_over["index"],
        "most_copies_collapsed_in_one_turn": collapsed,
        "tokens_are": "estimates: UTF-8 bytes / 4",
    }
