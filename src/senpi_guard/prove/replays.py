"""Replays remembered by everything their result depends on, so identical inputs replay once: 20
nvm installs of one senpi version, or the watcher re-patching a version it has seen before.

The key covers the patch (id, checks, fixtures, harness), the node that runs it, each module's
unpatched and patched bytes, and every script beside each module (what it can import). Only passing
replays are remembered on disk (a failure is always run again); a run keeps both in memory."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import time
from dataclasses import asdict, replace
from pathlib import Path

from senpi_guard.core.patch.definition import Patch
from senpi_guard.errors import FatalError
from senpi_guard.io import locks, reader
from senpi_guard.io.config import Config
from senpi_guard.io.write import write_private
from senpi_guard.prove import nodes, sandbox
from senpi_guard.prove.verify import ModulePair, VerifyReport

KEPT = 64  # remembered replays on disk (the oldest go first)
SCRIPTS = (".js", ".mjs", ".cjs")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.cache
def _patch_digest(patch: Patch) -> list[str]:
    harness = sandbox.harness_bytes("harness.mjs")
    fixtures = sorted(p for p in (patch.root / "fixtures").rglob("*") if p.is_file())
    return [
        *(_sha(path.name.encode() + reader.own_data(path)) for path in patch.scripts()),
        _sha(harness),
        _sha(b"".join(p.name.encode() + reader.own_data(p) for p in fixtures)),
    ]


def _neighbours(module: ModulePair, replayed: set[Path]) -> list[tuple[str, str]]:
    """The scripts beside a module that the replay may import, as they are on disk. The modules
    replayed together are left out: their bytes are in the key already, and they are what apply
    rewrites (so the replay before apply's write and verify's after it share a key)."""
    folder = Path(module.real_path).parent
    try:
        paths = sorted(p for p in folder.iterdir() if p.name.endswith(SCRIPTS) and p.is_file())
        return [(p.name, reader.sha256(p, reader.DIST)) for p in paths if p not in replayed]
    except (OSError, reader.Refused):
        return [("unreadable", str(time.time()))]  # never matches: the replay runs


def replay_key(patch: Patch, config: Config, package_dir: Path, pairs: dict[str, ModulePair]) -> str:
    node = nodes.node_for(package_dir)
    replayed = {Path(pair.real_path) for pair in pairs.values()}
    parts = {
        "patch": patch.patch_id(config),
        "digest": _patch_digest(patch),
        "node": [node.path, node.version],
        "modules": {
            role: [
                pair.export,
                _sha(pair.original),
                _sha(pair.candidate) if pair.candidate is not None else None,
                _neighbours(pair, replayed),
            ]
            for role, pair in sorted(pairs.items())
        },
    }
    return _sha(json.dumps(parts, sort_keys=True).encode())


def file_identity(path: Path | str) -> tuple[int, int, int] | None:
    """A file's inode, size and change time (None when it cannot be stat'ed): no byte is read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def package_stamp(package_dir: Path) -> list[int] | None:
    """package.json's and dist/'s identity and change times: an update changes both."""
    try:
        manifest, dist = os.stat(package_dir / "package.json"), os.stat(package_dir / "dist")
    except OSError:
        return None
    return [manifest.st_ino, manifest.st_size, manifest.st_mtime_ns, dist.st_ino, dist.st_mtime_ns]


class ReplayMemo:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.this_run: dict[str, VerifyReport] = {}

    def _stored(self) -> dict[str, dict]:
        try:
            data = json.loads(reader.read(self.path, reader.STATE))
        except (OSError, ValueError, reader.Refused):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str, stored: bool) -> VerifyReport | None:
        if key in self.this_run:
            return self.this_run[key]
        if not stored:
            return None
        hit = self._stored().get(key)
        if not isinstance(hit, dict) or not hit.get("ok"):
            return None
        try:
            return VerifyReport(
                True,
                [],
                int(hit["checks_run"]),
                dict(hit.get("stats") or {}),
                str(hit.get("node_version", "")),
                reused_from=float(hit["time"]),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, key: str, report: VerifyReport) -> None:
        self.this_run[key] = replace(report, reused_from=time.time())
        if not report.ok:
            return
        fields = {k: v for k, v in asdict(report).items() if k not in ("failures", "reused_from")}
        with locks.memo_lock(self.path.parent):  # (read, add, write: no other writer between)
            stored = self._stored()
            stored[key] = {**fields, "time": time.time()}
            newest = sorted(stored.items(), key=lambda kv: kv[1].get("time", 0) if isinstance(kv[1], dict) else 0)
            with contextlib.suppress(FatalError):  # not remembering only costs a later replay
                write_private(self.path, json.dumps(dict(newest[-KEPT:])).encode())
