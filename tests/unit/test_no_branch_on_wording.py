"""src/ never decides on the wording of a message (issue 47): a result's reason, a refusal's fix,
what a step removed and why a folder was left are fields, and the text is made from them. A
message's words may change freely; no branch may follow them."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import senpi_guard

SRC = Path(senpi_guard.__file__).parent
# what once parsed words back out of text: a refusal's fix, printed lines, a detail's opening words,
# a folder's reason
GONE = ("REFUSAL_FIX", "redirect_stdout", 'startswith("left as it is")', '"(not empty:"', "refusal_step")
WORDS = {"detail", "message"}  # (a result's or an error's words)
STRING_TESTS = {"startswith", "endswith", "find", "index", "count"}
REGEX = {"search", "match", "fullmatch", "findall", "finditer"}
NOT_WORDS = {  # (file, what it tests): why it is no branch on words of ours
    ("audit/session.py", "'role' not in message"): "a session's message is a JSON object: a key is looked up",
    ("cli.py", "re.match(\"argument [^:]+: invalid choice: '([^']*)'\", message)"): "argparse's own text: "
    "Python 3.11's parser hands its error() nothing else (for the nearest choice of a mistyped one)",
}


def _sources() -> Iterator[tuple[Path, str]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path, path.read_text(encoding="utf-8")


def _words(node: ast.AST) -> bool:
    """Whether an expression is made of a message's words: `detail`, `message` (as a name or an
    attribute), or an exception as text (`str(exc)`)."""
    for sub in ast.walk(node):
        if (isinstance(sub, ast.Name) and sub.id in WORDS) or (isinstance(sub, ast.Attribute) and sub.attr in WORDS):
            return True
        text = isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "str" and sub.args
        if text and isinstance(sub.args[0], ast.Name) and sub.args[0].id in ("exc", "err", "error"):
            return True
    return False


def _conditions(tree: ast.AST) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.IfExp | ast.While | ast.Assert):
            yield node.test
        elif isinstance(node, ast.comprehension):
            yield from node.ifs
        elif isinstance(node, ast.BoolOp):
            yield from node.values


def _decided_on_words(tree: ast.AST) -> list[ast.AST]:
    """Each condition testing a message's words (`.startswith`, `"…" in`), and each regex run over them."""
    found: dict[int, ast.AST] = {}
    for test in _conditions(tree):
        for node in ast.walk(test):
            called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if called and node.func.attr in STRING_TESTS and _words(node.func.value):
                found[id(node)] = node
            inside = isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            if inside and isinstance(node.left, ast.Constant) and any(_words(side) for side in node.comparators):
                found[id(node)] = node
    for node in ast.walk(tree):
        called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if called and node.func.attr in REGEX and any(_words(arg) for arg in node.args):
            found[id(node)] = node
    return list(found.values())


def test_nothing_in_src_parses_words_back_out_of_a_message():
    found = [f"{path.relative_to(SRC)}: {gone}" for path, text in _sources() for gone in GONE if gone in text]
    assert found == []


def test_no_branch_in_src_follows_the_words_of_a_detail_or_a_message():
    found = [
        f"{path.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)}"
        for path, text in _sources()
        for node in _decided_on_words(ast.parse(text))
        if (str(path.relative_to(SRC)), ast.unparse(node)) not in NOT_WORDS
    ]
    assert found == []


def test_the_check_sees_the_branches_it_forbids():
    """(The check itself) the branches src/ once had are found."""
    once = """
if outcome.ok and outcome.detail.startswith("left as it is"):
    pass
found = REFUSAL_FIX.search(message or "")
kept = [line for line in lines if "(not empty:" not in line.detail]
step = "x" if "chmod" in str(exc) else "y"
"""
    assert len(_decided_on_words(ast.parse(once))) == 4
    assert _decided_on_words(ast.parse("if outcome.reason is Reason.RESHAPE_LEFT:\n    pass\n")) == []
