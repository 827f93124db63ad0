"""The house rules a reader relies on (issue 47), checked on src/ as it is: no function longer than
60 lines, no module longer than 400, and no module that replaces a function of `os`, `io`,
`builtins` or `sys` (what senpi-guard does is what its code says, never a patched standard library)."""

from __future__ import annotations

import ast
from pathlib import Path

import senpi_guard

SRC = Path(senpi_guard.__file__).parent
STANDARD = {"os", "io", "builtins", "sys", "subprocess", "shutil"}
# (not functions: the front door sets the standard streams to ones that let their reader go, __main__.py)
STREAMS = {"sys.stdout", "sys.stderr"}


def _trees() -> list[tuple[str, str, ast.Module]]:
    return [
        (str(p.relative_to(SRC)), text, ast.parse(text))
        for p in sorted(SRC.rglob("*.py"))
        if (text := p.read_text(encoding="utf-8"))
    ]


def test_no_function_is_longer_than_60_lines():
    long = [
        f"{name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for name, _text, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > 60
    ]
    assert long == []


def test_no_module_is_longer_than_400_lines():
    assert [f"{name} ({text.count(chr(10))})" for name, text, _ in _trees() if text.count("\n") > 400] == []


def _replaces_standard(node: ast.AST) -> str | None:
    """`os.kill = …`, `setattr(builtins, …)` and the like: what it replaces, else None."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
    for target in targets:
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in STANDARD:
            what = f"{target.value.id}.{target.attr}"
            return None if what in STREAMS else what
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and node.args:
        first = node.args[0]
        if isinstance(first, ast.Name) and first.id in STANDARD:
            return f"setattr({first.id}, …)"
    return None


def test_no_module_replaces_a_function_of_the_standard_library():
    found = [
        f"{name}:{node.lineno} {what}"
        for name, _text, tree in _trees()
        for node in ast.walk(tree)
        if (what := _replaces_standard(node))
    ]
    assert found == []


def test_the_rule_sees_a_replacement():
    """(the check above can fail: it finds each form it looks for)"""
    tree = ast.parse("import os, builtins\nos.kill = print\nsetattr(builtins, 'open', print)\nx = 1\n")
    assert [w for node in ast.walk(tree) if (w := _replaces_standard(node))] == ["os.kill", "setattr(builtins, …)"]
