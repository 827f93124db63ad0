"""The Ansible module (integrations/ansible) run by the real `ansible-playbook` against localhost, on a
real senpi build: check mode writes nothing and says it would change, the first run changes, the
second changes nothing, `state: absent` restores every byte, and a failure is senpi-guard's one line."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import HANG_S, tree_digest
from realsenpi import REPO

pytestmark = pytest.mark.real

MODULE_FQCN = "senpi_guard.fleet.senpi_guard"
EXTENSION = "senpi-guard-directive-dedupe.js"


@pytest.fixture
def playbook(tmp_path, isolated_dirs):
    """Run one task of the module (its arguments as a dict) with the real ansible-playbook, locally;
    returns (the json callback's task result, its stats for localhost)."""
    if shutil.which("ansible-playbook", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("ansible-playbook is not in the venv (ansible-core is a test dependency)")
    collections = tmp_path / "collections" / "ansible_collections" / "senpi_guard"
    collections.mkdir(parents=True)
    (collections / "fleet").symlink_to(REPO / "integrations" / "ansible")
    exe = Path(sys.executable).parent / "senpi-guard"

    def play(args: dict, *flags: str) -> tuple[dict, dict]:
        book, tree = tmp_path / "play.yml", tmp_path / "tree"
        shutil.rmtree(tree, ignore_errors=True)
        task = {MODULE_FQCN: {"executable": str(exe), **args}}
        book.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": [task]}]))
        env = {
            **os.environ,
            "ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"),
            "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.tree",  # (the task's result, as JSON, in `tree`)
            "ANSIBLE_CALLBACK_TREE_DIR": str(tree),
            "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
            "ANSIBLE_NOCOLOR": "1",
        }
        argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local"]
        argv += ["-e", f"ansible_python_interpreter={sys.executable}", *flags, str(book)]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=HANG_S)
        recap = re.search(r"^localhost\s+:\s+(.*)$", done.stdout, re.MULTILINE)
        assert recap, f"no recap (exit {done.returncode}): {done.stdout[-2000:]} {done.stderr[-2000:]}"
        print(recap.group(0))
        stats = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", recap.group(1))}
        result = json.loads((tree / "localhost").read_text())
        return {**result, "stdout": done.stdout}, stats

    return play


def test_present_is_apply_check_mode_writes_nothing_and_absent_restores_every_byte(dist_only, playbook, isolated_dirs):
    package = dist_only("2026.8.9")
    pristine = tree_digest(package)
    extension = isolated_dirs / "agent" / "extensions" / EXTENSION
    root = {"root": str(package)}

    result, stats = playbook(root, "--check", "--diff")
    assert stats["changed"] == 1 and stats["failed"] == 0, result
    assert tree_digest(package) == pristine and not extension.exists()  # check mode wrote nothing
    shown = result["stdout"]  # (Ansible shows a task's diff, and takes it out of the result)
    assert "+++" in shown and "prompt-bridge.js" in shown and EXTENSION in shown, shown[-3000:]

    result, stats = playbook(root)
    assert stats["changed"] == 1 and stats["failed"] == 0, result
    assert tree_digest(package) != pristine and extension.is_file()
    states = {i["patch"]: i["state"] for i in result["senpi_guard"]["installs"]}
    assert states["directive-dedupe"] == "patched", states

    result, stats = playbook(root)
    assert stats["changed"] == 0 and stats["failed"] == 0, result

    result, stats = playbook({**root, "state": "absent"}, "--check")
    assert stats["changed"] == 1 and tree_digest(package) != pristine and extension.is_file()

    result, stats = playbook({**root, "state": "absent"})
    assert stats["changed"] == 1 and stats["failed"] == 0, result
    assert tree_digest(package) == pristine and not extension.exists()
    result, stats = playbook({**root, "state": "absent"})
    assert stats["changed"] == 0, result


def test_layers_go_into_the_config_and_check_mode_leaves_it(dist_only, playbook, isolated_dirs):
    package = dist_only("2026.8.9")
    config = isolated_dirs / "xdg_config_home" / "senpi-guard" / "config.toml"
    extension = isolated_dirs / "agent" / "extensions" / EXTENSION
    args = {"root": str(package), "layers": ["dist"]}

    result, stats = playbook(args, "--check", "--diff")
    assert stats["changed"] == 1 and not config.exists() and not extension.exists(), result
    assert '+layers = ["dist"]' in result["stdout"], result["stdout"][-3000:]

    result, stats = playbook(args)
    assert stats["changed"] == 1 and 'layers = ["dist"]' in config.read_text(), result
    assert not extension.exists()  # (the extension layer is left out, as the config now says)
    _result, stats = playbook(args)
    assert stats["changed"] == 0


