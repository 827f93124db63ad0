"""A session's tokens and dollars, summed per model and configuration (audit/money.py prices each
call)."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

from senpi_guard.audit.money import BYTES_PER_TOKEN, CONFIGS, Rates, Tokens
from senpi_guard.audit.prices import is_subscription

COUNTED = ("full", "delta", "context", "summary")  # (as every_call: a call of an unknown lane is left out)


def _zeros() -> dict[str, Tokens]:
    return {config: Tokens() for config in CONFIGS}


@dataclass
class Group:
    provider: str | None
    model: str | None
    rates: Rates | None
    no_price: str | None
    calls: int = 0
    recorded: int = 0
    recorded_usd: float = 0.0
    recorded_cost_calls: int = 0
    tokens: dict[str, Tokens] = field(default_factory=_zeros)
    usd: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CONFIGS, 0.0))
    # (ambiguous calls priced as each configuration that fits: the least and most of each figure)
    ambiguous: int = 0
    low: dict[str, float] = field(default_factory=lambda: dict.fromkeys([*CONFIGS, "saved"], 0.0))
    high: dict[str, float] = field(default_factory=lambda: dict.fromkeys([*CONFIGS, "saved"], 0.0))
    # (the same in tokens, for every call: a plan pays no $, but its limits count tokens)
    tokens_ambiguous: int = 0
    tokens_low: dict[str, float] = field(default_factory=lambda: dict.fromkeys([*CONFIGS, "saved"], 0.0))
    tokens_high: dict[str, float] = field(default_factory=lambda: dict.fromkeys([*CONFIGS, "saved"], 0.0))

    def add_token_range(self, call: dict[str, Any]) -> None:
        options = [call, *call.get("alternatives", ())]
        self.tokens_ambiguous += len(options) > 1
        for key in (*CONFIGS, "saved"):
            values = [
                o["tokens"]["installed"].total - o["tokens"]["both"].total if key == "saved" else o["tokens"][key].total
                for o in options
            ]
            self.tokens_low[key] += min(values)
            self.tokens_high[key] += max(values)

    def tokens_range(self) -> dict[str, Any] | None:
        if not self.tokens_ambiguous:
            return None
        return {
            "ambiguous_calls": self.tokens_ambiguous,
            **{key: [round(self.tokens_low[key]), round(self.tokens_high[key])] for key in (*CONFIGS, "saved")},
        }

    def add_range(self, call: dict[str, Any]) -> None:
        options = [call, *call.get("alternatives", ())]
        self.ambiguous += len(options) > 1
        for key in (*CONFIGS, "saved"):
            values = [o["usd"]["installed"] - o["usd"]["both"] if key == "saved" else o["usd"][key] for o in options]
            self.low[key] += min(values)
            self.high[key] += max(values)

    def usd_range(self) -> dict[str, Any] | None:
        if not self.ambiguous or not self.rates or not self.pays_list_price:
            return None
        return {
            "ambiguous_calls": self.ambiguous,
            **{key: [round(self.low[key], 9), round(self.high[key], 9)] for key in (*CONFIGS, "saved")},
        }

    @property
    def subscription(self) -> bool:
        return is_subscription(self.provider)

    @property
    def pays_list_price(self) -> bool:
        """Not a subscription, and not a provider whose every record says it cost nothing."""
        return not self.subscription and not (self.recorded and self.recorded_usd == 0)

    def billing(self) -> str:
        if self.subscription:
            return "subscription: pays no list price; tokens count against the plan's limits"
        if not self.pays_list_price:
            return (
                "no recorded cost (0 or none): pays no list price (a plan, a local model, or a provider "
                "that reports none)"
            )
        return "API list price"

    def result(self) -> dict[str, Any]:
        tokens = {config: t.as_json() for config, t in self.tokens.items()}
        saved = {config: {k: tokens["installed"][k] - v for k, v in t.items()} for config, t in tokens.items()}
        usd = {config: round(x, 9) for config, x in self.usd.items()} if self.rates else None
        return {
            "provider": self.provider,
            "model": self.model,
            "calls": self.calls,
            "tokens_recorded_calls": self.recorded,
            "tokens_estimated_calls": self.calls - self.recorded,
            "billing": self.billing(),
            "subscription": self.subscription,
            "pays_list_price": self.pays_list_price,
            "price": self.rates.as_json() if self.rates else None,
            "no_price": self.no_price,
            "tokens": tokens,
            "saved_tokens": saved,
            "usd": usd if self.pays_list_price else None,
            "list_price_equivalent_usd": usd,
            "saved_usd": (
                {config: round(self.usd["installed"] - x, 9) for config, x in self.usd.items()}
                if usd is not None and self.pays_list_price
                else None
            ),
            "recorded_usd": round(self.recorded_usd, 9) if self.recorded_cost_calls else None,
            "usd_range": self.usd_range(),
            "tokens_range": self.tokens_range(),
        }


class Ledger:
    """Per (provider, model), and per call for the plot."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str | None, str | None], Group] = {}
        self.tokens_series: dict[str, array[float]] = {config: array("d") for config in CONFIGS}
        self.usd_series: dict[str, array[float]] = {config: array("d") for config in CONFIGS}
        self.priced_calls = 0

    def add(self, row: dict[str, Any], call: dict[str, Any], rates: Rates | None, no_price: str | None) -> None:
        """One measured call (rows of every lane come here; only the counted lanes are summed, but
        every row keeps its place in the per-call series)."""
        counted = row["sent"] in COUNTED
        for config in CONFIGS:
            self.tokens_series[config].append(call["tokens"][config].total if counted else 0.0)
            self.usd_series[config].append(call["usd"][config] if counted and call["usd"] else 0.0)
        if not counted:
            return
        key = (row["provider"], row["model"])
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Group(row["provider"], row["model"], rates, no_price)
        group.calls += 1
        group.recorded += call["tokens_are"] == "recorded"
        if call["recorded_usd"] is not None:
            group.recorded_usd += call["recorded_usd"]
            group.recorded_cost_calls += 1
        for config in CONFIGS:
            group.tokens[config] += call["tokens"][config]
            if call["usd"]:
                group.usd[config] += call["usd"][config]
        group.add_token_range(call)
        if call["usd"]:
            group.add_range(call)
        self.priced_calls += call["usd"] is not None

    def result(self) -> dict[str, Any]:
        groups = [g.result() for g in self.groups.values()]
        total = _zeros()
        for group in self.groups.values():
            for config in CONFIGS:
                total[config] += group.tokens[config]
        paid = [g for g in groups if g["usd"] is not None]
        usd = {config: round(sum(g["usd"][config] for g in paid), 9) for config in CONFIGS} if paid else None
        calls = sum(g["calls"] for g in groups)
        recorded = sum(g["tokens_recorded_calls"] for g in groups)
        tokens = {config: t.as_json() for config, t in total.items()}
        return {
            "over": "full re-sends, delta calls, other providers' calls and summary requests (unknown lanes left out)",
            "calls": calls,
            "tokens_recorded_calls": recorded,
            "tokens_estimated_calls": calls - recorded,
            "tokens": tokens,
            # (from the rounded totals, so that the figures printed beside each other add up)
            "saved_tokens": {config: tokens["installed"]["total"] - t["total"] for config, t in tokens.items()},
            "usd": usd,
            "usd_calls": sum(g["calls"] for g in paid),
            "saved_usd": {config: round(usd["installed"] - x, 9) for config, x in usd.items()} if usd else None,
            "usd_range": _range_total([g["usd_range"] for g in paid if g["usd_range"]]),
            "by_model": groups,
            "tokens_are": (
                "recorded: senpi's usage on the assistant message (or on a compaction or branch summary "
                "entry: input, output, cacheRead, cacheWrite, cacheWrite1h), for the configuration that "
                "sent the call (sent_by: senpi-guard's entry for it, senpi's payloadBytes, or inferred "
                "from the recorded tokens; as installed when nothing says); estimated where nothing "
                "usable was recorded: UTF-8 bytes / "
                f"{BYTES_PER_TOKEN} of the counted text (system prompt, tools, images and output not "
                "counted)"
            ),
            "layers_are": (
                "estimates: the bytes a configuration sends more or less, as bytes / "
                f"{BYTES_PER_TOKEN} tokens where they sit in that call: within the prefix the previous "
                "call of the same kind sent, cache reads; past it, cache writes (hour-long writes in "
                "the call's recorded share); plain input for a provider that recorded no cache use. "
                "A delta call is credited only for the new messages it sends"
            ),
            "usd_are": (
                "estimates at API list price, from senpi's model registry (its calculateCost rules: "
                "tiers, an hour-long cache write at 2x input); a subscription or a provider that "
                "recorded a cost of 0 has no usd (its list_price_equivalent_usd is what it does not pay)"
            ),
        }


def _range_total(ranges: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not ranges:
        return None
    keys = [k for k in ranges[0] if k != "ambiguous_calls"]
    total = {k: [round(sum(r[k][0] for r in ranges), 9), round(sum(r[k][1] for r in ranges), 9)] for k in keys}
    return {"ambiguous_calls": sum(r["ambiguous_calls"] for r in ranges), **total}
