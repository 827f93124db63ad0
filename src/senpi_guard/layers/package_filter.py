"""Whether senpi loads a file, as senpi 2026.8.22-2's package manager decides it from the
settings (dist/core/package-manager.js: applyPatterns, applyAutoloadDisabledPatterns,
isEnabledByOverrides): the package's own entry filters for its index.js, and minimatch's globs as
far as a file's name and path need them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

CHECK = "index.js"  # the exported package's one extension: the start-up check, which loads the rendered file


def loads_check(entry: Any, folder: Path) -> bool:
    """Whether senpi loads the package's index.js given its settings entry: a plain source string
    loads what the manifest lists; an object filters it (`extensions` patterns, `autoload: false`)
    as senpi 2026.8.22-2's package manager does (applyPatterns, applyAutoloadDisabledPatterns)."""
    if not isinstance(entry, dict):
        return True
    patterns = entry.get("extensions")
    if isinstance(patterns, str):  # (senpi iterates it: each character a pattern)
        patterns = list(patterns)
    elif patterns is not None:
        patterns = [p for p in patterns if isinstance(p, str)] if isinstance(patterns, list) else []
    path = folder / CHECK
    if entry.get("autoload") is False:  # (only what a pattern names is added)
        enabled = False
        for pattern in patterns or []:
            target = pattern[1:] if pattern[:1] in "+-!" and pattern else pattern
            by_name = pattern.startswith(("+", "-"))  # (an exact path, not a glob)
            if exact(path, target, folder) if by_name else matches(path, target, folder):
                enabled = not pattern.startswith(("-", "!"))
        return enabled
    if patterns is None:
        return True
    if not patterns:
        return False
    includes = [p for p in patterns if not p.startswith(("+", "-", "!"))]
    return _overridden(path, patterns, folder, not includes or any(matches(path, p, folder) for p in includes))


def enabled_by_overrides(path: Path, patterns: list[Any], base: Path) -> bool:
    """Whether settings' top-level `extensions` patterns leave an auto-discovered file on
    (isEnabledByOverrides, relative to `base`: the agent dir)."""
    return _overridden(path, [p for p in patterns if isinstance(p, str)], base, True)


def _overridden(path: Path, patterns: list[str], base: Path, enabled: bool) -> bool:
    """`enabled` after the overrides: a `!` glob switches it off, a `+` path back on, a `-` path off."""
    if enabled and any(matches(path, p[1:], base) for p in patterns if p.startswith("!")):
        enabled = False
    if not enabled and any(exact(path, p[1:], base) for p in patterns if p.startswith("+")):
        enabled = True
    return enabled and not any(exact(path, p[1:], base) for p in patterns if p.startswith("-"))


def exact(path: Path, pattern: str, base: Path) -> bool:
    wanted = pattern[2:] if pattern.startswith(("./", ".\\")) else pattern
    return wanted in (path.relative_to(base).as_posix(), path.as_posix())


def matches(path: Path, pattern: str, base: Path) -> bool:
    """minimatch of the file's path relative to the package, its name or its whole path."""
    return any(_glob(text, pattern) for text in (path.relative_to(base).as_posix(), path.name, path.as_posix()))


def _glob(text: str, pattern: str) -> bool:
    """A glob as minimatch reads one: a leading `!` negates, `#` starts a comment, `**` crosses
    folders and `*` and `?` stay in one (neither enters a folder whose name starts with a dot),
    [classes] and {a,b}. Extglobs, POSIX classes and {a..b} ranges are not read (taken literally)."""
    if pattern.startswith("#"):
        return False
    if pattern.startswith("!"):
        return not _glob(text, pattern[1:])
    braces = re.match(r"^(.*?)\{([^{}]*,[^{}]*)\}(.*)$", pattern)
    if braces:
        return any(_glob(text, braces[1] + option + braces[3]) for option in braces[2].split(","))
    out, i = "", 0
    while i < len(pattern):
        start = i == 0 or pattern[i - 1] == "/"  # (a wildcard opening a name matches no leading dot)
        if start and pattern.startswith("**/", i):  # (any folders, none of them a dot one)
            out, i = out + "(?:(?!\\.)[^/]*/)*", i + 3
        elif start and pattern.startswith("**", i) and i + 2 == len(pattern):
            out, i = out + "(?:(?!\\.)[^/]*(?:/(?!\\.)[^/]*)*)?", i + 2
        elif pattern.startswith("**", i):
            out, i = out + "[^/]*", i + 2
        elif pattern[i] == "*":
            out, i = out + ("(?!\\.)[^/]*" if start else "[^/]*"), i + 1
        elif pattern[i] == "?":
            out, i = out + ("(?!\\.)[^/]" if start else "[^/]"), i + 1
        elif pattern[i] == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 1)
            out, i = out + "[" + pattern[i + 1 : end].replace("!", "^", 1) + "]", end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.fullmatch(out, text) is not None
