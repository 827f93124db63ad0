"""Tokens and list-price dollars per call, and what each layer changes in them.

senpi records on each assistant message what the provider counted (`usage`: input, output,
cacheRead, cacheWrite and, on Anthropic, the 1-hour share cacheWrite1h) and what that cost at the
model's rates (`usage.cost`). A layer changes only the prompt, so a configuration's tokens are the
recorded ones shifted by the bytes it sends more or less, each byte priced where it sits in that
call: in the prefix the previous call of the same kind already sent (a prompt cache reads it) or
past it (a cache writes it). Without a usable record the tokens are estimated from the bytes."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

BYTES_PER_TOKEN = 4
CONFIGS = ("installed", "dist", "extension", "both")
MILLION = 1_000_000


LARGEST = 1e12  # more tokens (or dollars, or $ per million) than any real record holds


def count(value: Any) -> float | None:
    """A recorded number of tokens (or dollars): finite, not negative and not absurd (sums of such
    numbers stay finite); anything else is None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0 <= number <= LARGEST else None


@dataclass(frozen=True)
class Tokens:
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    cache_write_1h: float = 0.0  # (the part of cache_write kept for an hour)

    @property
    def prompt(self) -> float:
        return self.input + self.cache_read + self.cache_write

    @property
    def total(self) -> float:
        return self.prompt + self.output

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.cache_write_1h + other.cache_write_1h,
        )

    def as_json(self) -> dict[str, int]:
        return {
            "input": round(self.input),
            "output": round(self.output),
            "cacheRead": round(self.cache_read),
            "cacheWrite": round(self.cache_write),
            "cacheWrite1h": round(self.cache_write_1h),
            "total": round(self.total),
        }


@dataclass(frozen=True)
class Recorded:
    """What senpi recorded on one assistant message."""

    tokens: Tokens
    cost: float | None  # usage.cost.total; None when absent or not a usable number


def recorded(message: Any) -> Recorded | None:
    """The usage senpi recorded on an assistant message; None when it is missing, malformed, or
    counts no prompt token at all (a provider that reports nothing)."""
    usage = message.get("usage") if isinstance(message, dict) else None
    if not isinstance(usage, dict):
        return None
    counts = [count(usage.get(key)) for key in ("input", "output", "cacheRead", "cacheWrite")]
    if any(n is None for n in counts):
        return None
    given, output, read, write = (n or 0.0 for n in counts)
    if given + read + write == 0:
        return None
    long = count(usage.get("cacheWrite1h"))
    if long is None or long > write:
        long = 0.0
    cost = usage.get("cost")
    total = count(cost.get("total")) if isinstance(cost, dict) else None
    return Recorded(Tokens(given, output, read, write, long), total)


@dataclass(frozen=True)
class Rates:
    """A model's list price, USD per million tokens, as senpi's model registry gives it."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    tiers: tuple[tuple[float, Rates], ...] = ()  # (above this many prompt tokens, these rates)
    source: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "cacheWrite1h": 2 * self.input,
            "tiers": [{"inputTokensAbove": above, **tier.as_json()} for above, tier in self.tiers],
            "per": "USD per million tokens",
            "source": self.source,
        }


def cost(rates: Rates, tokens: Tokens) -> float:
    """Dollars, the way senpi's calculateCost prices a call: the tier with the highest threshold the
    prompt exceeds applies to the whole call; an hour-long cache write costs twice the input rate."""
    chosen, above = rates, -1.0
    for threshold, tier in rates.tiers:
        if tokens.prompt > threshold and threshold > above:
            chosen, above = tier, threshold
    short = tokens.cache_write - tokens.cache_write_1h
    return (
        chosen.input * tokens.input
        + chosen.output * tokens.output
        + chosen.cache_read * tokens.cache_read
        + chosen.cache_write * short
        + 2 * chosen.input * tokens.cache_write_1h
    ) / MILLION


def _take(buckets: dict[str, float], amount: float, order: tuple[str, ...]) -> None:
    """Remove `amount` tokens from the buckets in this order, never below zero."""
    for name in order:
        taken = min(buckets[name], amount)
        buckets[name] -= taken
        amount -= taken
        if amount <= 0:
            return


def shifted(base: Tokens, cached: float, fresh: float, cacheless: bool) -> Tokens:
    """`base` with `cached` tokens fewer in the cached prefix and `fresh` fewer past it (negative:
    more). Where the record has fewer tokens of a kind than the bytes say, the rest comes out of the
    next kind (a prefix that was not read was written); never below zero. A provider that recorded
    no cache use at all gets every token as plain input."""
    if cacheless:
        return replace(base, input=max(0.0, base.input - cached - fresh))
    share = base.cache_write_1h / base.cache_write if base.cache_write else 0.0
    buckets = {"input": base.input, "read": base.cache_read, "write": base.cache_write}
    if cached >= 0:
        _take(buckets, cached, ("read", "write", "input"))
    else:
        buckets["read"] -= cached
    if fresh >= 0:
        _take(buckets, fresh, ("write", "input", "read"))
    else:
        buckets["write"] -= fresh
    return Tokens(buckets["input"], base.output, buckets["read"], buckets["write"], buckets["write"] * share)


def _positions(row: dict[str, Any], config: str) -> tuple[int, int]:
    """(bytes in the prefix a cache already holds, bytes past it) of one configuration of a call; a
    delta call's bytes are all new."""
    total = row["bytes"][config]
    fresh = total if row.get("cache_write") is None else row["cache_write"][config]
    return total - fresh, fresh


def of_call(
    row: dict[str, Any], usage: Recorded | None, rates: Rates | None, base_config: str | None = None
) -> dict[str, Any]:
    """One call's tokens (and dollars, when the model has a price) in every configuration. The
    record belongs to `base_config` (audit/configuration.py decides it); without one, to the
    configuration senpi's payloadBytes names, else to senpi as installed."""
    base_config = base_config or next(iter(row.get("recorded_matches") or ()), "installed")
    base_cached, base_fresh = _positions(row, base_config)
    if usage is not None:
        base, source = usage.tokens, "recorded"
        cacheless = base.cache_read == 0 and base.cache_write == 0
    else:
        base = Tokens(cache_read=base_cached / BYTES_PER_TOKEN, cache_write=base_fresh / BYTES_PER_TOKEN)
        source, cacheless = "estimated", False
    tokens = {}
    for config in CONFIGS:
        cached, fresh = _positions(row, config)
        tokens[config] = shifted(
            base, (base_cached - cached) / BYTES_PER_TOKEN, (base_fresh - fresh) / BYTES_PER_TOKEN, cacheless
        )
    return {
        "tokens_are": source,
        "record_is": base_config,
        "tokens": tokens,
        "usd": {config: cost(rates, t) for config, t in tokens.items()} if rates else None,
        "recorded_usd": usage.cost if usage is not None else None,
    }


def as_json(call: dict[str, Any]) -> dict[str, Any]:
    usd = call["usd"]
    return {
        "tokens_are": call["tokens_are"],
        "record_is": call["record_is"],
        "tokens": {config: t.as_json() for config, t in call["tokens"].items()},
        "usd": {config: round(x, 9) for config, x in usd.items()} if usd else None,
        "recorded_usd": call["recorded_usd"],
    }
