"""List prices from senpi's own model registry: the JSON data files of the pi-ai package the
installed senpi bundles (`dist/providers/data/<provider>.json`: {api: {model id: {cost, …}}}), and
the user's `<agent dir>/models.json` (custom models and `modelOverrides`, as senpi applies them).
Never a price table of our own: a model senpi lists no price for has none here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from senpi_guard.audit.money import Rates, count
from senpi_guard.io import reader

# senpi registers these providers with the anthropic provider's model list (and its costs):
# claude-sdk-oauth/index.js maps getModels("anthropic").
ALIASES = {"claude-sdk-oauth": "anthropic", "claude-agent-sdk": "anthropic"}
# Billed by plan, not by token (OAuth logins and coding/token plans): no list price is paid there.
SUBSCRIPTIONS = {"claude-sdk-oauth", "claude-agent-sdk", "openai-codex", "github-copilot", "kimi-coding"}
PLAN_PARTS = ("token-plan", "-coding")  # (alibaba-token-plan, zai-coding-cn, …)


def is_subscription(provider: str | None) -> bool:
    return provider is not None and (provider in SUBSCRIPTIONS or any(p in provider for p in PLAN_PARTS))


PI_AI = (("@earendil-works", "pi-ai"), ("@code-yeongyu", "senpi-ai"))
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}")
RATE_KEYS = ("input", "output", "cacheRead", "cacheWrite")


def registry_dir(package_dir: Path | None) -> Path | None:
    """pi-ai's data folder, looked up from the package dir the way node resolves a dependency."""
    if package_dir is None:
        return None
    for folder in (package_dir, *package_dir.parents):
        for scope, name in PI_AI:
            data = folder / "node_modules" / scope / name / "dist" / "providers" / "data"
            if data.is_dir():
                return data
    return None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(reader.read(path, reader.JSON))
    except (OSError, ValueError, RecursionError, reader.Refused):  # (past its cap: not senpi's)
        return None


def rates_of(spec: Any, source: str) -> Rates | None:
    """A model entry's `cost` ({input, output, cacheRead, cacheWrite, tiers?}) as Rates; a missing
    rate is 0 (senpi's default); None when it is no price at all (malformed, or every rate 0)."""
    if not isinstance(spec, dict):
        return None
    numbers = [count(spec.get(key, 0)) for key in RATE_KEYS]
    if any(n is None for n in numbers) or not any(numbers):
        return None
    tiers = []
    for tier in spec.get("tiers") if isinstance(spec.get("tiers"), list) else ():
        above = count(tier.get("inputTokensAbove")) if isinstance(tier, dict) else None
        rates = rates_of({k: v for k, v in tier.items() if k != "tiers"}, source) if above is not None else None
        if rates is not None:
            tiers.append((above, rates))
    given, output, read, write = (n or 0.0 for n in numbers)
    return Rates(given, output, read, write, tuple(tiers), source)


class PriceBook:
    """Rates per (provider, model), read once each."""

    def __init__(self, package_dir: Path | None, models_json: Path | None) -> None:
        self.data = registry_dir(package_dir)
        self.models_json = models_json
        custom = _read_json(models_json) if models_json is not None and models_json.is_file() else None
        providers = custom.get("providers") if isinstance(custom, dict) else None
        self.custom: dict[str, Any] = providers if isinstance(providers, dict) else {}
        self.files: dict[str, dict[str, Any]] = {}
        self.found: dict[tuple[str, str], tuple[Rates | None, str]] = {}

    def lookup(self, provider: str | None, model: str | None) -> tuple[Rates | None, str]:
        """The model's rates and where they came from, or None and why there are none."""
        if not provider or not model:
            return None, "the call recorded no provider or model"
        key = (provider, model)
        if key not in self.found:
            self.found[key] = self._lookup(provider, model)
        return self.found[key]

    def _lookup(self, provider: str, model: str) -> tuple[Rates | None, str]:
        mine = self.custom.get(provider) if isinstance(self.custom.get(provider), dict) else {}
        for entry in mine.get("models") if isinstance(mine.get("models"), list) else ():
            if isinstance(entry, dict) and entry.get("id") == model:  # a custom model replaces a built-in one
                return self._priced(entry.get("cost"), f"{self.models_json} (providers.{provider}.models)", model)
        spec, where = self._builtin(provider, model)
        override = mine.get("modelOverrides")
        override = override.get(model) if isinstance(override, dict) else None
        if isinstance(override, dict) and isinstance(override.get("cost"), dict):
            extra = override["cost"]
            if spec is not None:
                merged = {**(spec if isinstance(spec, dict) else {}), **extra}
                spec, where = merged, f"{where} with the cost override in {self.models_json}"
            elif all(key in extra for key in RATE_KEYS):  # (a model an extension registers keeps its cost
                spec = extra  # in code: only a complete override prices it)
                where = f"{self.models_json} (providers.{provider}.modelOverrides)"
            else:
                return None, f"{where}; {self.models_json} overrides only part of its cost"
        if spec is None:
            return None, where
        return self._priced(spec, where, model)

    def _priced(self, spec: Any, where: str, model: str) -> tuple[Rates | None, str]:
        rates = rates_of(spec, where)
        return (rates, where) if rates is not None else (None, f"{where} lists no price for {model}")

    def _builtin(self, provider: str, model: str) -> tuple[Any, str]:
        """The registry entry's cost (None when the model is not there) and where it was looked for."""
        name = ALIASES.get(provider, provider)
        if self.data is None:
            return None, "no model registry in the installed senpi (pi-ai's data files)"
        if not SAFE_NAME.fullmatch(name):
            return None, f"provider {provider[:40]!r} is not in senpi's model registry"
        if name not in self.files:
            raw = _read_json(self.data / f"{name}.json")
            flat: dict[str, Any] = {}
            for group in raw.values() if isinstance(raw, dict) else ():
                if isinstance(group, dict):
                    flat.update(group)  # (as flattenModelCatalog merges the per-api groups)
            self.files[name] = flat
        entry = self.files[name].get(model)
        where = str(self.data / f"{name}.json")
        if not isinstance(entry, dict):
            return None, f"{provider}/{model} is not in senpi's model registry ({where})"
        return entry.get("cost"), where
