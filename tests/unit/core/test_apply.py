import pytest
from conftest import hand_patched
from hypothesis import given, settings
from hypothesis import strategies as st

from senpi_guard.core import jssyntax
from senpi_guard.core.patch import apply as edit
from senpi_guard.core.patch import definition, reverse
from senpi_guard.core.patch.kinds import wrap
from senpi_guard.demo import sample
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config

PATCH = definition.load("directive-dedupe")
CONFIG = Config()


def patch_bytes(base: bytes, role: str = "prompt") -> bytes:
    return edit.render(PATCH, CONFIG, PATCH.target(role), base, "x.js")


@pytest.mark.parametrize("shape", [1, 2])
def test_roundtrip_and_line_numbers(shape):
    base = sample.prompt_bridge_source(shape).encode()
    patched = patch_bytes(base)
    assert reverse.remove_edit(patched, PATCH) == base
    # every original code line keeps its number; only the return line changes, in place
    old, new = base.split(b"\n"), patched.split(b"\n")
    changed = [i for i, line in enumerate(old[:-1]) if new[i] != line]
    assert len(changed) == 1 and b"__senpiGuardDedupe(" in new[changed[0]]
    assert patched.endswith(b"//# sourceMappingURL=prompt-bridge.js.map")  # still no trailing newline
    assert edit.read_header(patched).original_sha256 == edit.sha256(base)


def test_crlf_file_gets_crlf_payload():
    base = sample.prompt_bridge_source(2).replace("\n", "\r\n").encode()
    patched = patch_bytes(base)
    assert patched.count(b"\n") == patched.count(b"\r\n")
    assert reverse.remove_edit(patched, PATCH) == base


@pytest.mark.parametrize("tail", ["", "\n"])
def test_no_source_map_line(tail):
    base = ("export function buildPromptBlocks(c) {\n    return c.blocks;\n}" + tail).encode()
    patched = patch_bytes(base)
    jssyntax.parse(patched)
    assert reverse.remove_edit(patched, PATCH) == base


def test_sequence_and_parenthesized_returns_roundtrip():
    base = (
        b"export function buildPromptBlocks(c) {\n    if (c.a) return (c.x, c.y);\n"
        b"    if (c.b) return c.x, c.z;\n    return (c.blocks);\n}"
    )
    patched = patch_bytes(base)
    assert b"__senpiGuardDedupe(/*senpi-guard:seq*/(c.x, c.z))" in patched
    assert reverse.remove_edit(patched, PATCH) == base


def test_remove_edit_refuses_a_changed_file():
    base = sample.prompt_bridge_source(2).encode()
    patched = patch_bytes(base).replace(b"USER:", b"USR:")
    with pytest.raises(edit.EditError):
        reverse.remove_edit(patched, PATCH)


def test_upstream_wrap_passes_first_parameter():
    base = sample.sample_source("prompt-directive-dedupe.js").encode()
    patched = patch_bytes(base, "upstream")
    assert patched.count(b"__senpiGuardUpstream({ blocks, collapsedDirectives: 0 }, blocks)") == 2
    assert reverse.remove_edit(patched, PATCH) == base


def test_upstream_entry_guard_sits_on_the_first_line_and_comes_off():
    base = sample.sample_source("prompt-directive-dedupe.js").encode()
    patched = edit.render(PATCH, CONFIG, PATCH.target("upstream"), base, "prompt-directive-dedupe.js")
    head = next(line for line in patched.split(b"\n") if line.startswith(b"export function dedupeUltraworkBlocks"))
    opening, closing = wrap.entry_marks(PATCH.name)
    assert head.endswith(
        b"{" + opening + b"if (__senpiGuardSkip(blocks)) return "
        b"__senpiGuardUpstream(__senpiGuardSkipped, blocks);" + closing
    )
    code = patched[: patched.index(b"// senpi-guard: patched by")]
    assert code.count(b"\n") == base[: base.rindex(b"//# sourceMappingURL")].count(b"\n")  # lines kept
    assert reverse.remove_edit(patched, PATCH) == base
    with pytest.raises(edit.EditError):  # a change outside the guard: the sha256 does not match
        reverse.remove_edit(patched.replace(b"const spans = []", b"const spans = [0]"), PATCH)


def test_hand_fix_removal_gives_back_the_original():
    base = sample.prompt_bridge_source(2)
    assert reverse.remove_hand_fix(hand_patched(base).encode(), PATCH.hand_fix_function) == base.encode()


def test_hand_fix_removal_refuses_other_uses():
    text = hand_patched(sample.prompt_bridge_source(2)) + "\nexport const alias = dedupeRepeatedDirectiveBlocks;"
    with pytest.raises(edit.EditError, match="used other than"):
        reverse.remove_hand_fix(text.encode(), PATCH.hand_fix_function)


