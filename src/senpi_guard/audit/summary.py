"""An audited session's summary, accumulated turn by turn: totals split by how each call went out,
senpi's recorded payload sizes against ours, and what a prompt cache had to write anew."""

from __future__ import annotations

from array import array
from typing import Any

from senpi_guard.audit import glance, session
from senpi_guard.audit.ledger import Ledger
from senpi_guard.audit.money import Rates

LANES = ("full", "delta", "unknown", "context", "summary")
CONFIGS = ("installed", "dist", "extension", "both")
LISTED = 20  # mismatches and skipped turns listed by index; all are counted


def _percent(part: int, whole: int) -> float:
    return round(100 * part / whole, 1) if whole else 0.0


class Summary:
    """Nothing per turn is kept but a few integers, for the plot."""

    def __init__(self, resident_lane: bool) -> None:
        self.resident_lane = resident_lane
        self.series: dict[str, array[int]] = {config: array("q") for config in CONFIGS}
        self.lanes = {lane: {"turns": 0, "bytes": dict.fromkeys(CONFIGS, 0)} for lane in LANES}
        self.providers: dict[str, int] = {}
        self.continuity: dict[str, int] = {}
        self.cache = {
            "turns": 0,
            "context_turns": 0,
            "bytes": dict.fromkeys(CONFIGS, 0),
            "context_bytes": dict.fromkeys(CONFIGS, 0),
        }
        self.recorded: dict[str, Any] = {"turns": 0, "matched": 0, "as": {}, "mismatches": []}
        self.skipped: dict[str, Any] = {"turns": 0, "first": []}
        self.largest: dict[str, Any] | None = None
        self.window: int | None = None
        self.first_over: dict[str, Any] | None = None
        self.patched_over: int | None = None
        self.collapsed: dict[str, int] = {}
        self.varied: dict[str, int] = {}  # tag -> the most distinct copies of it one call held
        self.losing = dict.fromkeys(CONFIGS, 0)
        self.most_lost = dict.fromkeys(CONFIGS, 0)
        self.ledger = Ledger()
        self.calls: dict[str, int] = {}  # turn, compaction, branch_summary
        self.sent_by: dict[str, int] = {}  # entry, payloadBytes, inferred, ambiguous, none

    @property
    def unpatched_series(self) -> array[int]:
        return self.series["installed"]

    @property
    def patched_series(self) -> array[int]:
        return self.series["dist"]

    def skip(self, index: int, error: str) -> None:
        self.skipped["turns"] += 1
        if len(self.skipped["first"]) < LISTED:
            self.skipped["first"].append({"index": index, "error": error})

    def add(
        self,
        row: dict[str, Any],
        priced: dict[str, Any] | None = None,
        rates: Rates | None = None,
        no_price: str | None = None,
    ) -> None:
        """One measured call; `priced` is its money.of_call (with the rates it used, or why none)."""
        if priced is not None:
            self.ledger.add(row, priced, rates, no_price)
        lane = self.lanes[row["sent"]]
        lane["turns"] += 1
        for config in CONFIGS:
            lane["bytes"][config] += row["bytes"][config]
            self.series[config].append(row["bytes"][config])
        provider = row["provider"] or "not recorded"
        self.providers[provider] = self.providers.get(provider, 0) + 1
        self.calls[row["call"]] = self.calls.get(row["call"], 0) + 1
        self.sent_by[row["sent_by"]["by"]] = self.sent_by.get(row["sent_by"]["by"], 0) + 1
        if row["sent"] not in ("context", "summary"):
            kind = row["continuity"] or "not recorded"
            self.continuity[kind] = self.continuity.get(kind, 0) + 1
        if row["cache_write"] is not None and row["sent"] in ("full", "context"):
            which = "" if row["sent"] == "full" else "context_"
            self.cache[f"{which}turns"] += 1
            for config in CONFIGS:
                self.cache[f"{which}bytes"][config] += row["cache_write"][config]
        self._check_recorded(row)
        if row["sent"] != "delta":
            for config in CONFIGS:
                lost = row["directives"]["distinct"] - row["directives"][f"kept_{config}"]
                self.losing[config] += lost > 0
                self.most_lost[config] = max(self.most_lost[config], lost)
        self._track_size(row)
        for tag, n in row["collapsed"].items():
            self.collapsed[tag] = max(self.collapsed.get(tag, 0), n)
        for tag, n in row["copies_vary"].items():
            self.varied[tag] = max(self.varied.get(tag, 0), n)

    def _check_recorded(self, row: dict[str, Any]) -> None:
        """senpi's own payloadBytes, against the configuration that produced the call."""
        recorded, config = row["recorded_payload_bytes"], row["recorded_as"]
        if recorded is None:
            return
        self.recorded["turns"] += 1
        self.recorded["as"][config] = self.recorded["as"].get(config, 0) + 1
        if config != "mismatch":
            self.recorded["matched"] += 1
        elif len(self.recorded["mismatches"]) < LISTED:
            self.recorded["mismatches"].append({"index": row["index"], "recorded": recorded, "audit": row["bytes"]})

    def _track_size(self, row: dict[str, Any]) -> None:
        if self.largest is None or row["unpatched_bytes"] > self.largest["unpatched_bytes"]:
            self.largest = {k: row[k] for k in ("index", "unpatched_bytes", "patched_bytes", "sent")}
        if self.window is None and row["model"]:
            self.window = session.context_window(row["model"])
        if self.window and row["sent"] != "delta":
            if self.first_over is None and row["est_tokens_unpatched"] > self.window:
                self.first_over = {"index": row["index"], "patched_over": row["est_tokens_patched"] > self.window}
            if self.patched_over is None and row["est_tokens_patched"] > self.window:
                self.patched_over = row["index"]

    def _sent(self) -> dict[str, Any]:
        return {
            lane: {
                "turns": totals["turns"],
                "bytes": totals["bytes"],
                "unpatched_bytes": totals["bytes"]["installed"],
                "patched_bytes": totals["bytes"]["dist"],
                "saved_bytes": totals["bytes"]["installed"] - totals["bytes"]["dist"],
                "saved_with_extension_bytes": totals["bytes"]["installed"] - totals["bytes"]["both"],
            }
            for lane, totals in self.lanes.items()
        }

    def _headline(self) -> dict[str, Any]:
        full = self.lanes["full"]["bytes"]
        saved = full["installed"] - full["dist"]
        return {
            "over": "full re-sends of senpi's Claude provider",
            "turns": self.lanes["full"]["turns"],
            "unpatched_bytes": full["installed"],
            "patched_bytes": full["dist"],
            "saved_bytes": saved,
            "saved_percent": _percent(saved, full["installed"]),
        }

    def _every_call(self) -> dict[str, Any]:
        counted = ("full", "delta", "context", "summary")
        every = {config: sum(self.lanes[lane]["bytes"][config] for lane in counted) for config in CONFIGS}
        return {
            "over": "full re-sends, delta calls, other providers' calls and summary requests (unknown lanes left out)",
            "turns": sum(self.lanes[lane]["turns"] for lane in counted),
            "bytes": every,
            "saved_percent": {
                config: _percent(every["installed"] - every[config], every["installed"]) for config in CONFIGS
            },
        }

    def result(self) -> dict[str, Any]:
        out = self._result()
        return out | {"at_a_glance": glance.of(out)}

    def _result(self) -> dict[str, Any]:
        return {
            "turns": len(self.series["installed"]),
            "calls": self.calls,
            "sent_by": self.sent_by,
            "providers": self.providers,
            "sent": self._sent(),
            "continuity": self.continuity,
            "headline": self._headline(),
            "every_call": self._every_call(),
            "cache_write": {
                "full_turns": self.cache["turns"],
                "bytes": self.cache["bytes"],
                "unpatched_bytes": self.cache["bytes"]["installed"],
                "patched_bytes": self.cache["bytes"]["dist"],
                "context_turns": self.cache["context_turns"],
                "context_bytes": self.cache["context_bytes"],
                "meaning": "bytes past the longest common prefix with the previous call of the same "
                "kind (full re-send, or another provider's call): what a prompt cache "
                "writes anew",
            },
            "recorded_payload": {
                "turns": self.recorded["turns"],
                "matched": self.recorded["matched"],
                "recorded_as": self.recorded["as"],
                "mismatches": self.recorded["mismatches"],
            },
            "skipped_turns": self.skipped,
            "largest_turn": self.largest,
            "context_window_tokens": self.window,
            "first_turn_over_window_unpatched": self.first_over and self.first_over["index"],
            "that_turn_over_window_patched": self.first_over and self.first_over["patched_over"],
            "first_turn_over_window_patched": self.patched_over,
            "most_copies_collapsed_in_one_turn": self.collapsed,
            "copies_vary": self.varied,
            "turns_losing_a_directive": self.losing
            | {"unpatched": self.losing["installed"], "patched": self.losing["dist"]},
            "most_directives_lost_in_one_turn": self.most_lost,
            "configurations": {
                "installed": "senpi as installed, including its own dedupe where it has one",
                "dist": "with the dist patch",
                "extension": "with the extension layer alone",
                "both": "with both layers",
            },
            "delta_note": "the dist patch does not act on delta calls, nor on other providers' calls",
            "tokens_are": "estimates: UTF-8 bytes / 4",
            "money": self.ledger.result(),
        }
