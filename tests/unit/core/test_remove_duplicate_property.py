"""The "remove-duplicate-property" edit kind through its own interface (tests/unit/core/
test_properties.py drives it through the engine): a target must name the property and senpi's own
value; every hand-added copy in the target function goes (two at once, one written on a line with
others, a quoted key), each line keeping its number; code outside the function is never touched;
its reverse gives the bytes back exactly; status's finding names every line and why it matters."""

from __future__ import annotations

import shutil

import pytest

from senpi_guard.core import jssyntax
from senpi_guard.core.patch import definition
from senpi_guard.core.patch.kinds import Edited, Render, Undo
from senpi_guard.core.patch.kinds.remove_duplicate_property import KIND, Duplicate
from senpi_guard.errors import FatalError

SPEC = Duplicate("hooks", "HOST_TOOL_DENIAL_HOOKS", "it undoes senpi's denial")
FUNCTION = "buildOptions"


def options(*lines: str, after: str = "") -> bytes:
    """senpi's options function with these lines in its object literal (and code after it)."""
    body = "".join(f"        {line}\n" for line in lines)
    return (
        f"export function {FUNCTION}(input) {{\n    const queryOptions = {{\n        cwd: input.cwd,\n"
        f"{body}    }};\n    return queryOptions;\n}}\n{after}"
    ).encode()


def render(source: bytes) -> Edited | None:
    return KIND.render(Render(source, jssyntax.parse(source), FUNCTION, SPEC, "options.js", "hand-fix-hooks"))


def undo(edited: Edited) -> bytes:
    return KIND.reverse(edited.data, Undo("hand-fix-hooks", edited.region.encode(), (SPEC,)))


def test_a_target_names_the_property_and_senpis_own_value():
    target = {"property": "hooks", "keep": "HOST_TOOL_DENIAL_HOOKS"}
    assert KIND.parse(target, "opts") == Duplicate("hooks", "HOST_TOOL_DENIAL_HOOKS", "")
    for missing in ("property", "keep"):
        with pytest.raises(ValueError, match="target 'opts' names no property or no value to keep"):
            KIND.parse({k: v for k, v in target.items() if k != missing}, "opts")
    assert KIND.keys == {"property", "keep", "about"}


def test_a_patch_whose_target_keeps_nothing_does_not_load(tmp_path):
    shipped = definition.load("hand-fix-hooks")
    folder = tmp_path / shipped.name
    shutil.copytree(shipped.root, folder)
    toml = folder / "patch.toml"
    toml.write_text(toml.read_text().replace('keep = "HOST_TOOL_DENIAL_HOOKS"\n', "", 1))
    with pytest.raises(FatalError, match="names no property or no value to keep") as caught:
        definition.load(shipped.name, folder)
    assert str(folder) in str(caught.value) and "\n" not in str(caught.value)


def test_nothing_to_repair_is_no_edit_and_no_finding():
    clean = options("hooks: HOST_TOOL_DENIAL_HOOKS,")
    assert render(clean) is None
    assert KIND.finding(SPEC, FUNCTION, clean, "options.js") == ""


def test_every_hand_added_copy_goes_and_comes_back_exactly():
    base = options("hooks: { PreToolUse: [] },", "hooks: HOST_TOOL_DENIAL_HOOKS,", "hooks: mine,", "model: 'x',")
    edited = render(base)
    assert edited is not None
    assert edited.data.count(b"hooks") == 1 and b"hooks: HOST_TOOL_DENIAL_HOOKS," in edited.data
    assert b"model: 'x'," in edited.data and edited.data.count(b"\n") == base.count(b"\n")
    assert len(edited.region.splitlines()) == 2  # (one restore line per copy removed)
    assert undo(edited) == base


def test_a_copy_on_a_line_with_others_goes_alone():
    base = options("hooks: HOST_TOOL_DENIAL_HOOKS, hooks: { Stop: [] }, model: 'x',")
    edited = render(base)
    assert edited is not None
    line = edited.data.split(b"\n")[3]
    assert line.split() == [b"hooks:", b"HOST_TOOL_DENIAL_HOOKS,", b"model:", b"'x',"]  # (only the copy went)
    assert undo(edited) == base


def test_a_quoted_key_is_the_same_property():
    base = options('"hooks": { Stop: [] },', "hooks: HOST_TOOL_DENIAL_HOOKS,")
    edited = render(base)
    assert edited is not None and b'"hooks"' not in edited.data
    assert undo(edited) == base


def test_code_outside_the_target_function_is_left_alone():
    elsewhere = "export const other = { hooks: a, hooks: b };\n"
    base = options("hooks: HOST_TOOL_DENIAL_HOOKS,", after=elsewhere)
    assert render(base) is None
    twice = options("hooks: HOST_TOOL_DENIAL_HOOKS,", "hooks: mine,", after=elsewhere)
    edited = render(twice)
    assert edited is not None and edited.data.endswith(elsewhere.encode())


def test_the_finding_names_every_line_senpis_value_and_why():
    base = options("hooks: first,", "hooks: HOST_TOOL_DENIAL_HOOKS,", "hooks: second,")
    said = KIND.finding(SPEC, FUNCTION, base, "options.js")
    assert said.startswith("line 4, 6: a second `hooks` in one object")
    assert "senpi's own `hooks: HOST_TOOL_DENIAL_HOOKS`: it undoes senpi's denial" in said
    assert said.endswith("apply removes the hand-added one")
