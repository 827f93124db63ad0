"""For every state of the README's table: what `status` says, what `verify` says, what
`apply --dry-run --json` names and what `apply` then changes come to one story. The dry run names
exactly the install files and agent-dir files that apply changes (senpi-guard's own backups and
kept copies live outside both); status's next step names `apply` exactly when apply has something
to do; verify agrees with status (exit code and next steps). Run as a user runs them (the console
script in a subprocess) on sample packages written in place."""

from __future__ import annotations

import pytest
from stories import STATES, World, one_story

from senpi_guard.demo import sample


@pytest.mark.parametrize("state", list(STATES))
def test_status_dry_run_apply_and_verify_tell_one_story(state, tmp_path, isolated_dirs):
    world = World(tmp_path / "senpi", isolated_dirs)
    sample.write_sample_package(world.pkg, 3, fillers=3)
    one_story(world, state)
