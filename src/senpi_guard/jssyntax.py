"""Find an exported function and its return expressions in compiled JavaScript, by syntax tree."""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import tree_sitter_javascript
from tree_sitter import Language, Node, Parser, Tree

FUNCTION_TYPES = frozenset({
    "function_declaration", "generator_function_declaration", "function_expression", "function",
    "generator_function", "arrow_function", "method_definition", "class_declaration", "class",
})
DECLARATION_TYPES = frozenset({"function_declaration", "generator_function_declaration"})
VALUE_FUNCTION_TYPES = frozenset({"arrow_function", "function_expression", "function",
                                  "generator_function"})


class Span(NamedTuple):
    start: int
    end: int


class ReturnSite(NamedTuple):
    expr: Span
    node_type: str


class FunctionDef(NamedTuple):
    name: str
    local_name: str
    span: Span
    line: int
    returns: tuple[ReturnSite, ...]
    params: tuple[str | None, ...]
    is_generator: bool
    reassigns_param0: bool
    body_open: int | None = None  # the byte after a braced body's "{" (None: an expression body)


class JsSyntaxError(ValueError):
    def __init__(self, line: int, column: int) -> None:
        super().__init__(f"syntax error at line {line}, column {column}")
        self.line = line
        self.column = column


@cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_javascript.language()))


def parse(source: bytes) -> Tree:
    tree = _parser().parse(source)
    if tree.root_node.has_error:
        bad = _first_error(tree.root_node)
        row, col = bad.start_point if bad is not None else (0, 0)
        raise JsSyntaxError(row + 1, col + 1)
    return tree


def _first_error(node: Node) -> Node | None:
    if node.type == "ERROR" or node.is_missing:
        return node
    for child in node.children:
        if child.has_error or child.is_missing or child.type == "ERROR":
            found = _first_error(child)
            if found is not None:
                return found
    return None


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8") if node is not None and node.text is not None else ""


def _exported_names(root: Node) -> dict[str, str]:
    """local name -> exported name, from `export { local as name }` clauses."""
    names: dict[str, str] = {}
    for statement in root.named_children:
        if statement.type != "export_statement" or statement.child_by_field_name("source"):
            continue
        for clause in statement.named_children:
            if clause.type != "export_clause":
                continue
            for spec in clause.named_children:
                if spec.type == "export_specifier":
                    local = _text(spec.child_by_field_name("name"))
                    alias = spec.child_by_field_name("alias")
                    names[local] = _text(alias) if alias is not None else local
    return names


def _top_level_functions(root: Node):
    """Yield (local_name, function_node, directly_exported) for top-level function definitions."""
    for statement in root.named_children:
        exported = statement.type == "export_statement"
        decl = statement.child_by_field_name("declaration") if exported else statement
        if decl is None:
            continue
        if decl.type in DECLARATION_TYPES:
            yield _text(decl.child_by_field_name("name")), decl, exported
        elif decl.type in ("lexical_declaration", "variable_declaration"):
            for declarator in decl.named_children:
                value = declarator.child_by_field_name("value")
                name = declarator.child_by_field_name("name")
                if value is not None and name is not None and value.type in VALUE_FUNCTION_TYPES:
                    yield _text(name), value, exported


def find_definitions(tree: Tree, name: str) -> list[FunctionDef]:
    root = tree.root_node
    clause_names = _exported_names(root)
    found = []
    for local, node, direct in _top_level_functions(root):
        exported_as = local if direct else clause_names.get(local)
        if exported_as == name:
            found.append(_describe(node, name, local))
    return found


def _params(node: Node) -> tuple[str | None, ...]:
    params = node.child_by_field_name("parameters")
    if params is None:  # `x => ...`
        single = node.child_by_field_name("parameter")
        return (_text(single),) if single is not None else ()
    return tuple(_text(p) if p.type == "identifier" else None for p in params.named_children
                 if p.type != "comment")


def _describe(node: Node, name: str, local: str) -> FunctionDef:
    body = node.child_by_field_name("body")
    returns: list[ReturnSite] = []
    if body is not None and body.type != "statement_block":
        returns.append(ReturnSite(Span(body.start_byte, body.end_byte), body.type))
    elif body is not None:
        _collect_returns(body, returns)
    params = _params(node)
    is_generator = "generator" in node.type or any(c.type == "*" for c in node.children)
    reassigns = bool(params and params[0]) and body is not None and _assigns(body, params[0])
    body_open = body.start_byte + 1 if body is not None and body.type == "statement_block" else None
    return FunctionDef(name, local, Span(node.start_byte, node.end_byte), node.start_point[0] + 1,
                       tuple(returns), params, is_generator, reassigns, body_open)


def _collect_returns(node: Node, out: list[ReturnSite]) -> None:
    for child in node.named_children:
        if child.type in FUNCTION_TYPES:
            continue
        if child.type == "return_statement":
            exprs = [c for c in child.named_children if c.type != "comment"]
            if exprs:
                out.append(ReturnSite(Span(exprs[0].start_byte, exprs[-1].end_byte), exprs[0].type))
            continue
        _collect_returns(child, out)


def _assigns(node: Node, name: str) -> bool:
    for child in node.named_children:
        if child.type in ("assignment_expression", "augmented_assignment_expression"):
            left = child.child_by_field_name("left")
            if left is not None and left.type == "identifier" and _text(left) == name:
                return True
        if child.type == "update_expression" and _text(child.child_by_field_name("argument")) == name:
            return True
        if _assigns(child, name):
            return True
    return False


def find_calls(tree: Tree, callee: str) -> list[Node]:
    """Every call expression `callee(...)` in the file, outermost first."""
    calls: list[Node] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "call_expression":
            function = node.child_by_field_name("function")
            if function is not None and function.type == "identifier" and _text(function) == callee:
                calls.append(node)
        stack.extend(reversed(node.named_children))
    return calls


def top_level_declarations(tree: Tree, name: str) -> list[Node]:
    """Top-level `function name` declarations (exported or not)."""
    nodes = []
    for statement in tree.root_node.named_children:
        decl = statement.child_by_field_name("declaration") if statement.type == "export_statement" \
            else statement
        if decl is not None and decl.type in DECLARATION_TYPES and \
                _text(decl.child_by_field_name("name")) == name:
            nodes.append(statement)
    return nodes


def mentions(tree: Tree, identifier: str) -> int:
    count = 0
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "identifier" and _text(node) == identifier:
            count += 1
        stack.extend(node.named_children)
    return count
