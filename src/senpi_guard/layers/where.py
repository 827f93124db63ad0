"""Where an install's targets are: where they were last time (package.json and dist/ unchanged, the
files still define them), else where this run's walk of dist/ found them (one walk serves every
patch of the house: it looks for all their targets), else in the folders the patch's known shapes
keep them (status only), else one walk of dist/."""

from __future__ import annotations

from pathlib import Path

from senpi_guard.core import locate
from senpi_guard.core.patch.definition import Patch, Target
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io import memo
from senpi_guard.io.store import Store
from senpi_guard.layers.findings import Inspection
from senpi_guard.prove.replays import package_stamp

SAME_RELEASE = "dist-locations"  # (io/memo's kind: where a walk found each target, by locate.listing_key)


def target_files(
    patch: Patch, store: Store, install: Install, quick: bool, walked: dict[Path, dict], also: tuple[str, ...]
) -> list[tuple[Target, Path]]:
    """The file that defines each of `patch`'s targets (as `locate_targets` finds them), one each: two
    definitions, or none of a required target, is refused in one line; an optional one not found is
    left out."""
    dist = install.package_dir / "dist"
    hits, searched = locate_targets(patch, store, install, dist, quick, walked, also)
    found = []
    for target in patch.targets:
        located = hits[target.function]
        if len(located) > 1:
            where = ", ".join(f"{h.path.relative_to(dist)}:{h.definition.line}" for h in located)
            raise FatalError(
                f"senpi {install.version} at {install.package_dir}: {len(located)} "
                f"definitions of {target.function} ({where}); senpi-guard will "
                "not guess: report this version"
            )
        if located:
            found.append((target, located[0].path))
        elif target.required:
            raise FatalError(
                f"senpi {install.version} at {install.package_dir}: no file "
                f"under dist/ defines and exports {target.function} (searched "
                f"{searched} .js files); this version is not supported yet"
            )
    return found


def locate_targets(
    patch: Patch,
    store: Store,
    install: Install,
    dist: Path,
    quick: bool,
    walked: dict[Path, dict] | None = None,
    also: tuple[str, ...] = (),
) -> tuple[dict, int]:
    """Where each target function is defined: where it was last time, or where this run's walk
    found it (`walked`: what a walk found, by package folder), when package.json and dist/ look as
    they did then; else, after a walk, where it was in a release with the same package.json and the
    same .js files (a reinstall: new inodes, the same bytes); in each case only while those files
    still define it. Else each .js file is read: that walk also looks for the names in `also` (the
    other patches' targets) and leaves what it found in `walked` and, but for status, remembered by
    the release's listing."""
    names = [t.function for t in patch.targets]
    stamp = package_stamp(install.package_dir)
    this_run = (walked or {}).get(install.package_dir)
    for remembered in (store.install_record(install.package_dir, patch=patch.name).get("located"), this_run):
        hits = _still_there(remembered, stamp, install.package_dir, names)
        if hits is not None:
            return hits
    if quick:
        found = _likely(patch, dist, names)
        if found is not None:
            return found
    files = locate.js_files(dist)
    key = locate.listing_key(install.package_dir, dist, files)
    same_release = {"stamp": stamp, "targets": memo.recall(SAME_RELEASE, key)}
    hits = _still_there(same_release, stamp, install.package_dir, names)
    if hits is not None:
        if walked is not None and stamp is not None:
            walked[install.package_dir] = same_release
        return hits
    found = locate.find_exported_functions(files, names, also=[name for name in also if name not in names])
    rels = _rels(found, install.package_dir)
    if walked is not None and stamp is not None:
        walked[install.package_dir] = {"stamp": stamp, "targets": rels}
    if not quick:  # (status writes nothing)
        memo.remember(SAME_RELEASE, key, rels)
    return {name: found[name] for name in names}, len(files)


def _still_there(remembered: object, stamp: list[int] | None, package_dir: Path, names: list[str]) -> tuple | None:
    if not (
        stamp is not None
        and isinstance(remembered, dict)
        and remembered.get("stamp") == stamp
        and isinstance(remembered.get("targets"), dict)
        and set(names) <= set(remembered["targets"])
    ):
        return None
    rels = {name: remembered["targets"][name] for name in names}
    paths = list(dict.fromkeys(package_dir / rel for rel in rels.values() if isinstance(rel, str)))
    hits = locate.find_exported_functions([p for p in paths if p.is_file()], names)
    if all([h.path for h in hits[name]] == ([package_dir / rels[name]] if rels[name] else []) for name in names):
        return hits, len(paths)
    return None


def _rels(hits: dict, package_dir: Path) -> dict:
    """Each name's one definition's file (None: none); a name defined twice, or in a file that could
    not be parsed (another patch's name), is left out, so that its own walk is made and says so."""
    return {
        name: (str(found[0].path.relative_to(package_dir)) if found else None)
        for name, found in hits.items()
        if len(found) <= 1
    }


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
    """What `locate_targets` trusts next time (kept with the install's records)."""
    targets = {t.function: next((f.rel for f in insp.files if f.target == t), None) for t in patch.targets}
    return {"stamp": package_stamp(insp.install.package_dir), "targets": targets}
