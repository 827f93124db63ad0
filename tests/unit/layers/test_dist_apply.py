"""apply of the dist layer in-process, on a sample package: a dry run proves and names the files but
writes nothing; apply writes each file (upstream's first) with its original backed up, and a second
apply writes nothing; a release the patch fails its proof on is refused with nothing written; a
file edited by hand is rebuilt with the edited copy kept aside, or (on_drift = "report") only kept;
`upstream_dedupe = "defer"` takes the patch out of the files (the patches left on a shared file
proven), but is left to apply by the watcher and refused over a hand-applied fix; a file apply may
not write is refused before its proof; and a run stopped before or part-way says what it wrote."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from conftest import hand_patched, tree_digest
from layerkit import BRIDGE, TEST_PATCHES, UPSTREAM, dedupe, dry_run_once, sample_install, store_with

from senpi_guard.core.patch import apply
from senpi_guard.core.patch.classify import State
from senpi_guard.core.patch.definition import load
from senpi_guard.demo import sample
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import dist_apply, dist_plan
from senpi_guard.layers.dist import Reconciler
from senpi_guard.layers.execute import Done
from senpi_guard.layers.findings import Outcome, Reason
from senpi_guard.layers.house import House

DEFER = Config().with_patch("directive-dedupe", upstream_dedupe="defer")


@pytest.fixture(scope="module")
def proven(tmp_path_factory) -> tuple[Outcome, dict[str, str], dict[str, str], bytes]:
    return dry_run_once(tmp_path_factory.mktemp("proven"))


@pytest.fixture
def store(tmp_path: Path, proven) -> Store:
    return store_with(tmp_path, proven[-1])


def applied(install: Install, store: Store) -> Reconciler:
    rec = Reconciler(dedupe(), Config(), store)
    done = rec.reconcile(install)
    assert done.ok and done.after == State.PATCHED, done.detail
    return rec


def edit_by_hand(path: Path) -> bytes:
    edited = path.read_bytes().replace(b"// (code is full of", b"// (edited: code is full of", 1)
    path.write_bytes(edited)
    return edited


def kept_at(detail: str) -> Path:
    (line,) = [part for part in detail.split("; ") if part.startswith("the hand-edited file was kept at ")]
    return Path(line.removeprefix("the hand-edited file was kept at "))


def test_a_dry_run_proves_and_names_the_files_but_writes_nothing(proven):
    dry, before, after, _ = proven
    assert dry.ok and after == before and dry.changed == [] and dry.backups == []
    assert sorted(dry.would_write) == [BRIDGE, UPSTREAM] and dry.after == State.UNPATCHED
    assert dry.report.ok and dry.detail.startswith(f"dry run: verified: {dry.report.checks_run} checks passed (node ")
    assert dry.detail.endswith("; nothing written")
    assert f"+++ b/{BRIDGE}" in dry.diff and "__senpiGuardDedupe(blocks)" in dry.diff


def test_apply_writes_upstreams_file_first_backs_up_the_originals_and_then_has_nothing_to_do(install, store):
    pkg = install.package_dir
    originals = {rel: (pkg / rel).read_bytes() for rel in (BRIDGE, UPSTREAM)}
    rec = Reconciler(dedupe(), Config(), store)
    done = rec.reconcile(install)
    assert done.ok and done.after == State.PATCHED and done.changed == [UPSTREAM, BRIDGE]
    assert done.detail.startswith("verified: ") and done.report.ok
    for rel in originals:
        assert apply.read_file_header((pkg / rel).read_bytes()).names == ("directive-dedupe",)
        assert done.final_shas[str(pkg / rel)] == apply.sha256((pkg / rel).read_bytes())
    assert sorted(Path(b).read_bytes() for b in done.backups) == sorted(originals.values())
    patched = tree_digest(pkg)
    again = rec.reconcile(install)
    assert again.ok and again.changed == [] and again.detail == "already patched and verified"
    assert tree_digest(pkg) == patched


def test_a_file_edited_by_hand_is_rebuilt_and_the_edited_copy_kept(install, store):
    rec = applied(install, store)
    bridge = install.package_dir / BRIDGE
    patched = bridge.read_bytes()
    edited = edit_by_hand(bridge)
    done = rec.reconcile(install, on_drift="rebuild")
    assert done.ok and done.before == State.DRIFTED and done.changed == [BRIDGE]
    assert bridge.read_bytes() == patched
    kept = kept_at(done.detail)
    assert kept.read_bytes() == edited and str(kept) in done.backups


def test_on_drift_report_keeps_a_copy_and_leaves_the_file(install, store):
    rec = applied(install, store)
    bridge = install.package_dir / BRIDGE
    edited = edit_by_hand(bridge)
    dry = rec.reconcile(install, dry_run=True, on_drift="report")
    assert dry.backups == [] and store.kept_copies() == []  # (a dry run keeps nothing either)
    done = rec.reconcile(install, on_drift="report")
    assert done.changed == [] and bridge.read_bytes() == edited
    (copy,) = done.backups
    assert Path(copy).read_bytes() == edited
    assert f'; a copy is kept at {copy}; not rebuilt (on_drift = "report")' in done.detail
    assert done.detail.endswith("run `senpi-guard apply` to rebuild it from the backup")


def test_defer_takes_the_patch_out_of_the_files_and_leaves_the_install_to_senpis_code(install, store):
    pkg = install.package_dir
    original = tree_digest(pkg)
    applied(install, store)
    patched = tree_digest(pkg)
    rec = Reconciler(dedupe(), DEFER, store)
    dry = rec.reconcile(install, dry_run=True)
    assert dry.ok and sorted(dry.would_write) == [BRIDGE, UPSTREAM] and tree_digest(pkg) == patched
    rule = 'upstream_dedupe = "defer"'
    leave = f"leave the install to senpi's own code ({rule}); that hands full re-sends"
    assert dry.detail.startswith(f"dry run: would remove the patch and {leave}")
    done = rec.reconcile(install)
    assert done.ok and done.after == State.UPSTREAM and sorted(done.changed) == [BRIDGE, UPSTREAM]
    assert tree_digest(pkg) == original
    assert done.detail.startswith(f"{rule}: removed the patch, senpi's own code is in charge (hands full re-sends")
    again = rec.reconcile(install)
    assert again.ok and again.changed == [] and again.detail == f"{rule}: left to senpi's own code"


def test_defer_leaves_the_other_patches_on_a_shared_file_proven_on_what_remains(install, store):
    pkg = install.package_dir
    shared = House([dedupe(), load("prompt-blocks", TEST_PATCHES / "prompt-blocks")])
    mine, other = (Reconciler(p, Config(), store, house=shared) for p in shared.patches)
    for tf in mine.inspect(install).files:  # (written as apply composes them: no replay)
        tf.path.write_bytes(tf.wanted)
    (tf,) = other.inspect(install).files
    tf.path.write_bytes(tf.wanted)
    done = Reconciler(mine.patch, DEFER, store, house=shared).reconcile(install)
    assert done.ok and done.after == State.UPSTREAM, done.detail
    assert (pkg / UPSTREAM).read_bytes() == sample.sample_source("prompt-directive-dedupe.js").encode()
    bridge = (pkg / BRIDGE).read_bytes()
    assert apply.read_file_header(bridge).names == ("prompt-blocks",) and b"__senpiGuardDedupe" not in bridge
    assert other.inspect(install).state == State.PATCHED


def test_the_watcher_leaves_a_deferral_of_a_patched_install_to_apply(install, store):
    pkg = install.package_dir
    applied(install, store)
    patched = tree_digest(pkg)
    done = Reconciler(dedupe(), DEFER, store).reconcile(install, keep_reshapes=True)
    assert done.ok and done.changed == [] and done.reason == Reason.RESHAPE_LEFT and tree_digest(pkg) == patched
    assert done.detail.startswith('left as it is: upstream_dedupe = "defer" hands full re-sends')
    assert done.detail.endswith("; run `senpi-guard apply` to make that change")


def test_the_watcher_leaves_settings_that_reshape_sent_messages_to_apply(install, store):
    pkg = install.package_dir
    applied(install, store)
    patched = tree_digest(pkg)
    fewer = Config().with_patch("directive-dedupe", tags=["ultrawork-mode"])
    done = Reconciler(dedupe(), fewer, store).reconcile(install, keep_reshapes=True)
    assert done.ok and done.reason == Reason.RESHAPE_LEFT and tree_digest(pkg) == patched
    assert (
        done.detail.startswith("left as it is: ")
        and dist_apply.reshape_cost(Reconciler(dedupe(), fewer, store).inspect(install)) in done.detail
    )


def test_defer_is_refused_over_a_hand_applied_fix(tmp_path, store):
    install = sample_install(tmp_path / "hand", bridge_source=hand_patched(sample.prompt_bridge_source(3)))
    before = tree_digest(install.package_dir)
    done = Reconciler(dedupe(), DEFER, store).reconcile(install)
    assert done.changed == [] and tree_digest(install.package_dir) == before
    assert f"{BRIDGE} carries the hand-applied dedupeRepeatedDirectiveBlocks, which would run before" in done.detail
    assert done.detail.endswith("nothing was changed: reinstall senpi to remove it, or change upstream_dedupe")


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a file to another owner (root only)")
def test_a_file_apply_may_not_write_is_refused_before_anything_is_proven(install, store):
    bridge = install.package_dir / BRIDGE
    os.chown(bridge, 54321, 54321)
    rec = Reconciler(dedupe(), Config(), store)
    insp = rec.inspect(install)
    with pytest.raises(FatalError, match="belongs to uid 54321"):
        dist_apply.planned_writes(insp, dist_plan.plan(insp, deferred=False))
    before = tree_digest(install.package_dir)
    done = rec.reconcile(install)
    assert not done.ok and done.report is None and tree_digest(install.package_dir) == before


def test_a_release_the_patch_cannot_be_proven_on_is_refused_with_nothing_written(tmp_path, store):
    # (a bridge that already drops every block: the checks find the copies gone before the patch)
    dropping = sample.prompt_bridge_source(3).replace("    return blocks;\n}", "    return [];\n}")
    install = sample_install(tmp_path / "dropping", bridge_source=dropping)
    before = tree_digest(install.package_dir)
    rec = Reconciler(dedupe(), Config(), store)
    done = rec.reconcile(install)
    assert not done.ok and done.changed == [] and tree_digest(install.package_dir) == before
    assert done.detail.startswith("verification failed, nothing was changed: original-keeps-every-copy failed")
    assert re.search(r"\(\d+ failed of \d+ checks\)$", done.detail)
    last = store.install_record(install.package_dir, patch="directive-dedupe")["last_verify"]
    assert last["ok"] is False  # (status shows the failed proof)


@pytest.mark.parametrize("config", [Config(), DEFER], ids=["apply", "defer"])
def test_a_stop_asked_for_before_the_writes_writes_nothing(install, store, config):
    if config is DEFER:
        applied(install, store)
    before = tree_digest(install.package_dir)
    rec = Reconciler(dedupe(), config, store)
    rec.cancel.set()  # (the watcher stopping: its replay is the stored one, its writes never start)
    done = rec.reconcile(install)
    assert not done.ok and done.changed == [] and done.detail and tree_digest(install.package_dir) == before


def test_a_stopped_run_says_what_it_wrote_or_is_the_error_when_it_wrote_nothing(install, store):
    start = Outcome.of(Reconciler(dedupe(), Config(), store).inspect(install))
    error = FatalError("the disk is full")
    with pytest.raises(FatalError) as raised:
        dist_apply.stopped(start, Done(error=error), "apply")
    assert raised.value is error
    partial = dist_apply.stopped(start, Done(changed=[UPSTREAM], backups=["b"], kept=["k"], error=error), "apply")
    assert not partial.ok and partial.after == State.PARTIAL and partial.changed == [UPSTREAM]
    assert partial.backups == ["b", "k"]
    assert partial.detail == f"wrote {UPSTREAM}, then stopped: the disk is full; run apply again to complete it"


def test_a_failed_proof_names_the_other_patches_the_file_was_composed_with(install, store):
    blocks = load("prompt-blocks", TEST_PATCHES / "prompt-blocks")
    shared = House([dedupe(), blocks])
    rec = Reconciler(shared.by_name["directive-dedupe"], Config(), store, house=shared)
    other = Reconciler(blocks, Config(), store, house=shared)
    (tf,) = other.inspect(install).files
    alone = {t.target.role: t.wanted for t in rec.inspect(install).files}
    assert dist_apply.composed_with(rec, alone) == ""
    both = rec.compose(install, tf.path, tf.snapshot.data, tf.wanted)
    assert dist_apply.composed_with(rec, {**alone, "prompt": both}) == " on the file composed with prompt-blocks v1"
