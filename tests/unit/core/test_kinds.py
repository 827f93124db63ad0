"""Edit kinds as a registry: the engine renders, reverts and describes a target only through the
kind its patch names, so a kind the engine has never seen works once it is registered; and a
patch's targets are checked against the kinds it names."""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from senpi_guard.core import jssyntax
from senpi_guard.core.patch import apply, definition, kinds, reverse
from senpi_guard.core.patch.classify import State, classify
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config

SOURCE = b"""export function greet(name) {
    return `hello ${name}`;
}
export function other() {
    return 1;
}
//# sourceMappingURL=greet.js.map"""
ENGINE = Path(apply.__file__).parent


@dataclass(frozen=True)
class Note:
    text: str


class CommentKind:
    """A kind only this test knows: a comment after the target function's "{" (same line)."""

    name = "test-comment"
    keys = frozenset({"text"})

    def parse(self, target: Mapping[str, Any], role: str) -> Note:
        if not target.get("text"):
            raise ValueError(f"target {role!r} has no text")
        return Note(target["text"])

    def render(self, edit: kinds.Render) -> kinds.Edited:
        (found,) = jssyntax.find_definitions(edit.tree, edit.function)
        at = found.body_open
        comment = f"/*{edit.name}: {edit.spec.text}*/".encode()
        return kinds.Edited(edit.source[:at] + comment + edit.source[at:], f"// {edit.name} noted")

    def reverse(self, data: bytes, undo: kinds.Undo) -> bytes:
        for spec in undo.specs:
            data = data.replace(f"/*{undo.name}: {spec.text}*/".encode(), b"", 1)
        return data

    def finding(self, spec: Note, function: str, base: bytes, where: str) -> str:
        return f"{function} has no note"


def write_patch(root: Path, name: str, body: str, files: Mapping[str, str] | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    for file, text in (files or {}).items():
        (folder / file).write_text(text)
    (folder / "patch.toml").write_text(f'name = "{name}"\nversion = 1\n{body}')
    (folder / "checks.mjs").write_text("export const checks = [];\n")
    return folder


NOTE_PATCH = 'edits = ["test-comment"]\n[[targets]]\nrole = "greeting"\nfunction = "greet"\ntext = "noted"\n'


def test_a_kind_the_engine_never_saw_renders_reverts_and_reports_once_registered(tmp_path, monkeypatch):
    folder = write_patch(tmp_path, "note", NOTE_PATCH)
    with pytest.raises(FatalError, match="unknown edit kind 'test-comment'"):
        definition.load("note", folder)
    monkeypatch.setitem(kinds.KINDS, CommentKind.name, CommentKind())
    patch = definition.load("note", folder)
    target = patch.target("greeting")
    assert target.edit == "test-comment" and target.spec == Note("noted")
    patched = apply.render(patch, Config(), target, SOURCE, "greet.js")
    lines = patched.split(b"\n")
    assert lines[0] == b"export function greet(name) {/*note: noted*/"  # (every line keeps its number)
    assert lines[1:6] == SOURCE.split(b"\n")[1:6]
    assert b"// senpi-guard: begin note\n// note noted\n// senpi-guard: end note\n" in patched
    assert apply.read_header(patched).name == "note"
    found = reverse.recover(patched, patch)
    assert found.base == SOURCE  # byte-exact
    assert classify(patched, found, patched, 1, patch.config_digest(Config()), "note").state == State.PATCHED
    assert apply.finding(target, SOURCE, "greet.js") == "greet has no note"


def test_a_new_kind_composes_with_a_shipped_one_on_one_file(monkeypatch, tmp_path):
    monkeypatch.setitem(kinds.KINDS, CommentKind.name, CommentKind())
    note = definition.load("note", write_patch(tmp_path, "note", NOTE_PATCH.replace('"greet"', '"other"')))
    wrapper = definition.load(
        "wrapper",
        write_patch(
            tmp_path,
            "wrapper",
            'payload = "payload.js"\nedits = ["wrap"]\n[[targets]]\nrole = "greeting"\nfunction = "greet"\n'
            'required = true\nwrap = "__w({expr})"\n',
            {"payload.js": "function __w(x) { return x; }\n"},  # (no settings: no config slot)
        ),
    )
    steps = [apply.Step(wrapper, wrapper.targets[0], Config()), apply.Step(note, note.targets[0], Config())]
    both, results = apply.compose(SOURCE, steps, "greet.js")
    assert results == {"wrapper": "applied", "note": "applied"}
    assert b"return __w(`hello ${name}`);" in both and b"function other() {/*note: noted*/" in both
    assert reverse.recover(both, note, {"wrapper": wrapper}).base == SOURCE


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ('edits = ["wrap"]\n', "", "names no edit kinds"),
        ('edits = ["wrap"]\n', 'edits = ["wrap", "rename"]\n', "unknown edit kind 'rename'"),
        (
            'wrap = "__senpiGuardDedupe({expr})"\n',
            'wrap = "__senpiGuardDedupe({expr})"\nkeep = "x"\n',
            "unknown key 'keep'",
        ),
        (
            'function = "buildPromptBlocks"\n',
            'function = "buildPromptBlocks"\nedit = "remove-duplicate-property"\n',
            "not one the patch names",
        ),
        ('wrap = "__senpiGuardDedupe({expr})"\n', 'wrap = "__senpiGuardDedupe"\n', "has no {expr}"),
    ],
)
def test_a_target_is_checked_against_the_kinds_its_patch_names(tmp_path, old, new, says):
    shipped = definition.load("directive-dedupe")
    folder = tmp_path / shipped.name
    shutil.copytree(shipped.root, folder)
    toml = folder / "patch.toml"
    assert old in toml.read_text()
    toml.write_text(toml.read_text().replace(old, new, 1))
    with pytest.raises(FatalError, match=re.escape(says)) as caught:
        definition.load(shipped.name, folder)
    assert "\n" not in str(caught.value) and str(folder) in str(caught.value)


def test_the_engine_names_no_edit_kind():
    """Only the kinds' own modules (and their helper, properties.py) say a kind's name or its keys."""
    for path in sorted(ENGINE.glob("*.py")):
        if path.name == "properties.py":
            continue
        text = path.read_text()
        for name in kinds.KINDS:
            assert f'"{name}"' not in text, f"{path.name} names the kind {name}"
        assert ".spec." not in text, f"{path.name} reads a kind's own fields"
