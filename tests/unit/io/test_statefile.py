"""senpi-guard's own state files (io/statefile): one format, one set of refusals, on real files."""

from __future__ import annotations

import json
import os

import pytest

from senpi_guard.errors import FatalError
from senpi_guard.io import statefile

LISTED = statefile.Kind("things", 2, "things", list, "delete it")
WHOLE = statefile.Kind(
    "a record", 3, None, dict, "delete it", migrate=lambda doc, version: doc.update(migrated=version)
)


def test_a_missing_file_is_an_empty_body_or_what_the_caller_asks(tmp_path):
    assert statefile.load(tmp_path / "none.json", LISTED) == []
    assert statefile.load(tmp_path / "none.json", WHOLE, missing=None) is None


def test_what_is_encoded_loads_back_and_the_same_body_is_not_written_again(tmp_path):
    path = tmp_path / "things.json"
    encoded = statefile.encode(path, LISTED, ["a", "b"])
    assert json.loads(encoded) == {"version": 2, "things": ["a", "b"]}
    path.write_bytes(encoded)
    assert statefile.load(path, LISTED) == ["a", "b"]
    assert statefile.encode(path, LISTED, ["a", "b"]) is None  # (unchanged: nothing to write)
    whole = tmp_path / "record.json"
    whole.write_bytes(statefile.encode(whole, WHOLE, {"installs": {}}))
    assert statefile.load(whole, WHOLE) == {"installs": {}}  # (its version is the format's, not the body's)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{not json", "is corrupt"),
        ("[]", "is not senpi-guard's"),
        ('{"version": 2, "things": {}}', "is not senpi-guard's"),
        ('{"version": 3, "things": []}', "written by a newer senpi-guard (format 3; this one writes 2)"),
        ('{"version": true, "things": []}', "has no format senpi-guard knows"),
    ],
)
def test_a_file_it_cannot_use_is_refused_in_one_line_naming_it_and_the_fix(tmp_path, content, said):
    path = tmp_path / "things.json"
    path.write_text(content)
    with pytest.raises(FatalError) as caught:
        statefile.load(path, LISTED)
    text = str(caught.value)
    assert said in text and str(path) in text and "\n" not in text


def test_an_older_format_is_brought_up_to_date(tmp_path):
    path = tmp_path / "record.json"
    path.write_text('{"installs": {}}')  # (the first format had no version)
    assert statefile.load(path, WHOLE) == {"installs": {}, "migrated": 1}


def test_a_fifo_in_its_place_is_refused_not_waited_on(tmp_path):
    path = tmp_path / "things.json"
    os.mkfifo(path)
    with pytest.raises(FatalError, match="cannot read"):
        statefile.load(path, LISTED)


def test_a_kind_that_must_say_its_format_refuses_a_document_that_does_not(tmp_path):
    strict = statefile.Kind("folders", 1, "folders", list, "delete it", first_version=None)
    path = tmp_path / "made.json"
    path.write_text('{"folders": ["/x"]}')
    with pytest.raises(FatalError, match="has no format senpi-guard knows"):
        statefile.load(path, strict)
