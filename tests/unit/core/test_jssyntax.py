import pytest

from senpi_guard.core import jssyntax
from senpi_guard.demo import sample


def returns_of(source: str, name: str = "buildPromptBlocks") -> list[str]:
    data = source.encode()
    defs = jssyntax.find_definitions(jssyntax.parse(data), name)
    assert len(defs) == 1
    return [data[r.expr.start : r.expr.end].decode() for r in defs[0].returns]


def test_shape1_ternary_return():
    assert returns_of(sample.prompt_bridge_source(1)) == ['blocks.length > 0 ? blocks : [{ type: "text", text: "" }]']


def test_shape2_return_blocks():
    assert returns_of(sample.prompt_bridge_source(2)) == ["blocks"]


def test_upstream_returns_and_param():
    data = sample.sample_source("prompt-directive-dedupe.js").encode()
    (d,) = jssyntax.find_definitions(jssyntax.parse(data), "dedupeUltraworkBlocks")
    assert len(d.returns) == 3
    assert d.params == ("blocks",)
    assert not d.reassigns_param0


def test_nested_function_returns_are_not_ours():
    src = """export function buildPromptBlocks(c) {
    const f = function () { return 1; };
    const g = () => { return 2; };
    class K { m() { return 3; } }
    if (c.early) { return []; }
    return c.messages.map((m) => { return m; });
}"""
    assert returns_of(src) == ["[]", "c.messages.map((m) => { return m; })"]


def test_export_clause_and_alias():
    src = "function local(c) {\n\treturn c.blocks;\n}\nexport { local as buildPromptBlocks };"
    assert returns_of(src) == ["c.blocks"]


def test_arrow_with_expression_body_and_block_body():
    assert returns_of("export const buildPromptBlocks = (c) => c.blocks;") == ["c.blocks"]
    source = "const b = async (c) => {\r\n\treturn [c];\r\n};\r\nexport { b as buildPromptBlocks };"
    assert returns_of(source) == ["[c]"]


def test_import_or_call_is_not_a_definition():
    data = b'import { buildPromptBlocks } from "./p.js";\nexport const x = buildPromptBlocks({});'
    assert jssyntax.find_definitions(jssyntax.parse(data), "buildPromptBlocks") == []


def test_not_exported_is_not_a_definition():
    data = b"function buildPromptBlocks(c) { return c; }"
    assert jssyntax.find_definitions(jssyntax.parse(data), "buildPromptBlocks") == []


def test_syntax_error_reports_line():
    with pytest.raises(jssyntax.JsSyntaxError) as info:
        jssyntax.parse(b"export function f() {\n  return [;\n}")
    assert info.value.line == 2


def test_param_reassignment_detected():
    data = b"export function dedupeUltraworkBlocks(blocks) { blocks = []; return blocks; }"
    (d,) = jssyntax.find_definitions(jssyntax.parse(data), "dedupeUltraworkBlocks")
    assert d.reassigns_param0


def test_a_file_that_names_the_function_only_in_line_comments_is_not_parsed(tmp_path):
    from senpi_guard.core import locate

    commented = tmp_path / "a.js"
    commented.write_bytes(b"    // buildPromptBlocks is built elsewhere\n\xff not even UTF-8\n")
    defined = tmp_path / "b.js"
    defined.write_bytes(b"// see buildPromptBlocks below\nexport function buildPromptBlocks() { return []; }\n")
    found = locate.find_exported_functions([str(commented), str(defined)], ["buildPromptBlocks"])
    assert [hit.path.name for hit in found["buildPromptBlocks"]] == ["b.js"]


DEPTH = 5000  # far past Python's own recursion limit


def test_deep_nesting_inside_the_target_is_walked_without_recursion():
    deep = "[" * DEPTH + "x" + "]" * DEPTH
    source = (
        f"export function buildPromptBlocks(x) {{\n  const deep = {deep};\n  x = 1;\n  return [deep];\n}}\n"
    ).encode()
    (found,) = jssyntax.find_definitions(jssyntax.parse(source), "buildPromptBlocks")
    assert found.reassigns_param0 and [r.node_type for r in found.returns] == ["array"]
    assert len(jssyntax.tokens(jssyntax.parse(source).root_node)) > 2 * DEPTH


def test_a_deep_syntax_error_is_reported_without_recursion():
    source = ("export const deep = " + "(" * DEPTH + "1 +;" + ")" * DEPTH + "\n").encode()
    with pytest.raises(jssyntax.JsSyntaxError):
        jssyntax.parse(source)
