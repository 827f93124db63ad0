"""Patches that share a file. Every target file is made from its original bytes by every patch that
touches it, in `order`, under one header (core/patch/apply.compose): adding, removing or upgrading
one patch rebuilds the file, and every patch on a file is proven on the composed bytes before they
are written."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from senpi_guard.core import jssyntax
from senpi_guard.core.patch import apply, reshape, reverse
from senpi_guard.core.patch.definition import Patch, load_all
from senpi_guard.core.patch.extra import EXTRA_PATCHES
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io import write
from senpi_guard.io.config import Config
from senpi_guard.layers import where
from senpi_guard.prove.verify import ModulePair

if TYPE_CHECKING:
    from senpi_guard.layers.dist import Reconciler


class House:
    """Every patch that may be on a file, in the order they are applied to it."""

    def __init__(self, patches: Iterable[Patch]) -> None:
        self.patches = tuple(sorted(patches, key=lambda patch: (patch.order, patch.name)))
        self.by_name = {patch.name: patch for patch in self.patches}
        self.functions = tuple(dict.fromkeys(t.function for patch in self.patches for t in patch.targets))
        self.walked: dict[Path, dict] = {}  # where a walk of an install's dist/ found every patch's targets

    @classmethod
    def around(cls, patch: Patch) -> House:
        """Every patch senpi-guard has, with `patch` as given in place of its namesake."""
        try:
            known = load_all()
        except FatalError:  # (a broken patch elsewhere is that command's error, not this file's)
            known = []
        return cls([p for p in known if p.name != patch.name] + [patch])

    def with_patch(self, patch: Patch) -> House:
        return self if self.by_name.get(patch.name) is patch else House([*self.by_name.values(), patch])

    def steps(
        self, base: bytes, config_of: Callable[[Patch], Config], skip: Callable[[Patch], bool]
    ) -> tuple[list[apply.Step], jssyntax.Tree | None]:
        """Each patch's target that `base` defines (and exports), in order, with its settings; and
        the syntax tree of `base` (None: none was needed, or it does not parse) for the edits."""
        mentioned = [(p, t) for p in self.patches if not skip(p) for t in p.targets if t.function.encode() in base]
        if not mentioned:
            return [], None
        try:
            tree = jssyntax.parse(base)
        except jssyntax.JsSyntaxError:
            return [apply.Step(p, t, config_of(p)) for p, t in mentioned], None  # (the edit says where it breaks)
        defined = [apply.Step(p, t, config_of(p)) for p, t in mentioned if jssyntax.find_definitions(tree, t.function)]
        return defined, tree


def compose(
    rec: Reconciler, install: Install, path: Path, base: bytes, current: bytes | None, without: Sequence[str] = ()
) -> bytes:
    """The file `rec`'s patch wants at `path`: its original `base` through `rec`'s patch (but when
    named in `without`) and every other patch the file's `current` bytes carry, each exactly as
    their header records it (its version and settings): only a patch's own run adds, removes,
    upgrades or re-sets it. A patch the file carries that cannot be rendered as recorded is refused."""
    configs = {rec.patch.name: rec.config}
    header = apply.read_file_header(current) if current is not None else None
    for entry in header.entries if header else ():
        if entry.name != rec.patch.name and entry.name not in without:
            configs[entry.name] = recorded_config(rec, entry, current, path)
    steps, tree = rec.house.steps(
        base, lambda patch: configs[patch.name], lambda patch: patch.name in without or patch.name not in configs
    )
    return apply.compose(base, steps, str(path), own=rec.patch.name, tree=tree)[0]


def unknown_on(rec: Reconciler, header: apply.FileHeader | None, path: Path) -> None:
    """Refuse a file whose header names a patch senpi-guard has not loaded: rebuilding it would
    drop that patch's edit."""
    unknown = [name for name in (header.names if header else ()) if name not in rec.house.by_name]
    if unknown:
        raise FatalError(
            f"{path} is patched by {unknown[0]}, which this senpi-guard does not have loaded; nothing was "
            f"changed: restore that patch's folder (or ${EXTRA_PATCHES}), or run `senpi-guard revert` "
            "to give the file its original bytes"
        )


def recorded_config(rec: Reconciler, entry: apply.Header, data: bytes, path: Path) -> Config:
    """A config that renders patch `entry.name` exactly as the file's header records it: the
    current one when its settings digest matches, else the settings read from the patch's own
    region of the file. Raises when that is impossible (another version, unreadable settings)."""
    patch = rec.house.by_name.get(entry.name)
    if patch is None:
        unknown_on(rec, apply.FileHeader((entry,), entry.original_sha256), path)
    where = f"{path}: {entry.name} v{entry.version} is on this file"
    if patch.version != entry.version:
        raise FatalError(
            f"{where} and this senpi-guard has v{patch.version}; {rec.patch.name} leaves the file as it is: "
            f"run `senpi-guard apply` (its own run upgrades {entry.name})"
        )
    if patch.config_digest(rec.config) == entry.config_sha256:
        return rec.config
    slot = reshape.slot_in(apply.region_of(data, entry.name) or b"")
    names = {s.name for s in patch.settings_schema}
    if slot is not None:
        candidate = rec.config.with_patch(patch.name, **{k: v for k, v in slot.items() if k in names})
        try:
            if patch.config_digest(candidate) == entry.config_sha256:
                return candidate
        except FatalError:
            pass
    raise FatalError(
        f"{where} with settings this senpi-guard cannot read back; {rec.patch.name} leaves the file as it "
        f"is: run `senpi-guard apply` (its own run re-sets {entry.name})"
    )


def prove_others(rec: Reconciler, install: Install, files: Iterable[tuple[Path, bytes]]) -> list[str]:
    """Replay every other patch on the composed `files` (path, bytes about to be written there),
    with the settings the file records for it, before they are written; a failure is raised,
    naming the patch. Returns the patches proven."""
    candidates = dict(files)
    others: dict[str, Config] = {}
    for path, data in candidates.items():
        header = apply.read_file_header(data)
        for entry in header.entries if header else ():
            if entry.name != rec.patch.name and entry.name not in others:
                others[entry.name] = recorded_config(rec, entry, data, path)
    for name, config in others.items():
        other = rec.house.by_name[name]
        try:
            pairs = pairs_on(rec, other, install, candidates)
        except FatalError as exc:
            raise FatalError(f"{name}, which shares a file with {rec.patch.name}, cannot be proven: {exc}") from exc
        report = rec.replay(install, pairs, other, config)
        if not report.ok:
            first = report.failures[0] if report.failures else "no checks ran"
            raise FatalError(
                f"verification of {name} on the file it shares with {rec.patch.name} failed, nothing was "
                f"changed: {first} ({len(report.failures)} failed of {report.checks_run} checks)"
            )
    return list(others)


def pairs_on(rec: Reconciler, patch: Patch, install: Install, files: Mapping[Path, bytes]) -> dict[str, ModulePair]:
    """`patch`'s modules as they would be with `files` (path -> the bytes about to be written there)
    in place of the disk's: each target located as an inspection locates it, its original recovered
    from those bytes through every patch of the house."""
    house = rec.house
    pairs = {}
    for target, path in where.target_files(patch, rec.store, install, rec.quick_locate, house.walked, house.functions):
        data = files[path] if path in files else write.read(path, install.package_dir).data
        base = reverse.recover(data, patch, house.by_name).base
        if base is None:
            raise FatalError(f"{path}: the original bytes of {target.function} cannot be recovered")
        pairs[target.role] = ModulePair(path, target.function, base, data)
    return pairs
