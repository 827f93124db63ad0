"""A patch's own names are checked against each other when it loads: a role, setting or fixture it
mentions but does not have is one line naming the key (a typo would otherwise never match)."""

from __future__ import annotations

import re
import shutil

import pytest

from senpi_guard.core.patch import definition
from senpi_guard.errors import FatalError

SHIPPED = definition.load("directive-dedupe")


def load_edited(tmp_path, old: str, new: str):
    folder = tmp_path / SHIPPED.name
    shutil.copytree(SHIPPED.root, folder)
    toml = folder / "patch.toml"
    assert old in toml.read_text()
    toml.write_text(toml.read_text().replace(old, new, 1))
    return definition.load(SHIPPED.name, folder)


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ('serialiser = "prompt"', 'serialiser = "promtp"', "audit.serialiser names the role 'promtp'"),
        ('write_order = ["upstream",', 'write_order = ["upstrem",', "write_order names the role 'upstrem'"),
        ('value = "defer"\ntarget = "upstream"', 'value = "defer"\ntarget = "up"', "defer.target names the role 'up'"),
        ('setting = "upstream_dedupe"', 'setting = "upstream_dedup"', "defer.setting names the setting"),
        ('when = { setting = "tags"', 'when = { setting = "tag"', "settings.min_bytes.when names the setting 'tag'"),
        ("hand_fix_risks = { upstream =", "hand_fix_risks = { upstreams =", "hand_fix_risks names the role"),
        ('target = "binding"\ntext', 'target = "bind"\ntext', "extension.risks names the role 'bind'"),
        ('unsafe_alone_with = "upstream"', 'unsafe_alone_with = "u"', "extension.unsafe_alone_with names the role"),
        ('present = ["upstream"]', 'present = ["upstream2"]', "versions.known.present names the role"),
        ('headline = ["incident-3",', 'headline = ["incident-4",', "headline names the fixture 'incident-4'"),
        ('role = "binding"', 'role = "prompt"', "two targets have the role 'prompt'"),
    ],
)
def test_a_name_the_patch_does_not_have_is_refused_in_one_line(tmp_path, old, new, says):
    with pytest.raises(FatalError, match=re.escape(says)) as caught:
        load_edited(tmp_path, old, new)
    assert "\n" not in str(caught.value) and str(tmp_path) in str(caught.value)


def test_the_shipped_patches_pass_their_own_schema():
    for patch in definition.load_all():
        roles = {t.role for t in patch.targets}
        assert set(patch.audit.values()) <= roles and set(patch.write_order) <= roles
        assert set(patch.headline) <= {f["name"] for f in patch.fixtures()}
