"""The "remove-duplicate-property" edit kind, pure: which property is hand-added, the edit keeps every
line's number, and removing the edit gives the original bytes back exactly."""

from __future__ import annotations

import pytest

from senpi_guard.core import jssyntax
from senpi_guard.core.patch import apply, definition, properties, reverse
from senpi_guard.core.patch.classify import State, classify
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config

HOOKS = definition.load("hand-fix-hooks")
TARGET = HOOKS.target("oauth-options")
SENPI = b"""import { HOST_TOOL_DENIAL_HOOKS, canUseTool } from "./tools.js";
export function buildClaudeSdkOauthQueryOptions(input) {
    const queryOptions = {
        cwd: input.cwd,
        canUseTool,
        hooks: HOST_TOOL_DENIAL_HOOKS,
        settings: { autoCompactEnabled: true },
    };
    return queryOptions;
}
//# sourceMappingURL=options.js.map"""
HAND = b"""        hooks: {
            PreToolUse: [{ matcher: "Bash", hooks: [async () => ({ decision: "approve" })] }],
        },
"""


def hand_fixed(before: bool = False) -> bytes:
    """senpi's options with the bug report's second `hooks` (written from its description)."""
    anchor = b"        hooks: HOST_TOOL_DENIAL_HOOKS,\n"
    return SENPI.replace(anchor, HAND + anchor if before else anchor + HAND)


def hooks_pairs(source: bytes) -> list[bytes]:
    tree = jssyntax.parse(source)
    found = []

    def walk(node):
        if (
            node.type == "pair"
            and node.child_by_field_name("key").text == b"hooks"
            and node.parent.type == "object"
            and node.parent.parent is not None
            and node.parent.parent.type == "variable_declarator"
        ):
            found.append(node.child_by_field_name("value").text)
        for child in node.children:
            walk(child)

    walk(tree.root_node)
    return found


@pytest.mark.parametrize("before", [False, True])
def test_the_hand_added_hooks_goes_and_comes_back(before):
    base = hand_fixed(before)
    patched = apply.render(HOOKS, Config(), TARGET, base, "options.js")
    assert len(hooks_pairs(base)) == 2 and hooks_pairs(base)[1 if before else 0] == b"HOST_TOOL_DENIAL_HOOKS"
    assert hooks_pairs(patched) == [b"HOST_TOOL_DENIAL_HOOKS"]
    assert b'matcher: "Bash"' not in patched.split(b"// senpi-guard:")[0]  # (the nested hooks went with it)
    code = patched[: patched.index(b"// senpi-guard: patched by")]
    assert code.count(b"\n") == base[: base.index(b"//# sourceMappingURL")].count(b"\n")  # every line keeps its number
    assert reverse.remove_edit(patched, HOOKS, HOOKS.name) == base
    recovered = reverse.recover(patched, HOOKS)
    assert classify(patched, recovered, patched, HOOKS.version, HOOKS.config_digest(Config())).state == State.PATCHED


def test_nothing_to_repair_is_clean_and_a_finding_says_where():
    assert apply.render(HOOKS, Config(), TARGET, SENPI, "options.js") == SENPI
    found = reverse.recover(SENPI, HOOKS)
    assert classify(SENPI, found, SENPI, HOOKS.version, "0" * 16).state == State.CLEAN
    assert apply.finding(TARGET, SENPI, "options.js") == ""
    text = apply.finding(TARGET, hand_fixed(), "options.js")
    assert "line 7" in text and "HOST_TOOL_DENIAL_HOOKS" in text and "apply removes" in text


def test_two_hooks_of_which_none_is_senpis_own_are_refused():
    twice = SENPI.replace(b"        hooks: HOST_TOOL_DENIAL_HOOKS,\n", HAND + HAND)
    with pytest.raises(FatalError, match="none of them is senpi's own"):
        properties.duplicates(twice, TARGET.function, "hooks", "HOST_TOOL_DENIAL_HOOKS", "options.js")


def test_two_patches_on_one_file_are_composed_under_one_header_and_come_off_together():
    import dataclasses

    own = dataclasses.replace(TARGET.spec, property_name="settings", keep="{ autoCompactEnabled: true }")
    other_target = dataclasses.replace(TARGET, role="settings", spec=own)
    other = dataclasses.replace(HOOKS, name="other-repair", order=HOOKS.order + 1, targets=(other_target,))
    base = hand_fixed().replace(
        b"        settings: { autoCompactEnabled: true },\n",
        b"        settings: { autoCompactEnabled: true },\n        settings: {},\n",
    )
    both, results = apply.compose(
        base, [apply.Step(HOOKS, TARGET, Config()), apply.Step(other, other_target, Config())], "options.js"
    )
    assert results == {HOOKS.name: "applied", other.name: "applied"}
    header = apply.read_file_header(both)
    assert header.names == (HOOKS.name, other.name) and header.original_sha256 == apply.sha256(base)
    assert both.count(b"// senpi-guard: patched by") == 1
    assert len(hooks_pairs(both)) == 1 and b"settings: {}" not in both.split(b"// senpi-guard:")[0]
    # every patch comes off, the last one first: the original bytes, exactly
    assert reverse.recover(both, HOOKS, {other.name: other}).base == base
    # one alone cannot be taken off a file another shares: refused, not guessed
    with pytest.raises(ValueError, match="also carries"):
        reverse.remove_edit(both, HOOKS, HOOKS.name)
    # without the other, it is the same file as the first one alone makes
    alone, _ = apply.compose(base, [apply.Step(HOOKS, TARGET, Config())], "options.js")
    assert alone == apply.render(HOOKS, Config(), TARGET, base, "options.js")
    assert reverse.recover(alone, HOOKS).base == base


def test_deep_nesting_in_the_options_is_walked_without_recursion():
    deep = b"[" * 5000 + b"1" + b"]" * 5000
    source = hand_fixed().replace(b"        canUseTool,\n", b"        canUseTool,\n        deep: " + deep + b",\n")
    (removal,) = properties.duplicates(source, TARGET.function, "hooks", "HOST_TOOL_DENIAL_HOOKS", "options.js")
    assert removal.text == HAND
