"""An audited session's summary, accumulated turn by turn: totals split by how each call went out,
senpi's recorded payload sizes against ours, and what a prompt cache had to write anew."""

from __future__ import annotations

from array import array
from typing import Any

from senpi_guard import session

LANES = ("full", "delta", "unknown")
LISTED = 20  # mismatches and skipped turns listed by index; all are counted


def _percent(part: int, whole: int) -> float:
    return round(100 * part / whole, 1) if whole else 0.0


class Summary:
    """Nothing per turn is kept but two integers, for the plot."""

    def __init__(self, resident_lane: bool) -> None:
        self.resident_lane = resident_lane
        self.unpatched_series: array[int] = array("q")
        self.patched_series: array[int] = array("q")
        self.lanes = {lane: {"turns": 0, "unpatched_bytes": 0, "patched_bytes": 0, "extension_bytes": 0}
                      for lane in LANES}
        self.continuity: dict[str, int] = {}
        self.cache = {"unpatched": 0, "patched": 0, "extension": 0, "turns": 0}
        self.recorded = {"turns": 0, "matched": 0, "mismatches": []}
        self.skipped: dict[str, Any] = {"turns": 0, "first": []}
        self.largest: dict[str, Any] | None = None
        self.window: int | None = None
        self.first_over: dict[str, Any] | None = None
        self.patched_over: int | None = None
        self.collapsed: dict[str, int] = {}
        self.losing = {"unpatched": 0, "patched": 0}
        self.most_lost = {"unpatched": 0, "patched": 0}

    def skip(self, index: int, error: str) -> None:
        self.skipped["turns"] += 1
        if len(self.skipped["first"]) < LISTED:
            self.skipped["first"].append({"index": index, "error": error})

    def add(self, row: dict[str, Any]) -> None:
        lane = self.lanes[row["sent"]]
        lane["turns"] += 1
        lane["unpatched_bytes"] += row["unpatched_bytes"]
        lane["patched_bytes"] += row["patched_bytes"]
        lane["extension_bytes"] += row["extension_bytes"]
        kind = row["continuity"] or "not recorded"
        self.continuity[kind] = self.continuity.get(kind, 0) + 1
        if row["cache_write_unpatched"] is not None and row["sent"] == "full":
            self.cache["turns"] += 1
            self.cache["unpatched"] += row["cache_write_unpatched"]
            self.cache["patched"] += row["cache_write_patched"]
            self.cache["extension"] += row["cache_write_extension"]
        self._check_recorded(row)
        for side in ("unpatched", "patched"):
            lost = row["directives"]["distinct"] - row["directives"][f"kept_{side}"]
            self.losing[side] += lost > 0
            self.most_lost[side] = max(self.most_lost[side], lost)
        self.unpatched_series.append(row["unpatched_bytes"])
        self.patched_series.append(row["patched_bytes"])
        self._track_size(row)
        for tag, n in row["collapsed"].items():
            self.collapsed[tag] = max(self.collapsed.get(tag, 0), n)

    def _check_recorded(self, row: dict[str, Any]) -> None:
        recorded = row["recorded_payload_bytes"]
        if recorded is None:
            return
        self.recorded["turns"] += 1
        if recorded == row["unpatched_bytes"]:
            self.recorded["matched"] += 1
        elif len(self.recorded["mismatches"]) < LISTED:
            self.recorded["mismatches"].append({"index": row["index"], "recorded": recorded,
                                                "audit": row["unpatched_bytes"]})

    def _track_size(self, row: dict[str, Any]) -> None:
        if self.largest is None or row["unpatched_bytes"] > self.largest["unpatched_bytes"]:
            self.largest = {k: row[k] for k in ("index", "unpatched_bytes", "patched_bytes", "sent")}
        if self.window is None and row["model"]:
            self.window = session.context_window(row["model"])
        if self.window and row["sent"] != "delta":
            if self.first_over is None and row["est_tokens_unpatched"] > self.window:
                self.first_over = {"index": row["index"],
                                   "patched_over": row["est_tokens_patched"] > self.window}
            if self.patched_over is None and row["est_tokens_patched"] > self.window:
                self.patched_over = row["index"]

    def result(self) -> dict[str, Any]:
        full = self.lanes["full"]
        saved = full["unpatched_bytes"] - full["patched_bytes"]
        sent = {lane: totals | {"saved_bytes": totals["unpatched_bytes"] - totals["patched_bytes"],
                                "saved_with_extension_bytes": totals["unpatched_bytes"] - totals["extension_bytes"]}
                for lane, totals in self.lanes.items()}
        return {
            "turns": len(self.unpatched_series),
            "sent": sent,
            "continuity": self.continuity,
            "headline": {"over": "full re-sends", "turns": full["turns"],
                         "unpatched_bytes": full["unpatched_bytes"], "patched_bytes": full["patched_bytes"],
                         "saved_bytes": saved, "saved_percent": _percent(saved, full["unpatched_bytes"])},
            "cache_write": {"full_turns": self.cache["turns"], "unpatched_bytes": self.cache["unpatched"],
                            "patched_bytes": self.cache["patched"], "extension_bytes": self.cache["extension"],
                            "meaning": "bytes past the longest common prefix with the previous full "
                                       "re-send of this session: what a prompt cache writes anew"},
            "recorded_payload": {"turns": self.recorded["turns"], "matched": self.recorded["matched"],
                                 "mismatches": self.recorded["mismatches"]},
            "skipped_turns": self.skipped,
            "largest_turn": self.largest,
            "context_window_tokens": self.window,
            "first_turn_over_window_unpatched": self.first_over and self.first_over["index"],
            "that_turn_over_window_patched": self.first_over and self.first_over["patched_over"],
            "first_turn_over_window_patched": self.patched_over,
            "most_copies_collapsed_in_one_turn": self.collapsed,
            "turns_losing_a_directive": self.losing,
            "most_directives_lost_in_one_turn": self.most_lost,
            "unpatched_means": "senpi as installed, including its own dedupe where it has one",
            "delta_note": "the dist patch does not act on delta calls: their bytes are the same patched",
            "extension_note": "extension_bytes: what each call sends with the extension layer installed "
                              "(on full re-sends together with the dist patch)",
            "tokens_are": "estimates: UTF-8 bytes / 4",
        }
