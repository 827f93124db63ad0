"""The Ansible module's config edit (integrations/ansible), its functions called directly: `layers`
is set by replacing the whole top-level `layers = ...` statement, however many lines it spans, the
result is checked with tomllib (the old table with only `layers` changed) before anything is
written, and the write keeps a link a link and the file's mode and owner."""

from __future__ import annotations

import importlib.util
import os
import re
import stat
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

MODULE_FILE = (
    Path(__file__).resolve().parents[2] / "integrations" / "ansible" / "plugins" / "modules" / "senpi_guard.py"
)


def _load():
    spec = importlib.util.spec_from_file_location("senpi_guard_ansible_module", MODULE_FILE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ansible_module = _load()
with_layers = ansible_module.with_layers

MULTI_LINE = """\
# senpi-guard's settings
verify_timeout = 90

layers = [
    "dist",  # the compiled files
    # the extension, commented out for now:
    # "extension",
    "extension",
]  # both

on_drift = "report"

[patches.directive-dedupe]
tags = [
    "system-reminder",
]
"""


def edited(text: str, layers: list[str]) -> str:
    """The edit, checked: the result parses to the old table with only `layers` changed."""
    result = with_layers(text, layers)
    assert tomllib.loads(result) == {**tomllib.loads(text), "layers": layers}, result
    return result


def test_a_multi_line_array_with_comments_and_a_trailing_comma_is_replaced_whole():
    result = edited(MULTI_LINE, ["dist"])
    head, _, tail = MULTI_LINE.partition("layers = [")
    assert result == head + 'layers = ["dist"]\n' + tail.split("]  # both\n", 1)[1]


def test_a_config_without_layers_gets_them_first_and_keeps_every_other_byte():
    text = 'on_drift = "rebuild"\n\n[patches.directive-dedupe]\nlayers_note = 1\n'
    assert edited(text, ["extension"]) == 'layers = ["extension"]\n' + text
    assert edited("", ["dist", "extension"]) == 'layers = ["dist", "extension"]\n'


def test_layers_inside_a_table_is_not_the_top_level_key_and_stays():
    text = 'on_drift = "report"\n[patches.directive-dedupe]\nlayers = [\n  "x",\n]\n'
    result = edited(text, ["dist"])
    assert result == 'layers = ["dist"]\n' + text
    assert tomllib.loads(result)["patches"]["directive-dedupe"]["layers"] == ["x"]


def test_a_multi_line_string_that_looks_like_a_table_or_a_layers_line_is_text_not_toml():
    text = 'note = """\n[not a table]\nlayers = ["nope"]\n"""\nlayers = ["dist"]\n'
    result = edited(text, ["extension"])
    assert result == text.replace('layers = ["dist"]', 'layers = ["extension"]')


def test_a_quoted_key_and_windows_line_ends_are_kept():
    text = 'a = 1\r\n"layers" = [\r\n  "dist",\r\n]\r\nb = 2\r\n'
    assert edited(text, ["extension"]) == 'a = 1\r\nlayers = ["extension"]\r\nb = 2\r\n'


def test_a_file_that_is_not_toml_or_whose_layers_cannot_be_found_is_refused():
    with pytest.raises(ValueError, match="not valid TOML"):
        with_layers('layers = ["dist"\n', ["extension"])  # (the array never closes)
    with pytest.raises(ValueError, match=re.escape("no top-level `layers = ...` statement")):
        with_layers("[layers]\ndist = true\n", ["extension"])  # (a table: no `layers = ...` to replace)


def test_nan_elsewhere_does_not_stop_the_check():
    text = "layers = ['dist']\nverify_timeout = nan\n"
    assert with_layers(text, ["extension"]) == 'layers = ["extension"]\nverify_timeout = nan\n'


def test_the_write_goes_through_a_link_and_keeps_the_files_mode_and_owner(tmp_path):
    elsewhere = tmp_path / "dotfiles"
    elsewhere.mkdir()
    target = elsewhere / "senpi-guard.toml"
    target.write_text('layers = ["dist"]\n')
    target.chmod(0o640)
    if os.geteuid() == 0:
        os.chown(target, 65534, 65534)
    config = tmp_path / "config" / "config.toml"
    config.parent.mkdir()
    config.symlink_to(target)
    before = target.stat()

    ansible_module.write_atomically(str(config), 'layers = ["extension"]\n')

    assert config.is_symlink() and config.resolve() == target
    assert target.read_text() == 'layers = ["extension"]\n'
    after = target.stat()
    assert (stat.S_IMODE(after.st_mode), after.st_uid, after.st_gid) == (0o640, before.st_uid, before.st_gid)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["senpi-guard.toml"]  # no temp file left


def test_a_link_to_nothing_is_refused_and_left(tmp_path):
    config = tmp_path / "config.toml"
    config.symlink_to(tmp_path / "gone" / "config.toml")
    with pytest.raises(OSError, match="does not exist"):
        ansible_module.write_atomically(str(config), 'layers = ["dist"]\n')
    assert config.is_symlink() and not (tmp_path / "gone").exists()


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder every user may enter (pytest's own tmp_path is root's alone)."""
    with tempfile.TemporaryDirectory(prefix="senpi-guard-ansible-") as folder:
        os.chmod(folder, 0o755)
        yield Path(folder)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the write as another user")
def test_a_link_to_a_file_the_user_cannot_write_is_refused_and_stays_a_link(open_dir):
    """Run as nobody: the config is a link in nobody's folder to a file in a root-only folder."""
    (open_dir / "root-only").mkdir(mode=0o755)
    target = open_dir / "root-only" / "config.toml"
    target.write_text('layers = ["dist"]\n')
    (open_dir / "users").mkdir()
    os.chown(open_dir / "users", 65534, 65534)
    config = open_dir / "users" / "config.toml"
    config.symlink_to(target)
    os.lchown(config, 65534, 65534)

    read, written = os.pipe()
    child = os.fork()
    if child == 0:  # (the child reports what write_atomically did, then exits without pytest's teardown)
        os.close(read)
        try:
            os.setgid(65534)
            os.setuid(65534)
            ansible_module.write_atomically(str(config), 'layers = ["extension"]\n')
            outcome = "wrote"
        except OSError as exc:
            outcome = f"refused: {exc}"
        os.write(written, outcome.encode())
        os._exit(0)
    os.close(written)
    with os.fdopen(read, "rb") as pipe:
        outcome = pipe.read().decode()
    os.waitpid(child, 0)

    assert outcome.startswith("refused: ") and str(target) in outcome, outcome
    assert config.is_symlink() and target.read_text() == 'layers = ["dist"]\n'
    assert sorted(p.name for p in config.parent.iterdir()) == ["config.toml"]


def test_the_module_file_needs_no_toml_library_but_tomllib():
    """Managed hosts have the standard library only: the module imports no third-party TOML reader."""
    imported = {
        line.split()[1].split(".")[0]
        for line in MODULE_FILE.read_text().splitlines()
        if line.startswith(("import ", "from "))
    }
    assert imported <= {"__future__", "json", "os", "re", "stat", "tempfile", "tomllib", "ansible"}, imported
