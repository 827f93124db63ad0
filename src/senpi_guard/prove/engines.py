"""Whether the node senpi-guard uses for an install is one that install's senpi runs on: its
package.json `engines.node`, a semver range (">=24", "^20 || >=22", "18.x", "1.2 - 2"), read as npm
reads it. senpi 2026.8.22-2's own code fails to import on node 20, so a replay run with that node
proves less than one with the node senpi runs on (e.g. the extension through a minimal host only)."""

from __future__ import annotations

import re
from pathlib import Path

from senpi_guard.discover import read_manifest
from senpi_guard.io import reader
from senpi_guard.io.visible import visible
from senpi_guard.prove.nodes import Node

Version = tuple[int, int, int]
Comparator = tuple[str, Version]  # (">=", ">", "<", "<=", version)

_OPERATOR = re.compile(r"(<=|>=|<|>|=|\^|~>?)?(.*)")
_PARTIAL = re.compile(r"v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?(?:[-+][0-9A-Za-z.+-]*)?")
_HYPHEN = re.compile(r"(\S+)\s+-\s+(\S+)")
_LONGEST = 80  # characters of a range said back (package.json is the package's, not ours)


def _partial(text: str) -> list[int | None]:
    """ "24" -> [24, None, None]; "24.x.1" -> [24, None, None] (a wildcard ends it); ValueError else."""
    match = _PARTIAL.fullmatch(text)
    if match is None:
        raise ValueError(text)
    parts: list[int | None] = []
    for part in match.groups():
        if part is None or not part.isdigit() or (parts and parts[-1] is None):
            parts.append(None)
        else:
            parts.append(int(part))
    return parts


def _comparators(token: str) -> list[Comparator]:
    """One comparator of a range as bounds on a full version (npm's meaning of partial versions)."""
    match = _OPERATOR.fullmatch(token)
    op, (major, minor, patch) = (match[1] or "="), _partial(match[2])
    if major is None:  # "*", "x": any version ("<*" none)
        return [("<", (0, 0, 0))] if op in ("<", ">") else []
    low = (major, minor or 0, patch or 0)
    past = (major + 1, 0, 0) if minor is None else (major, minor + 1, 0) if patch is None else None
    if op == "=":
        return [(">=", low), ("<", past)] if past else [(">=", low), ("<=", low)]
    if op in (">=", "<"):
        return [(op, low)]
    if op == ">":
        return [(">=", past)] if past else [(">", low)]
    if op == "<=":
        return [("<", past)] if past else [("<=", low)]
    if op.startswith("~"):
        return [(">=", low), ("<", (major + 1, 0, 0) if minor is None else (major, minor + 1, 0))]
    if major or minor is None:  # "^": the leftmost non-zero part stays
        return [(">=", low), ("<", (major + 1, 0, 0))]
    return [(">=", low), ("<", (0, minor + 1, 0) if minor or patch is None else (0, 0, patch + 1))]


def parse(text: str) -> list[list[Comparator]]:
    """A range: its `||` alternatives, each the comparators all of which must hold; ValueError for
    what is not a range."""
    text = re.sub(r"(<=|>=|<|>|=|\^|~>?)\s+", r"\1", text.strip())
    alternatives = []
    for part in text.split("||"):
        part = _HYPHEN.sub(r">=\1 <=\2", part.strip())
        alternatives.append([c for token in part.split() for c in _comparators(token)])
    return alternatives


def _holds(version: Version, comparator: Comparator) -> bool:
    op, bound = comparator
    return {
        ">=": version >= bound,
        ">": version > bound,
        "<": version < bound,
        "<=": version <= bound,
    }[op]


def node_problem(package_dir: Path, node: Node) -> str | None:
    """The one line saying that `node` (the one senpi-guard uses for this install) is not one the
    install's package.json `engines.node` allows, and what to do; None when it is, or when nothing
    readable is asked (no package.json, no engines, a range npm would not read either)."""
    try:
        manifest = read_manifest(package_dir)
    except reader.Refused:
        return None
    engines = manifest.get("engines") if manifest else None
    wanted = engines.get("node") if isinstance(engines, dict) else None
    have = re.match(r"v?(\d+)\.(\d+)\.(\d+)", node.version)
    if not isinstance(wanted, str) or have is None:
        return None
    try:
        alternatives = parse(wanted)
    except ValueError:
        return None
    version: Version = (int(have[1]), int(have[2]), int(have[3]))
    if any(all(_holds(version, c) for c in alternative) for alternative in alternatives):
        return None
    senpi = visible(str(manifest.get("version", "")))  # (manifest is a dict here: engines was read)
    said = visible(wanted if len(wanted) <= _LONGEST else wanted[:_LONGEST] + "…")
    lows = [max((b for op, b in alt if op in (">=", ">")), default=(0, 0, 0)) for alt in alternatives]
    above = [low for low in lows if low > version]
    if above:
        lead, node_wanted = f"is older than senpi {senpi} needs ({said})", f"node {min(above)[0]}"
    else:
        lead, node_wanted = f"is not a node senpi {senpi} supports ({said})", "a node it supports"
    if node.source == "$SENPI_GUARD_NODE":
        return f"{node.version} {lead}; point SENPI_GUARD_NODE at {node_wanted}"
    return f"{node.version} {lead}; put {node_wanted} first on PATH or set SENPI_GUARD_NODE"
