"""The text format and the textfile write, read back with prometheus_client's own parser."""

from __future__ import annotations

import stat
import threading

import pytest
from prometheus_client.parser import text_string_to_metric_families

from senpi_guard.errors import FatalError
from senpi_guard.io import prometheus
from senpi_guard.io.prometheus import Family


def parsed(text: str) -> dict[str, list]:
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def test_labels_and_help_are_escaped_and_read_back_as_written():
    odd = 'a "quoted" path\\with a backslash\nand a newline'
    family = Family("senpi_guard_x_bytes", "help with a \\ and a\nnewline")
    family.add(12, install=odd, state="patched")
    family.add(0.25, install="plain", state="")
    text = prometheus.render([family])
    assert text.count("\n") == 4  # HELP, TYPE, two samples: the newlines were escaped
    (read,) = text_string_to_metric_families(text)
    assert read.type == "gauge" and read.documentation == "help with a \\ and a\nnewline"
    assert [(s.labels, s.value) for s in read.samples] == [
        ({"install": odd, "state": "patched"}, 12.0),
        ({"install": "plain", "state": ""}, 0.25),
    ]


def test_a_family_without_samples_keeps_its_help_and_type():
    text = prometheus.render([Family("senpi_guard_empty", "nothing yet"), Family("senpi_guard_one", "one")])
    assert text.splitlines()[:2] == ["# HELP senpi_guard_empty nothing yet", "# TYPE senpi_guard_empty gauge"]
    assert parsed(text) == {"senpi_guard_empty": [], "senpi_guard_one": []}


def families(n: int, value: float) -> list[Family]:
    big = Family("senpi_guard_mine", "mine")
    for i in range(n):
        big.add(value, install=f"/some/install/{i}")
    return [big]


def test_the_file_is_written_0644_with_no_temp_left_and_replaces_what_was_there(tmp_path):
    target = tmp_path / prometheus.FILE_NAME
    target.write_text("half a line with no end")
    target.chmod(0o600)
    assert prometheus.write_textfile(tmp_path, families(3, 1), frozenset()) == target
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == [prometheus.FILE_NAME]
    assert [s.value for s in parsed(target.read_text())["senpi_guard_mine"]] == [1, 1, 1]


def test_each_command_keeps_the_other_commands_families(tmp_path):
    theirs = Family("senpi_guard_theirs", "theirs")
    theirs.add(7)
    prometheus.write_textfile(tmp_path, [theirs], frozenset({"senpi_guard_mine"}))
    prometheus.write_textfile(tmp_path, families(2, 5), frozenset({"senpi_guard_theirs"}))
    prometheus.write_textfile(tmp_path, families(1, 6), frozenset({"senpi_guard_theirs"}))
    found = parsed((tmp_path / prometheus.FILE_NAME).read_text())
    assert [s.value for s in found["senpi_guard_theirs"]] == [7]
    assert [s.value for s in found["senpi_guard_mine"]] == [6]  # replaced, not added to
    theirs.samples[0] = ({}, 8)
    prometheus.write_textfile(tmp_path, [theirs], frozenset())  # (one that keeps nothing)
    assert set(parsed((tmp_path / prometheus.FILE_NAME).read_text())) == {"senpi_guard_theirs"}


def test_a_reader_never_sees_a_partial_file(tmp_path):
    """node_exporter may read at any moment: every read while the file is rewritten is whole."""
    target = tmp_path / prometheus.FILE_NAME
    prometheus.write_textfile(tmp_path, families(2000, 0), frozenset())
    expected = len(target.read_text())
    seen: dict[str, int] = {}  # each text read, and how often
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            text = target.read_text()
            seen[text] = seen.get(text, 0) + 1

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(1, 40):
            prometheus.write_textfile(tmp_path, families(2000, i % 10), frozenset())
    finally:
        stop.set()
        reader.join()
    assert sum(seen.values()) > 10
    for text in seen:  # (at most ten texts: the values cycle)
        assert len(text) == expected and text.endswith("\n")
        assert len(parsed(text)["senpi_guard_mine"]) == 2000
    assert [p.name for p in tmp_path.iterdir()] == [prometheus.FILE_NAME]


@pytest.mark.parametrize("bad", ["missing", "a-file"])
def test_a_bad_folder_is_one_line_and_nothing_is_written(tmp_path, bad):
    folder = tmp_path / bad
    if bad == "a-file":
        folder.write_text("x")
    with pytest.raises(FatalError) as caught:
        prometheus.write_textfile(folder, families(1, 1), frozenset())
    message = str(caught.value)
    assert "\n" not in message and str(folder) in message
    assert ("does not exist; create it" if bad == "missing" else "is not a folder; pass the folder") in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if bad == "missing" else ["a-file"])
