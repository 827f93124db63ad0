"""The edit kind "wrap": every return value of the target function goes through a call (`wrap`), and/or
a statement is placed first in its body, on the body's first line (`entry`).

`entry` is not a kind of its own: one target may have both (directive-dedupe's `upstream`), and
the two share one edit of one function: one definition found, one shape check, one `{param0}`, and
an entry on a function without a braced body is only refused when there is no wrap to do instead.

Every original line keeps its number: a return expression is wrapped in place, the entry goes on
the line of the body's "{". Undoing unwraps each call of the wrap's callee and cuts each entry out
between the two comments naming its patch."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from senpi_guard.core import jssyntax
from senpi_guard.core.jssyntax import FunctionDef
from senpi_guard.core.patch.kinds.base import Edited, EditError, Render, Undo
from senpi_guard.errors import FatalError

# A sequence expression needs its own parentheses inside a call; this tag says we added them.
SEQUENCE_TAG = b"/*senpi-guard:seq*/"
LEGACY_ENTRY_RE = re.compile(re.escape(b"/*senpi-guard:entry*/") + rb".*?" + re.escape(b"/*senpi-guard:entry-end*/"))


# An entry statement sits between two comments naming its patch, right after the body's "{" (same
# line); format 9 and older wrote them without the name.
def entry_marks(name: str) -> tuple[bytes, bytes]:
    return f"/*senpi-guard:entry {name}*/".encode(), f"/*senpi-guard:entry-end {name}*/".encode()


@dataclass(frozen=True)
class Wrap:
    wrap: str = ""  # the call each return value goes through ("": returns are left alone)
    entry: str = ""  # a statement placed first in the function's body, on its first line

    @property
    def callee(self) -> str:
        return self.wrap.partition("(")[0]


def wrap_expression(expr: bytes, node_type: str, template: str, params: Sequence[str | None]) -> bytes:
    if node_type == "sequence_expression":
        expr = SEQUENCE_TAG + b"(" + expr + b")"
    prefix, _, suffix = template.partition("{expr}")
    if "{param0}" in template:
        if not params or not params[0]:
            raise EditError("the wrapped function has no plain first parameter")
        prefix, suffix = (s.replace("{param0}", params[0]) for s in (prefix, suffix))
    return prefix.encode() + expr + suffix.encode()


def check_function_shape(where: str, definition: FunctionDef, needs_param: bool, wraps_returns: bool = True) -> None:
    """Refuse function shapes the edit cannot handle."""
    if definition.is_generator:
        raise FatalError(
            f"{definition.name} in {where} is a generator: unknown return shape, "
            "senpi-guard does not know this version; report it with the file"
        )
    if wraps_returns and not definition.returns:
        raise FatalError(
            f"{definition.name} in {where} returns no value: unknown return shape, "
            "senpi-guard does not know this version; report it with the file"
        )
    if needs_param and (not definition.params or not definition.params[0] or definition.reassigns_param0):
        raise FatalError(
            f"{definition.name} in {where} has no plain first parameter that stays "
            "unchanged: unknown shape; report it with the file"
        )


def splice(source: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(source)
    for start, end, text in sorted(edits, key=lambda e: e[0], reverse=True):
        out[start:end] = text
    return bytes(out)


class WrapKind:
    name = "wrap"
    keys = frozenset({"wrap", "entry"})

    def parse(self, target: Mapping[str, Any], role: str) -> Wrap:
        spec = Wrap(target.get("wrap", ""), target.get("entry", ""))
        if not (spec.wrap or spec.entry):
            raise ValueError(f"target {role!r} has neither a wrap nor an entry")
        if spec.wrap and "{expr}" not in spec.wrap:
            raise ValueError(f"target {role!r}: its wrap {spec.wrap!r} has no {{expr}}")
        return spec

    def render(self, edit: Render) -> Edited:
        spec: Wrap = edit.spec
        defs = jssyntax.find_definitions(edit.tree, edit.function)
        if len(defs) != 1:
            raise FatalError(
                f"{edit.where}: expected one definition of {edit.function}, found {len(defs)}; reinstall senpi"
            )
        found = defs[0]
        check_function_shape(f"{edit.where}:{found.line}", found, "{param0}" in spec.wrap + spec.entry, bool(spec.wrap))
        params = found.params
        edits = [
            (start, end, wrap_expression(edit.source[start:end], site.node_type, spec.wrap, params))
            for site in (found.returns if spec.wrap else ())
            for start, end in [(site.expr.start, site.expr.end)]
        ]
        if spec.entry and found.body_open is not None:  # (an expression body gets no guard)
            code = spec.entry.replace("{param0}", params[0] or "") if params else spec.entry
            opening, closing = entry_marks(edit.name)
            edits.append((found.body_open, found.body_open, opening + code.encode() + closing))
        elif not spec.wrap:
            raise FatalError(
                f"{edit.where}:{found.line}: {edit.function} has no braced body for its entry "
                "statement: unknown shape; report it with the file"
            )
        return Edited(splice(edit.source, edits), "")

    def reverse(self, data: bytes, undo: Undo) -> bytes:
        opening, closing = entry_marks(undo.name)
        data = re.sub(re.escape(opening) + rb".*?" + re.escape(closing), b"", data)
        if undo.legacy:
            data = LEGACY_ENTRY_RE.sub(b"", data)
        callees = [spec.callee for spec in undo.specs if spec.callee]
        return unwrap_calls(data, callees) if callees else data

    def finding(self, spec: Any, function: str, base: bytes, where: str) -> str:
        return ""


def unwrap_calls(source: bytes, callees: Sequence[str]) -> bytes:
    tree = jssyntax.parse(source)
    edits: list[tuple[int, int, bytes]] = []
    for callee in callees:
        for call in jssyntax.find_calls(tree, callee):
            children = call.child_by_field_name("arguments").named_children
            args = [a for a in children if a.type != "comment"]
            if not args:
                raise EditError(f"{callee}() without arguments")
            first = args[0]
            tagged = children[0].type == "comment" and children[0].text == SEQUENCE_TAG
            if tagged and first.type == "parenthesized_expression" and first.named_children:
                first = first.named_children[0]
            edits.append((call.start_byte, call.end_byte, source[first.start_byte : first.end_byte]))
    out = bytearray(source)
    for start, end, text in sorted(edits, reverse=True):
        out[start:end] = text
    return bytes(out)


KIND = WrapKind()
