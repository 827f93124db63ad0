"""What a settings change does to messages already sent. Settings marked `reshapes` in patch.toml
(directive-dedupe: its tag list and min_bytes) change what earlier messages look like once re-rendered: a live session's
next call no longer matches what it sent before. `apply` and `status` say what that costs; the
watcher never makes such a change by itself."""

from __future__ import annotations

import json
from typing import Any

from senpi_guard.core.patch.definition import CONFIG_SLOT, CONFIG_SLOT_END, Patch
from senpi_guard.core.patch.settings import Setting
from senpi_guard.io.config import Config

COST = {
    "dist": "the next full re-send of each live session misses the prompt cache once",
    "extension": "each senpi session resumed after it sends its earlier messages differently, so it "
    "re-sends its whole context once (claude-sdk-oauth: one flatten; other providers: one "
    "uncached prompt); a senpi already running keeps the extension it loaded",
}


def slot_in(data: bytes) -> dict[str, Any] | None:
    """The settings a rendered file was written with (its config literal), or None when it has none
    this version can read (a hand-edited file, another senpi-guard's)."""
    text = data.decode("utf-8", "replace")
    start = text.find(CONFIG_SLOT)
    end = text.find(CONFIG_SLOT_END, start + 1)
    if start == -1 or end == -1 or end - start > 1_000_000:
        return None
    try:
        slot = json.loads(text[start + len(CONFIG_SLOT) : end])
    except (ValueError, RecursionError):
        return None
    return slot if isinstance(slot, dict) else None


def _tags_ok(value: Any, words: tuple[str, ...] = ()) -> bool:
    return (
        value is None
        or (isinstance(value, str) and value in words)
        or (isinstance(value, list) and all(isinstance(t, str) for t in value))
    )


def _tags_text(setting: Setting, slot: dict[str, Any]) -> str:
    tags = slot.get(setting.name)
    if isinstance(tags, str):
        count = len(slot.get(setting.known_as) or []) if setting.known_as else 0
        means = setting.word_means.format_map({**slot, "count": count}) if setting.word_means else ""
        return f"{tags} ({means})" if means else tags
    if isinstance(tags, list):
        return f"{len(tags)} tags" if len(tags) > 3 else ", ".join(tags)
    return "unknown"


def change(patch: Patch, old: dict[str, Any] | None, config: Config) -> str | None:
    """How the reshaping settings differ between a file rendered with `old` and what `config`
    renders now, in words; None when they do not (or the old ones cannot be read)."""
    lists = [s for s in patch.settings_schema if s.kind == "tags" and s.reshapes]
    if old is None or not all(
        _tags_ok(old.get(s.name), s.words) and _tags_ok(old.get(s.known_as)) and _tags_ok(old.get(s.events_as))
        for s in lists
    ):
        return None
    new = patch.rendered(config)
    keys = [s.name for s in patch.settings_schema if s.reshapes]
    keys += [k for s in lists for k in (s.known_as, s.events_as) if k]
    same = [k for k in keys if _same(old.get(k), new.get(k))]
    if len(same) == len(keys):
        return None
    said, told = [], set()
    for setting in lists:
        told |= {setting.name, setting.known_as}  # (its event tags, when they change, are told below)
        if {setting.name, setting.known_as} - {""} <= set(same):
            continue
        before, after = old.get(setting.name), new.get(setting.name)
        if isinstance(before, list) and isinstance(after, list):
            added = [t for t in after if t not in before]
            removed = [t for t in before if t not in after]
            said.append(f"{setting.name} " + ", ".join([f"+{t}" for t in added] + [f"-{t}" for t in removed]))
        else:
            said.append(f"{setting.name} {_tags_text(setting, old)} -> {_tags_text(setting, new)}")
    for key in keys:
        if key not in told and key not in same:
            said.append(f"{key} {str(old.get(key))[:40]} -> {str(new.get(key))[:40]}")
    return "; ".join(said)


def _same(a: Any, b: Any) -> bool:
    """Equal settings; tag lists in any order (the dedupe treats them as a set)."""
    if isinstance(a, list) and isinstance(b, list):
        return sorted(map(str, a)) == sorted(map(str, b))
    return a == b


def cost(layer: str, what: str) -> str:
    return f"the config changes what earlier messages look like ({what}): {COST[layer]}"
