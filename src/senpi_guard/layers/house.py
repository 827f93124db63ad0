"""Patches that share a file. Every target file is made from its original bytes by every patch that
touches it, in `order`, under one header (core/patch/apply.compose): adding, removing or upgrading
one patch rebuilds the file, and every patch on a file is proven on the composed bytes before they
are written."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from senpi_guard.core import jssyntax
from senpi_guard.core.patch import apply
from senpi_guard.core.patch.classify import State
from senpi_guard.core.patch.definition import Patch, load_all
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.layers import where

if TYPE_CHECKING:
    from senpi_guard.layers.dist import Reconciler


class House:
    """Every patch that may be on a file, in the order they are applied to it."""

    def __init__(self, patches: Iterable[Patch]) -> None:
        self.patches = tuple(sorted(patches, key=lambda patch: (patch.order, patch.name)))
        self.by_name = {patch.name: patch for patch in self.patches}

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

    def steps(self, base: bytes, config: Config, skip: Callable[[Patch], bool]) -> list[apply.Step]:
        """Each patch's target that `base` defines (and exports), in order."""
        mentioned = [(p, t) for p in self.patches if not skip(p) for t in p.targets if t.function.encode() in base]
        if not mentioned:
            return []
        try:
            tree = jssyntax.parse(base)
        except jssyntax.JsSyntaxError:
            return [apply.Step(p, t, config) for p, t in mentioned]  # (the edit says where it breaks)
        return [apply.Step(p, t, config) for p, t in mentioned if jssyntax.find_definitions(tree, t.function)]


def compose(rec: Reconciler, install: Install, path: Path, base: bytes, without: Sequence[str] = ()) -> bytes:
    """The file `rec`'s patch wants at `path`: its original `base` through every patch of the house
    that touches it and is wanted on this install (but those named in `without`)."""

    def skip(patch: Patch) -> bool:
        return patch.name in without or (patch.name != rec.patch.name and deferred(rec, patch, install))

    steps = rec.house.steps(base, rec.config, skip)
    return apply.compose(base, steps, str(path), own=rec.patch.name)[0]


def deferred(rec: Reconciler, patch: Patch, install: Install) -> bool:
    """Whether the config leaves this install to senpi's own code for `patch` (its defer rule)."""
    if patch.defer is None:
        return False
    hits, _ = where.locate_targets(patch, rec.store, install, install.package_dir / "dist", rec.quick_locate)
    present = {t.role for t in patch.targets if len(hits[t.function]) == 1}
    return patch.deferred(rec.config, present)


def sibling(rec: Reconciler, patch: Patch) -> Reconciler:
    """A Reconciler of another patch of the house, sharing `rec`'s store, replays and stop event."""
    from senpi_guard.layers.dist import Reconciler

    other = Reconciler(
        patch,
        rec.config,
        rec.store,
        cancel=rec.cancel,
        allow_foreign_root=rec.allow_foreign_root,
        reuse_stored_replays=rec.reuse_stored_replays,
        house=rec.house,
    )
    other.replays = rec.replays
    return other


def prove_others(rec: Reconciler, install: Install, files: Iterable[bytes]) -> list[str]:
    """Replay every other patch on the composed `files` (as its own run would compose them) before
    they are written; a failure is raised, naming the patch. Returns the patches proven."""
    names = dict.fromkeys(
        name
        for data in files
        if (header := apply.read_file_header(data)) is not None
        for name in header.names
        if name != rec.patch.name
    )
    for name in names:
        other = sibling(rec, rec.house.by_name[name])
        insp = other.inspect(install)
        if insp.state in (State.UNSUPPORTED, State.ERROR):
            raise FatalError(f"{name}, which shares a file with {rec.patch.name}, cannot be proven: {insp.detail}")
        report = other.replay(install, other.module_pairs(insp))
        if not report.ok:
            first = report.failures[0] if report.failures else "no checks ran"
            raise FatalError(
                f"verification of {name} on the file it shares with {rec.patch.name} failed, nothing was "
                f"changed: {first} ({len(report.failures)} failed of {report.checks_run} checks)"
            )
    return list(names)
