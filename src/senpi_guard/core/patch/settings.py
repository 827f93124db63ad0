"""A patch's settings, as its patch.toml declares them (`[settings.<name>]`: a kind, a default, and
whether the value is part of the rendered code), checked against what the user's config gives it.

Kinds: `tags` (a non-empty list of distinct plain tag names; when the patch has a marker, each
tag's marker must fit `max_marker_bytes` and hold no configured opening tag) and `choice` (one of
`choices`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from senpi_guard.errors import FatalError

TAG_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]{0,39}")
KINDS = ("tags", "choice")


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str
    default: Any
    choices: tuple[str, ...] = ()
    render: bool = False  # part of the rendered code: a change makes patched files stale
    top_level: bool = False  # may also be given at the top of config.toml (older configs)
    about: str = ""

    @classmethod
    def parse(cls, name: str, data: dict[str, Any]) -> Setting:
        kind = data["kind"]
        if kind not in KINDS:
            raise ValueError(f"setting {name!r} has the unknown kind {kind!r}")
        default = tuple(data["default"]) if isinstance(data["default"], list) else data["default"]
        return cls(name, kind, default, tuple(data.get("choices", ())), bool(data.get("render", False)),
                   bool(data.get("top_level", False)), data.get("about", ""))


def check(setting: Setting, value: Any, where: str, marker: str = "", max_marker_bytes: int = 0) -> Any:
    """The value, checked (tuples for lists); a one-line FatalError naming the key and the fix."""
    key = f"{where}: '{setting.name}'"
    if setting.kind == "choice":
        if value not in setting.choices:
            raise FatalError(f"{key} is {value!r}; use " + " or ".join(f'"{c}"' for c in setting.choices)
                             + "; nothing was changed")
        return value
    if not isinstance(value, list | tuple) or not value or not all(isinstance(t, str) for t in value):
        raise FatalError(f"{key} must be a non-empty list of tag names, e.g. {setting.name} = "
                         "[\"ultrawork-mode\"]; nothing was changed")
    for tag in value:
        if not TAG_PATTERN.fullmatch(tag):
            raise FatalError(f"{where}: tag {tag!r} is not a plain tag name (letters, digits, - _ . :; "
                             "at most 40); nothing was changed")
    if len(set(value)) != len(value):
        raise FatalError(f"{key} lists a tag twice; nothing was changed")
    if marker:
        check_markers(tuple(value), marker, max_marker_bytes)
    return tuple(value)


def check_markers(tags: tuple[str, ...], marker: str, max_marker_bytes: int) -> None:
    for tag in tags:
        text = marker.replace("{tag}", tag)
        size = len(text.encode("utf-8"))
        if size > max_marker_bytes:
            raise FatalError(f"tag {tag!r} is too long: its marker would be {size} bytes "
                             f"(at most {max_marker_bytes}); shorten it in the config")
        for other in tags:
            if f"<{other}>" in text:
                raise FatalError(f"the marker for {tag!r} would contain <{other}>; rename the tag in the config")
