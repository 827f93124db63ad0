"""Which `node` verifies an install: the one that runs that senpi, where it can be told.

Order: $SENPI_GUARD_NODE (an explicit choice wins), then the node of the install's own prefix
(`<prefix>/bin/node` for npm, nvm, fnm, volta and asdf layouts), then the node `daemon install`
recorded ($SENPI_GUARD_RECORDED_NODE, set in the service's environment), then `node` on PATH.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import NamedTuple

from senpi_guard.errors import FatalError
from senpi_guard.io import memo, reader, runas

MIN_NODE = 18
RECORDED = "SENPI_GUARD_RECORDED_NODE"


class Node(NamedTuple):
    path: str
    version: str
    source: str


def own_node(package_dir: Path) -> Path | None:
    """`<prefix>/bin/node` when the package sits in `<prefix>/lib/node_modules/…`."""
    real = Path(os.path.realpath(package_dir))
    for parent in real.parents:
        if parent.name == "node_modules" and parent.parent.name == "lib":
            candidate = parent.parent.parent / "bin" / "node"
            return candidate if os.access(candidate, os.X_OK) and candidate.is_file() else None
    return None


def _memo_key(node: str, program: runas.Program) -> str | None:
    """The key node's version is remembered under: the binary run (`program`, pinned) as it is now.
    Only a real node binary (an ELF file named node once links are resolved): a shim (volta's,
    asdf's script) picks its node by folder or environment, so its own file says nothing of the
    version it runs."""
    real = os.path.realpath(node)
    if os.path.basename(real) != "node":
        return None
    try:
        if reader.head(real, reader.PROGRAM, 4) != b"\x7fELF":
            return None
    except (OSError, reader.Refused):
        return None
    st = program.st  # (the file run, whatever `real` names by now)
    return f"{real}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}"


def unrunnable(node: str, exc: BaseException) -> FatalError:
    """The one line for a node that cannot be opened or run."""
    return FatalError(
        f"cannot run node at {node} ({exc}); reinstall Node.js or point SENPI_GUARD_NODE at a working node"
    )


@cache
def version_of(node: str) -> str:
    try:
        # as root, another user's node runs as that user (its code never runs as root), and as
        # anyone in io/runas's environment; the file run is the one whose owner was read
        with runas.pinned(node) as program:
            key = _memo_key(node, program)
            known = memo.recall("node-version", key)
            if isinstance(known, str) and known:
                return known
            out = subprocess.run(
                [node, "--version"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
                stdin=subprocess.DEVNULL,
                **runas.popen_kwargs(runas.owner_of(program), program=program),
            ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise unrunnable(node, exc) from exc
    if re.fullmatch(r"v\d+\.\d+\.\d+\S*", out):
        memo.remember("node-version", key, out)
    return out


def _checked(node: str, source: str) -> Node:
    version = version_of(node)
    match = re.match(r"v(\d+)\.", version)
    if match is None or int(match[1]) < MIN_NODE:
        raise FatalError(
            f"node at {node} ({source}) is {version or 'not a working node'}; senpi-guard "
            f"needs node >= {MIN_NODE}: upgrade that node, or set SENPI_GUARD_NODE"
        )
    return Node(node, version, source)


def node_for(package_dir: Path | None) -> Node:
    explicit = os.environ.get("SENPI_GUARD_NODE")
    if explicit:
        return _checked(explicit, "$SENPI_GUARD_NODE")
    own = own_node(package_dir) if package_dir is not None else None
    if own is not None:
        return _checked(str(own), "the install's own prefix")
    recorded = os.environ.get(RECORDED)
    if recorded and os.access(recorded, os.X_OK):
        return _checked(recorded, "recorded by `daemon install`")
    found = shutil.which("node")
    if found is None:
        raise FatalError(
            "node was not found on PATH; senpi-guard verifies every patch with the "
            f"real node (>= {MIN_NODE}): install Node.js, put it on PATH, or set "
            "SENPI_GUARD_NODE"
        )
    return _checked(found, "PATH")