def test_a_failure_is_senpi_guards_one_line(playbook, tmp_path):
    not_senpi = tmp_path / "not-senpi"
    not_senpi.mkdir()
    result, stats = playbook({"root": str(not_senpi)})
    assert stats["failed"] == 1, result
    assert "\n" not in result["msg"] and str(not_senpi) in result["msg"], result["msg"]


def test_a_failed_apply_after_the_config_was_written_says_it_changed(playbook, isolated_dirs, tmp_path):
    not_senpi = tmp_path / "not-senpi"
    not_senpi.mkdir()
    config = isolated_dirs / "xdg_config_home" / "senpi-guard" / "config.toml"
    result, stats = playbook({"root": str(not_senpi), "layers": ["dist"]})
    assert stats["failed"] == 1 and str(not_senpi) in result["msg"], result
    assert tomllib.loads(config.read_text())["layers"] == ["dist"]
    assert result["changed"] is True, "the task wrote the config and said changed: false"


def test_absent_without_root_is_uninstall_and_a_second_run_changes_nothing(dist_only, playbook, isolated_dirs):
    package = dist_only("2026.8.1")
    pristine = tree_digest(package)
    extension = isolated_dirs / "agent" / "extensions" / EXTENSION
    state = isolated_dirs / "xdg_state_home" / "senpi-guard"
    _result, stats = playbook({"root": str(package)})
    assert stats["changed"] == 1 and extension.is_file() and state.is_dir()

    result, stats = playbook({"state": "absent"}, "--check")
    assert stats["changed"] == 1 and stats["failed"] == 0, result
    assert tree_digest(package) != pristine and extension.is_file() and state.is_dir()  # (check mode)

    result, stats = playbook({"state": "absent"})
    assert stats["changed"] == 1 and stats["failed"] == 0, result
    assert tree_digest(package) == pristine and not extension.exists() and not state.exists()
    result, stats = playbook({"state": "absent"})
    assert stats["changed"] == 0 and stats["failed"] == 0, result


MULTI_LINE = """\
# the layers this host keeps
layers = [
    "dist",  # the compiled files
    "extension",
]

[patches.directive-dedupe.budget]
warn_at = 0.75
"""


def test_a_multi_line_layers_array_is_replaced_whole_and_a_second_run_writes_nothing(
    dist_only, playbook, isolated_dirs
):
    package = dist_only("2026.8.9")
    config = isolated_dirs / "xdg_config_home" / "senpi-guard" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(MULTI_LINE)
    extension = isolated_dirs / "agent" / "extensions" / EXTENSION
    args = {"root": str(package), "layers": ["dist"]}

    result, stats = playbook(args)
    assert stats["changed"] == 1 and stats["failed"] == 0, result
    assert tomllib.loads(config.read_text()) == {**tomllib.loads(MULTI_LINE), "layers": ["dist"]}
    assert config.read_text().startswith('# the layers this host keeps\nlayers = ["dist"]\n\n[patches.')
    assert not extension.exists()  # (the config's new layers are what apply used)

    written = config.stat()
    result, stats = playbook(args)
    assert stats["changed"] == 0 and stats["failed"] == 0, result
    assert (config.stat().st_ino, config.stat().st_mtime_ns) == (written.st_ino, written.st_mtime_ns)


def test_a_linked_config_stays_a_link_with_its_mode_and_a_refused_edit_writes_nothing(
    dist_only, playbook, isolated_dirs, tmp_path
):
    package = dist_only("2026.8.9")
    target = tmp_path / "dotfiles" / "senpi-guard.toml"
    target.parent.mkdir()
    target.write_text('layers = ["dist", "extension"]  # (one line: the old edit handled it)\n')
    target.chmod(0o644)
    config = isolated_dirs / "xdg_config_home" / "senpi-guard" / "config.toml"
    config.parent.mkdir(parents=True)
    config.symlink_to(target)

    result, stats = playbook({"root": str(package), "layers": ["dist"]})
    assert stats["changed"] == 1 and stats["failed"] == 0, result
    assert config.is_symlink() and config.resolve() == target, "the link was replaced by a file"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert tomllib.loads(target.read_text())["layers"] == ["dist"]

    before = target.read_bytes()
    result, stats = playbook({"root": str(package), "layers": ["dist", "dist"]})  # (senpi-guard refuses it)
    assert stats["failed"] == 1 and "layers" in result["msg"] and "\n" not in result["msg"], result
    assert not result.get("changed"), result
    assert target.read_bytes() == before and config.is_symlink()
