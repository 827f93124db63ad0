"""Find an exported function and its return expressions in compiled JavaScript, by syntax tree."""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import tree_sitter_javascript
from tree_sitter import Language, Node, Parser, Tree

FUNCTION_TYPES = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "function_expression",
        "function",
        "generator_function",
        "arrow_function",
        "method_definition",
        "class_declaration",
        "class",
    }
)
DECLARATION_TYPES = frozenset({"function_declaration", "generator_function_declaration"})
VALUE_FUNCTION_TYPES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})


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


# The walks below keep their own stack: a deeply nested (valid) file must not exhaust Python's.


def _first_error(root: Node) -> Node | None:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            return node
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing or c.type == "ERROR"]))
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
    return tuple(_text(p) if p.type == "identifier" else None for p in params.named_children if p.type != "comment")


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
    return FunctionDef(
        name,
        local,
        Span(node.start_byte, node.end_byte),
        node.start_point[0] + 1,
        tuple(returns),
        params,
        is_generator,
        reassigns,
        body_open,
    )


def _collect_returns(root: Node, out: list[ReturnSite]) -> None:
    stack = list(reversed(root.named_children))
    while stack:
        child = stack.pop()
        if child.type in FUNCTION_TYPES:
            continue
        if child.type == "return_statement":
            exprs = [c for c in child.named_children if c.type != "comment"]
            if exprs:
                out.append(ReturnSite(Span(exprs[0].start_byte, exprs[-1].end_byte), exprs[0].type))
            continue
        stack.extend(reversed(child.named_children))


def _assigns(root: Node, name: str) -> bool:
    stack = list(root.named_children)
    while stack:
        child = stack.pop()
        if child.type in ("assignment_expression", "augmented_assignment_expression"):
            left = child.child_by_field_name("left")
            if left is not None and left.type == "identifier" and _text(left) == name:
                return True
        if child.type == "update_expression" and _text(child.child_by_field_name("argument")) == name:
            return True
        stack.extend(child.named_children)
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
        decl = statement.child_by_field_name("declaration") if statement.type == "export_statement" else statement
        if decl is not None and decl.type in DECLARATION_TYPES and _text(decl.child_by_field_name("name")) == name:
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


def top_level_binding(tree: Tree, name: str) -> Node | None:
    """What a top-level name is bound to: its function declaration or its declarator's value."""
    for statement in tree.root_node.named_children:
        decl = statement.child_by_field_name("declaration") if statement.type == "export_statement" else statement
        if decl is None:
            continue
        if decl.type in DECLARATION_TYPES and _text(decl.child_by_field_name("name")) == name:
            return decl
        if decl.type in ("lexical_declaration", "variable_declaration"):
            for declarator in decl.named_children:
                if _text(declarator.child_by_field_name("name")) == name:
                    return declarator.child_by_field_name("value")
    return None


def import_binding(tree: Tree, local: str) -> tuple[str, str] | None:
    """(imported name, module specifier) of an `import` that binds `local` ("default" for a default import)."""
    for statement in tree.root_node.named_children:
        source = statement.child_by_field_name("source") if statement.type == "import_statement" else None
        clause = next((c for c in statement.named_children if c.type == "import_clause"), None)
        if source is None or clause is None:
            continue
        for part in clause.named_children:
            if part.type == "identifier" and _text(part) == local:
                return "default", string_value(source) or ""
            for spec in part.named_children if part.type == "named_imports" else ():
                alias = spec.child_by_field_name("alias") or spec.child_by_field_name("name")
                if _text(alias) == local:
                    return _text(spec.child_by_field_name("name")), string_value(source) or ""
    return None


def string_value(node: Node | None) -> str | None:
    """The value of a plain string literal (None for anything else, or one with escapes)."""
    if node is None or node.type != "string":
        return None
    parts = node.named_children
    if any(p.type != "string_fragment" for p in parts):
        return None
    return "".join(_text(p) for p in parts)


# ---- syntax patterns: JavaScript source with `$NAME` placeholders ----------------------------

_UNCOMPARED = frozenset({",", ";", "comment"})


@cache
def _pattern_tree(source: str) -> Tree:
    return parse(source.encode("utf-8"))


def pattern(source: str) -> Node:
    """The first statement of `source` (an expression statement's expression), for `match`.

    `$NAME` matches any node, and the same tokens wherever it recurs; `$_` matches anything; a
    statement `$_;` matches any one statement; `...$$` in an object allows further properties.
    """
    statement = _pattern_tree(source).root_node.named_children[0]
    if statement.type == "expression_statement":
        return statement.named_children[0]
    return statement


def match(pattern_node: Node, node: Node, binds: dict[str, Node] | None = None) -> dict[str, Node] | None:
    """The placeholders' nodes when `node` has the pattern's syntax (formatting and comments aside)."""
    found = dict(binds or {})
    return found if _match(pattern_node, node, found) else None


def match_first(
    patterns: dict[str, str], node: Node | None, binds: dict[str, Node] | None = None
) -> tuple[str, dict[str, Node]] | None:
    """The key of the first pattern source that `node` matches, with its placeholders."""
    for key, source in patterns.items():
        found = match(pattern(source), node, binds) if node is not None else None
        if found is not None:
            return key, found
    return None


def constant_string(tree: Tree, node: Node) -> str | None:
    """A string literal's value, or that of the top-level constant an identifier is bound to."""
    return string_value(top_level_binding(tree, _text(node)) if node.type == "identifier" else node)


def tokens(root: Node) -> list[str]:
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.child_count == 0:
            if node.type not in _UNCOMPARED:
                out.append(_text(node))
        else:
            stack.extend(reversed(node.children))
    return out


def _placeholder(node: Node) -> str | None:
    if node.type == "expression_statement" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type in ("identifier", "property_identifier") and _text(node).startswith("$"):
        return _text(node)
    return None


def _parts(node: Node) -> list[Node]:
    return [c for c in node.children if c.type not in _UNCOMPARED]


def _match(p: Node, n: Node, binds: dict[str, Node]) -> bool:
    name = _placeholder(p)
    if name is not None:
        if name == "$_":
            return True
        if name in binds:
            return tokens(binds[name]) == tokens(n)
        binds[name] = n
        return True
    if p.type == "pair" and n.type == "shorthand_property_identifier":
        key, value = p.child_by_field_name("key"), p.child_by_field_name("value")
        return (
            _text(key) == _text(n)
            and value is not None
            and (_match(value, n, binds) if _placeholder(value) else _text(value) == _text(n))
        )
    if p.type == "object" and any(tokens(c) == ["...", "$$"] for c in p.named_children):
        return n.type == "object" and _match_some(p, n, binds)
    if p.type != n.type:
        return False
    if p.child_count == 0 or n.child_count == 0:
        return p.child_count == n.child_count and _text(p) == _text(n)
    ps, ns = _parts(p), _parts(n)
    return len(ps) == len(ns) and all(_match(a, b, binds) for a, b in zip(ps, ns, strict=True))


def _match_some(p: Node, n: Node, binds: dict[str, Node]) -> bool:
    """Each property of the pattern object is among the object's (in any order)."""
    for wanted in p.named_children:
        if tokens(wanted) == ["...", "$$"]:
            continue
        for candidate in n.named_children:
            trial = dict(binds)
            if _match(wanted, candidate, trial):
                binds.update(trial)
                break
        else:
            return False
    return True
