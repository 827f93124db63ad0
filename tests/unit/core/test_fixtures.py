"""core/patch/fixtures.py directly, on fixture folders in tmp_path: each `*.json` of a folder is read
in name order and expanded by the format the patch names; a fixture's name is its own "name", else
its file's stem, and a file that cannot be read names nothing; a patch whose fixtures are not of its
format (or that names none, or an unknown one) is refused in one line naming the patch, the file
and what a fixture of that format is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from senpi_guard.core.patch.fixture_formats import FORMATS, context
from senpi_guard.core.patch.fixtures import check_formats, fixture_names, folder_problem, load_fixtures
from senpi_guard.errors import FatalError


def folder_of(tmp_path: Path, files: dict[str, object | bytes]) -> Path:
    folder = tmp_path / "fixtures"
    folder.mkdir(exist_ok=True)
    for name, content in files.items():
        data = content if isinstance(content, bytes) else json.dumps(content).encode()
        (folder / name).write_bytes(data)
    return folder


def test_fixtures_are_loaded_in_name_order_and_expanded(tmp_path):
    folder = folder_of(
        tmp_path,
        {
            "b-second.json": {"context": {"messages": [2]}, "checks": ["kept"], "growing": 1},
            "a-first.json": {"context": {"messages": [1]}, "name": "own name", "about": "why"},
            "notes.txt": "not a fixture",
        },
    )
    assert load_fixtures(folder, "context") == [
        {"name": "own name", "about": "why", "checks": [], "growing": False, "context": {"messages": [1]}},
        {"name": "b-second", "about": "", "checks": ["kept"], "growing": True, "context": {"messages": [2]}},
    ]


def test_an_empty_or_missing_folder_holds_no_fixtures(tmp_path):
    assert load_fixtures(folder_of(tmp_path, {}), "context") == []
    assert load_fixtures(tmp_path / "missing", "context") == []
    assert fixture_names(tmp_path / "missing") == []


def test_names_are_each_files_own_or_its_stem_and_unreadable_files_name_nothing(tmp_path):
    folder = folder_of(
        tmp_path,
        {
            "1.json": {"name": "named", "context": {}},
            "2.json": {"context": {}},
            "3.json": ["a", "list"],
            "4.json": b"{not json",
            "5.json": b"\xff\xfe",
        },
    )
    assert fixture_names(folder) == ["named", "2", "3"]


def test_a_folder_of_the_format_has_no_problem(tmp_path):
    folder = folder_of(tmp_path, {"a.json": {"context": {}}, "b.json": {"context": [], "checks": []}})
    assert folder_problem(folder, "context") is None
    check_formats("demo", "context", [folder, tmp_path / "missing"])


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ({"messages": []}, 'it has no "context"'),
        ({"context": {}, "contxt": 1}, "unknown keys contxt"),
        ({"context": {}, "checks": "one"}, '"checks" is not a list'),
        (b"{not json", "it cannot be read as JSON (Expecting property name"),
        (b"\xff\xfe{}", "it cannot be read as JSON ("),
    ],
)
def test_the_first_file_not_of_the_format_is_named_with_why_and_the_shape(tmp_path, content, why):
    folder = folder_of(tmp_path, {"a-good.json": {"context": {}}, "b-bad.json": content, "c-bad.json": [1]})
    problem = folder_problem(folder, "context")
    assert problem.startswith(f"{folder / 'b-bad.json'}: {why}")
    assert problem.endswith(f": a context fixture is {context.SHAPE}") and "\n" not in problem
    with pytest.raises(FatalError) as caught:
        check_formats("demo", "context", [folder])
    assert str(caught.value) == f"patch demo: the fixture {problem}; fix or remove it"


def test_fixtures_without_a_named_format_are_refused_and_none_need_none(tmp_path):
    check_formats("demo", "", [tmp_path / "missing", folder_of(tmp_path, {"notes.txt": "x"})])
    folder = folder_of(tmp_path, {"a.json": {"context": {}}})
    with pytest.raises(FatalError) as caught:
        check_formats("demo", "", [folder])
    known = ", ".join(sorted(FORMATS))
    assert str(caught.value) == (
        f"patch demo: {folder} holds fixtures but patch.toml names no fixtures_format (one of: {known}); add it"
    )


def test_an_unknown_format_is_refused_by_name(tmp_path):
    with pytest.raises(FatalError, match=r"patch demo: fixtures_format = 'ctx' is not a fixture format \(known: "):
        check_formats("demo", "ctx", [])