js_identifier = st.from_regex(r"[a-z][a-zA-Z0-9]{0,8}", fullmatch=True).filter(
    lambda s: (
        s
        not in {
            "do",
            "if",
            "in",
            "for",
            "let",
            "new",
            "try",
            "var",
            "case",
            "else",
            "enum",
            "this",
            "void",
            "with",
            "await",
            "break",
            "catch",
            "class",
            "const",
            "super",
            "throw",
            "while",
            "yield",
            "delete",
            "export",
            "import",
            "return",
            "switch",
            "typeof",
            "default",
            "extends",
            "finally",
            "continue",
            "debugger",
            "function",
            "instanceof",
            "null",
            "true",
            "false",
        }
    )
)


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(js_identifier, min_size=1, max_size=4),
    crlf=st.booleans(),
    indent=st.sampled_from(["    ", "\t", "  "]),
    tail=st.sampled_from(["", "\n", "\n//# sourceMappingURL=x.js.map"]),
)
def test_roundtrip_random_returns(names, crlf, indent, tail):
    nl = "\r\n" if crlf else "\n"
    lines = ["export function buildPromptBlocks(c) {"]
    lines += [f"{indent}if (c.{n}) {{ return c.{n} ? [c.{n}] : []; }}" for n in names]
    lines += [f"{indent}return [];", "}"]
    base = (nl.join(lines) + tail).encode()
    patched = patch_bytes(base)
    jssyntax.parse(patched)
    assert patched.count(b"__senpiGuardDedupe(") >= len(names) + 1
    assert reverse.remove_edit(patched, PATCH) == base


def test_marker_length_and_tag_checks():
    import dataclasses

    from senpi_guard.errors import FatalError

    one = CONFIG.with_patch("directive-dedupe", tags=["ultrawork-mode"])
    long_marker = dataclasses.replace(PATCH, marker_template="[" + "x" * 110 + " {tag}]")
    with pytest.raises(FatalError, match="too long"):
        long_marker.settings(one)
    opening = dataclasses.replace(PATCH, marker_template="[see <{tag}> above]")
    with pytest.raises(FatalError, match="would contain <ultrawork-mode>"):
        opening.settings(one)
    assert PATCH.settings(CONFIG)["tags"]  # the shipped marker passes for every default tag


BINDING = (
    b'import { sentMessageHashes } from "./session-sync.js";\n'
    b"export function sentHashesFromBranch(branch) {\n"
    b'    if (branch.some((entry) => entry.type === "compaction"))\n        return [];\n'
    b"    const messages = [];\n    for (const entry of branch) {\n"
    b'        if (entry.type === "message") messages.push(entry.message);\n    }\n'
    b"    return sentMessageHashes(messages);\n}\n//# sourceMappingURL=session-binding.js.map"
)


def test_an_entry_only_target_gets_one_statement_and_reverts_exactly():
    target = PATCH.target("binding")
    assert target.spec.wrap == "" and "__senpiGuardBranchAsSent(" in target.spec.entry and target.spec.callee == ""
    patched = edit.render(PATCH, CONFIG, target, BINDING, "session-binding.js")
    jssyntax.parse(patched)
    lines = patched.split(b"\n")
    assert lines[1].endswith(
        b"{/*senpi-guard:entry directive-dedupe*/branch = __senpiGuardBranchAsSent(branch);"
        b"/*senpi-guard:entry-end directive-dedupe*/"
    )
    assert b"return [];" in patched and b"return sentMessageHashes(messages);" in patched  # returns untouched
    assert reverse.remove_edit(patched, PATCH) == BINDING
    assert edit.read_header(patched).role == "binding"


def test_an_entry_only_target_needs_a_braced_body_and_a_plain_parameter():
    target = PATCH.target("binding")
    arrow = b"export const sentHashesFromBranch = (branch) => branch.map(String);"
    with pytest.raises(FatalError, match="no braced body"):
        edit.render(PATCH, CONFIG, target, arrow, "x.js")
    reassigned = b"export function sentHashesFromBranch(branch) {\n    branch = [];\n    return branch;\n}"
    with pytest.raises(FatalError, match="plain first parameter"):
        edit.render(PATCH, CONFIG, target, reassigned, "x.js")


def parse_edited(tmp_path, old: str, new: str):
    """definition._parse of a copy of the patch whose patch.toml has `old` replaced by `new`."""
    import shutil
    import tomllib

    folder = tmp_path / "patches" / PATCH.name
    shutil.copytree(PATCH.root, folder)
    toml = folder / "patch.toml"
    assert old in toml.read_text()
    toml.write_text(toml.read_text().replace(old, new))
    return definition._parse(tomllib.loads(toml.read_text()), folder)


def test_a_target_with_neither_wrap_nor_entry_is_refused(tmp_path):
    with pytest.raises(ValueError, match="neither a wrap nor an entry"):
        parse_edited(tmp_path, 'entry = "{param0} = __senpiGuardBranchAsSent({param0});"\n', "")


def test_a_key_under_the_wrong_table_in_patch_toml_is_refused(tmp_path):
    """A table header above a top-level key silently moves that key into the table: refused."""
    with pytest.raises(ValueError, match="unknown top-level keys misplaced"):
        parse_edited(tmp_path, "\norder = ", "\n[misplaced]\norder = ")
    for patch in definition.load_all():  # (and the real definitions have none)
        assert patch.order < 100
