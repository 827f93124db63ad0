"""A patch's settings, as its patch.toml declares them (`[settings.<name>]`: a kind, a default, and
whether the value is part of the rendered code), checked against what the user's config gives it.

Kinds: `tags` (a non-empty list of distinct plain tag names; when the patch has a marker, each
tag's marker must fit `max_marker_bytes` and hold no configured opening tag; or, where the setting
allows it, one of its `words`, e.g. "auto"), `choice` (one of `choices`) and `number` (from `min` to
`max`; 0 too when `off_is_zero`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from senpi_guard.errors import FatalError
from senpi_guard.io.config import out_of_range

TAG_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]{0,39}")
KINDS = ("tags", "choice", "number")


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str
    default: Any
    choices: tuple[str, ...] = ()
    render: bool = False  # part of the rendered code: a change makes patched files stale
    top_level: bool = False  # may also be given at the top of config.toml (older configs)
    about: str = ""
    words: tuple[str, ...] = ()  # (tags) words that may stand for a list, e.g. "auto"
    low: float | None = None  # (number) the range
    high: float | None = None
    off_is_zero: bool = False  # (number) 0 turns the feature off
    known: tuple[str, ...] = ()  # (tags) the tags a word such as "auto" keeps at any size
    when: tuple[str, Any] | None = None  # rendered only while that other setting has that value
    reshapes: bool = False  # a change alters what already-sent messages look like (see reshape.py)
    extension_only: bool = False  # (render = "extension") rendered into the extension layer alone
    whole: bool = False  # (number) whole numbers only
    known_as: str = ""  # (tags) while a word stands for the list, the known tags are rendered under this key
    word_means: str = ""  # (tags) how a word reads in a settings change ({count}: known tags; {<setting>})
    job_as: str = ""  # a replay's job also carries the value under this key, while it is rendered
    events: tuple[str, ...] = ()  # (tags) tags whose repeats are events: a word such as "auto" never collapses them
    events_as: str = ""  # (tags) while a word stands for the list, the event tags are rendered under this key

    @classmethod
    def parse(cls, name: str, data: dict[str, Any]) -> Setting:
        kind = data["kind"]
        if kind not in KINDS:
            raise ValueError(f"setting {name!r} has the unknown kind {kind!r}")
        default = tuple(data["default"]) if isinstance(data["default"], list) else data["default"]
        return cls(
            name,
            kind,
            default,
            tuple(data.get("choices", ())),
            data.get("render", False) is True,
            bool(data.get("top_level", False)),
            data.get("about", ""),
            tuple(data.get("words", ())),
            data.get("min"),
            data.get("max"),
            bool(data.get("off_is_zero", False)),
            tuple(data.get("known", ())),
            _when(data.get("when")),
            bool(data.get("reshapes", False)),
            extension_only=_extension_only(name, data),
            whole=bool(data.get("whole", False)),
            known_as=data.get("known_as", ""),
            word_means=data.get("word_means", ""),
            job_as=data.get("job_as", ""),
            events=tuple(data.get("events", ())),
            events_as=data.get("events_as", ""),
        )


def check(setting: Setting, value: Any, where: str, marker: str = "", max_marker_bytes: int = 0) -> Any:
    """The value, checked (tuples for lists); a one-line FatalError naming the key and the fix."""
    key = f"{where}: '{setting.name}'"
    if setting.kind == "choice":
        if value not in setting.choices:
            raise FatalError(
                f"{key} is {value!r}; use " + " or ".join(f'"{c}"' for c in setting.choices) + "; nothing was changed"
            )
        return value
    if setting.kind == "number":
        return _number(setting, value, key)
    if isinstance(value, str) and value in setting.words:
        if marker:
            check_markers(setting.known, marker, max_marker_bytes)
        return value
    if not isinstance(value, list | tuple) or not value or not all(isinstance(t, str) for t in value):
        raise FatalError(
            f"{key} must be a non-empty list of tag names, e.g. {setting.name} = "
            f'["{_example(setting)}"]' + "".join(f' or "{w}"' for w in setting.words) + "; nothing was changed"
        )
    for tag in value:
        if not TAG_PATTERN.fullmatch(tag):
            raise FatalError(
                f"{where}: tag {tag!r} is not a plain tag name (letters, digits, - _ . :; "
                "at most 40); nothing was changed"
            )
    if len(set(value)) != len(value):
        raise FatalError(f"{key} lists a tag twice; nothing was changed")
    if marker:
        check_markers(tuple(value), marker, max_marker_bytes)
    return tuple(value)


def _example(setting: Setting) -> str:
    """A tag to show in a message: the setting's own first default (or known) tag."""
    tags = [*(setting.default if isinstance(setting.default, tuple) else ()), *setting.known]
    return tags[0] if tags else "a-tag"


def check_markers(tags: tuple[str, ...], marker: str, max_marker_bytes: int) -> None:
    for tag in tags:
        text = marker.replace("{tag}", tag)
        size = len(text.encode("utf-8"))
        if size > max_marker_bytes:
            raise FatalError(
                f"tag {tag!r} is too long: its marker would be {size} bytes "
                f"(at most {max_marker_bytes}); shorten it in the config"
            )
        for other in tags:
            if f"<{other}>" in text:
                raise FatalError(f"the marker for {tag!r} would contain <{other}>; rename the tag in the config")


def _extension_only(name: str, data: dict[str, Any]) -> bool:
    """`render = "extension"`: the value is in the extension's code and config digest only, so a change
    makes the extension stale and leaves the patched dist files current."""
    render = data.get("render", False)
    if not (isinstance(render, bool) or render == "extension"):  # (1 == True: a number is refused too)
        raise ValueError(f'setting {name!r} has render = {render!r}; use true, false or "extension"')
    return render == "extension"


def _number(setting: Setting, value: Any, key: str) -> float | int:
    low, high = setting.low, setting.high
    if setting.off_is_zero and value == 0 and not isinstance(value, bool):
        return value
    problem = out_of_range(key, value, low, high, setting.whole, " (or 0 for off)" if setting.off_is_zero else "")
    if problem:
        raise FatalError(f"{problem}; nothing was changed")
    return int(value) if setting.whole else value


def _when(data: Any) -> tuple[str, Any] | None:
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) != {"setting", "value"}:
        raise ValueError('a setting\'s `when` must be {setting = "…", value = …}')
    return data["setting"], data["value"]
