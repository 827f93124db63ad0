"""Replay a session the way the Claude provider serialises it: per assistant turn, the prompt bytes
with and without the patch, through senpi's own buildPromptBlocks (one node process per session)."""

from __future__ import annotations

import json
import subprocess
import tempfile
from array import array
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from senpi_guard import sample, session, verify
from senpi_guard.config import Config
from senpi_guard.discover import Install, describe
from senpi_guard.errors import FatalError
from senpi_guard.patch.classify import State
from senpi_guard.patch.definition import Patch
from senpi_guard.reconcile import Reconciler


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


def _pairs(reconciler: Reconciler, install: Install) -> dict[str, verify.ModulePair]:
    insp = reconciler.inspect(install)
    if insp.state in (State.ERROR, State.UNSUPPORTED):
        raise FatalError(insp.detail)
    roles = ("prompt",) if reconciler.config.upstream_dedupe == "defer" else None
    return reconciler.module_pairs(insp, roles=roles)


@contextmanager
def serializer(installs: list[Install], patch: Patch, config: Config,
               allow_foreign_root: bool = False) -> Iterator[Serializer]:
    reconciler = Reconciler(patch, config, allow_foreign_root=allow_foreign_root)
    with ExitStack() as stack:
        chosen = next((i for i in installs if not i.unsupported), None)
        pairs = None
        if chosen is not None:
            try:
                pairs = _pairs(reconciler, chosen)
                label = f"senpi {chosen.version}'s own buildPromptBlocks ({chosen.package_dir})"
            except FatalError as exc:
                label = f"the sample shape-2 serialisation (senpi {chosen.version} unusable: {exc})"
        if pairs is None:
            if chosen is None:
                label = "the sample shape-2 serialisation (no senpi install found)"
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="senpi-guard-audit-")))
            sample.write_sample_package(folder / "pkg", 2, fillers=0)
            chosen = describe(folder / "pkg", "sample")
            pairs = _pairs(reconciler, chosen)
        sandbox = reconciler.sandbox(chosen, pairs)
        proc = stack.enter_context(verify.serve(chosen.package_dir, pairs, patch, config, sandbox))
        yield Serializer(label, proc)


class Summary:
    """Accumulates the session summary turn by turn (nothing per turn is kept but two integers,
    for the plot)."""

    def __init__(self) -> None:
        self.unpatched_series: array[int] = array("q")
        self.patched_series: array[int] = array("q")
        self.largest: dict[str, Any] | None = None
        self.window: int | None = None
        self.first_over: dict[str, Any] | None = None
        self.patched_over: int | None = None
        self.collapsed: dict[str, int] = {}
        self.losing = {"unpatched": 0, "patched": 0}
        self.most_lost = {"unpatched": 0, "patched": 0}

    def add(self, row: dict[str, Any]) -> None:
        for side in ("unpatched", "patched"):
            lost = row["directives"]["distinct"] - row["directives"][f"kept_{side}"]
            self.losing[side] += lost > 0
            self.most_lost[side] = max(self.most_lost[side], lost)
        self.unpatched_series.append(row["unpatched_bytes"])
        self.patched_series.append(row["patched_bytes"])
        if self.largest is None or row["unpatched_bytes"] > self.largest["unpatched_bytes"]:
            self.largest = {k: row[k] for k in ("index", "unpatched_bytes", "patched_bytes")}
        if self.window is None and row["model"]:
            self.window = session.context_window(row["model"])
        if self.window:
            if self.first_over is None and row["est_tokens_unpatched"] > self.window:
                self.first_over = {"index": row["index"],
                                   "patched_over": row["est_tokens_patched"] > self.window}
            if self.patched_over is None and row["est_tokens_patched"] > self.window:
                self.patched_over = row["index"]
        for tag, n in row["collapsed"].items():
            self.collapsed[tag] = max(self.collapsed.get(tag, 0), n)

    def result(self) -> dict[str, Any]:
        unpatched, patched = sum(self.unpatched_series), sum(self.patched_series)
        return {
            "turns": len(self.unpatched_series),
            "total_unpatched_bytes": unpatched,
            "total_patched_bytes": patched,
            "saved_bytes": unpatched - patched,
            "saved_percent": round(100 * (unpatched - patched) / unpatched, 1) if unpatched else 0.0,
            "largest_turn": self.largest,
            "context_window_tokens": self.window,
            "first_turn_over_window_unpatched": self.first_over and self.first_over["index"],
            "that_turn_over_window_patched": self.first_over and self.first_over["patched_over"],
            "first_turn_over_window_patched": self.patched_over,
            "most_copies_collapsed_in_one_turn": self.collapsed,
            "turns_losing_a_directive": self.losing,
            "most_directives_lost_in_one_turn": self.most_lost,
            "tokens_are": "estimates: UTF-8 bytes / 4",
        }


def audit_session(path: Path, server: Serializer,
                  on_turn: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Audit one session; each turn's row goes to `on_turn` as soon as it is measured. Returns the
    summary, the warnings and the per-turn byte series (not the rows)."""
    found = session.index(path)
    summary = Summary()
    sent: set[str] = set()
    silent: set[str] = set()
    with path.open("rb") as handle:
        for turn in session.turns(found):
            for entry_id in turn.path:
                if entry_id not in sent and entry_id not in silent:
                    message = session.to_message(session.read_entry(handle, found.entries[entry_id]))
                    if message is None:  # e.g. a `!!cmd` or an empty branch summary: senpi sends nothing
                        silent.add(entry_id)
                    else:
                        server.put(entry_id, message)
            sent = set(turn.path)
            result = server.measure([entry_id for entry_id in turn.path if entry_id not in silent])
            usage = session.usage_of(session.read_entry(handle, found.entries[turn.entry_id]))
            row = {
                "index": turn.index, "entry_id": turn.entry_id,
                "unpatched_bytes": result["originalBytes"], "patched_bytes": result["patchedBytes"],
                "collapsed": result["collapsed"],
                "est_tokens_unpatched": result["originalBytes"] // 4,
                "est_tokens_patched": result["patchedBytes"] // 4,
                "usage": usage, "model": turn.model,
                "directives": {"distinct": result["directives"],
                               "kept_unpatched": result["keptUnpatched"],
                               "kept_patched": result["keptPatched"]},
            }
            summary.add(row)
            if on_turn is not None:
                on_turn(row)
    return {"session": str(path), "serializer": server.label, "summary": summary.result(),
            "warnings": dict(found.warnings),
            "series": (summary.unpatched_series, summary.patched_series)}
