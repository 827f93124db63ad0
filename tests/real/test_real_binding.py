"""The restart-binding target on the real 2026.8.22-2 (`sentHashesFromBranch`): its checks pass on
the real module, and fail, by name, for an edit that has no effect or hashes the wrong thing."""

from __future__ import annotations

import dataclasses

import pytest

from senpi_guard.core.patch import definition
from senpi_guard.discover import describe
from senpi_guard.io.config import Config
from senpi_guard.layers.dist import Reconciler

pytestmark = pytest.mark.real


def verify_with(full_senpi, entry: str | None) -> set[str]:
    patch = definition.load("directive-dedupe")
    if entry is not None:
        patch = dataclasses.replace(
            patch,
            targets=tuple(
                dataclasses.replace(t, spec=dataclasses.replace(t.spec, entry=entry)) if t.role == "binding" else t
                for t in patch.targets
            ),
        )
    outcome = Reconciler(patch, Config(), reuse_stored_replays=False).verify(describe(full_senpi.package_dir, "npm"))
    assert outcome.report is not None, outcome.detail
    assert outcome.report.checks_run >= 60
    return {f.check for f in outcome.report.failures}


def test_binding_checks_pass_on_the_real_module_and_catch_a_broken_edit(full_senpi, monkeypatch):
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    assert verify_with(full_senpi, None) == set()
    # an entry that does nothing: the branch is still hashed as stored
    assert {"binding-hashes-as-sent", "binding-follows-the-rewrite"} <= verify_with(full_senpi, "{param0} = {param0};")
    # an entry that drops the custom messages' part in the rewrite (the first copy lives there)
    dropped = "{param0} = __senpiGuardBranchAsSent({param0}.filter((e) => e.type !== 'custom_message'));"
    assert "binding-hashes-as-sent" in verify_with(full_senpi, dropped)
