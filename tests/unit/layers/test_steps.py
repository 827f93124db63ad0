"""The pipeline's layer steps in-process, on a sample package written in place: what the plan says
apply writes is what apply writes (dist files and the extension), a dry run writes nothing, and
an install whose files apply may not write is refused before anything is proven or written, the
extension then left out where alone it would be a risk."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import tree_digest

from senpi_guard.core.patch.definition import load_all
from senpi_guard.demo import sample
from senpi_guard.discover import Install
from senpi_guard.io.config import Config
from senpi_guard.layers import pipeline

BRIDGE = "dist/core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js"
UPSTREAM = "dist/core/extensions/builtin/claude-sdk-oauth/prompt-directive-dedupe.js"


@pytest.fixture
def world(tmp_path, isolated_dirs) -> tuple[Install, Path]:
    pkg = tmp_path / "senpi"
    sample.write_sample_package(pkg, 3, fillers=3)
    return Install(pkg, sample.SHAPE_VERSIONS[3], "npm"), isolated_dirs / "agent"


def flow() -> pipeline.Pipeline:
    return pipeline.build(load_all(), Config())


def test_apply_writes_exactly_what_the_plan_names(world):
    install, agent = world
    planned = {c.where for c in flow().plan([install]) if c.writes}
    before = tree_digest(install.package_dir)
    dry = flow()
    dry.run("apply", [install], pipeline.Run(dry_run=True))
    assert dry.ok and tree_digest(install.package_dir) == before and not agent.exists()
    done = flow()
    done.run("apply", [install], pipeline.Run())
    assert done.ok
    after = tree_digest(install.package_dir)
    written = {install.package_dir / rel for rel, sha in after.items() if before.get(rel) != sha}
    written |= {agent / rel for rel in tree_digest(agent)}
    assert written == planned and len(planned) == 3  # (the two dist targets and the extension)
    assert {c.where for c in flow().plan([install]) if c.writes} == set()  # (as wanted now: nothing more)


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a file to another owner (root only)")
def test_a_file_apply_may_not_write_is_refused_before_its_proof_and_the_extension_left_out(world):
    install, agent = world
    bridge = install.package_dir / BRIDGE
    os.chown(bridge, 54321, 54321)  # (its folder stays root's: root will not give a file another owner)
    before = tree_digest(install.package_dir)
    for dry_run in (True, False):
        done = flow()
        started = time.monotonic()
        done.run("apply", [install], pipeline.Run(dry_run=dry_run))
        dist, extension = done.split()
        (mine,) = [r for r in dist if r.patch == "directive-dedupe"]
        assert not mine.ok and "belongs to uid 54321 but its folder to uid 0" in mine.detail
        assert mine.report is None  # (refused before any replay)
        (ext,) = extension
        assert not ext.ok and ext.detail.startswith("not written: senpi ") and not ext.would_write
        assert time.monotonic() - started < 30
    assert tree_digest(install.package_dir) == before and not (agent / "extensions").exists()


def test_the_revert_plan_gives_back_every_file_apply_wrote_and_holds_them(world):
    install, agent = world
    applied = flow()
    applied.run("apply", [install], pipeline.Run())
    written = {c.where for c in flow().revert_plan([install]) if c.writes}
    extension = agent / "extensions" / "senpi-guard-directive-dedupe.js"
    assert written == {install.package_dir / BRIDGE, install.package_dir / UPSTREAM, extension}
    changes = flow().revert_plan([install])
    assert {c.hold for c in changes if c.writes} == {pipeline.Hold.SET} and all(c.executable for c in changes)
    (bridge,) = [c for c in changes if c.where == install.package_dir / BRIDGE]
    bridge_bytes = bridge.where.read_bytes()
    bridge.where.write_bytes(bridge_bytes.replace(b"// (code is full of", b"// (edited: code is full of", 1))
    (edited,) = [c for c in flow().revert_plan([install]) if c.where == install.package_dir / BRIDGE]
    assert edited.found == "drifted" and edited.keep_aside  # (the hand edit is kept aside first)


def test_verify_reads_each_install_once_for_both_layers(world):
    install, _ = world
    done = flow()
    done.run("apply", [install], pipeline.Run())
    again = flow()
    seen: list[Path] = []
    for layer in again.dists.values():  # (a spy on what each dist layer reads: its inspections)
        inspect = layer.reconciler.inspect
        layer.reconciler.inspect = lambda i, *a, _inspect=inspect, **k: (
            seen.append(i.package_dir) or _inspect(i, *a, **k)
        )
    again.run("verify", [install], pipeline.Run())
    assert again.ok and seen == [install.package_dir] * len(again.dists)
