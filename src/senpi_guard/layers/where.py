"""Where an install's targets are: where they were last time (package.json and dist/ unchanged, the
files still define them), else in the folders the patch's known shapes keep them (status only),
else one walk of dist/."""

from __future__ import annotations

from pathlib import Path

from senpi_guard.core import locate
from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.io.store import Store
from senpi_guard.layers.findings import Inspection
from senpi_guard.prove.replays import package_stamp


def locate_targets(patch: Patch, store: Store, install: Install, dist: Path, quick: bool) -> tuple[dict, int]:
    """Where each target function is defined: where it was last time, when package.json and
    dist/ look as they did then and the remembered files still define it; else one walk."""
    names = [t.function for t in patch.targets]
    remembered = store.install_record(install.package_dir, patch=patch.name).get("located")
    stamp = package_stamp(install.package_dir)
    if (
        stamp is not None
        and isinstance(remembered, dict)
        and remembered.get("stamp") == stamp
        and isinstance(remembered.get("targets"), dict)
        and set(remembered["targets"]) == set(names)
    ):
        rels = remembered["targets"]
        paths = [install.package_dir / rel for rel in rels.values() if isinstance(rel, str)]
        hits = locate.find_exported_functions([p for p in paths if p.is_file()], names)
        if all(
            [h.path for h in hits[name]] == ([install.package_dir / rels[name]] if rels[name] else []) for name in names
        ):
            return hits, len(paths)
    if quick:
        found = _likely(patch, dist, names)
        if found is not None:
            return found
    files = locate.js_files(dist)
    return locate.find_exported_functions(files, names), len(files)


def _likely(patch: Patch, dist: Path, names: list[str]) -> tuple[dict, int] | None:
    if not patch.likely_folders:
        return None  # (the patch says nothing of where its targets live: walk)
    files = [f for folder in patch.likely_folders if (dist / folder).is_dir() for f in locate.js_files(dist / folder)]
    hits = locate.find_exported_functions(files, names)
    required = [t.function for t in patch.targets if t.required]
    if all(len(hits[name]) == 1 for name in required) and all(len(h) <= 1 for h in hits.values()):
        return hits, len(files)
    return None


def location_record(patch: Patch, insp: Inspection) -> dict:
    """What `_locate` trusts next time (kept with the install's records)."""
    targets = {t.function: next((f.rel for f in insp.files if f.target == t), None) for t in patch.targets}
    return {"stamp": package_stamp(insp.install.package_dir), "targets": targets}
