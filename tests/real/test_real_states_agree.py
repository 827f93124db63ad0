"""The one story of tests/e2e/test_states_agree.py told on a real build: for every state of the
README's table, on the real 2026.8.9 as the real npm installs it, `status`'s plan, the dry run and
`apply` name the same files, status's next step is what apply does, and verify agrees with status."""

from __future__ import annotations

import pytest
from stories import STATES, World, one_story

pytestmark = pytest.mark.real


@pytest.mark.parametrize("state", list(STATES))
def test_on_a_real_build_status_dry_run_apply_and_verify_tell_one_story(state, dist_only, tmp_path, isolated_dirs):
    world = World(dist_only("2026.8.9"), isolated_dirs)
    one_story(world, state)
