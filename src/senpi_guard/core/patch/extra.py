"""Patches from outside senpi-guard: a developer's patch in the making, or a test's example patches.
A developer and testing option, not a user's: `$SENPI_GUARD_EXTRA_PATCHES` is a path list (":"
between entries), each a patch folder (holding patch.toml) or a folder of patch folders."""

from __future__ import annotations

import os
from pathlib import Path

from senpi_guard.errors import FatalError

EXTRA_PATCHES = "SENPI_GUARD_EXTRA_PATCHES"


def extra_patch_folders() -> dict[str, Path]:
    """Patches from outside senpi-guard (a developer's or a test's), by name: each entry of
    $SENPI_GUARD_EXTRA_PATCHES (a path list) is a patch folder or a folder of patch folders."""
    found: dict[str, Path] = {}
    for entry in filter(None, os.environ.get(EXTRA_PATCHES, "").split(os.pathsep)):
        folder = Path(entry).expanduser()
        if not folder.is_dir():
            raise FatalError(f"${EXTRA_PATCHES} names {folder}, which is not a folder; fix or unset it")
        roots = [folder] if (folder / "patch.toml").is_file() else sorted(folder.iterdir())
        for root in (r for r in roots if (r / "patch.toml").is_file()):
            if root.name in found:
                raise FatalError(f"${EXTRA_PATCHES}: two patches named {root.name} ({found[root.name]}, {root})")
            found[root.name] = root
    return found
