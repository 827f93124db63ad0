"""What revert and uninstall do to the extension in each agent dir, in-process on a sample package
and real agent dirs: senpi-guard's file taken out (an edited one kept aside first) and the agent
dir held, a file not ours left alone, an agent dir an earlier apply wrote to taken care of even
when no install uses it now, one an install this revert leaves alone still uses kept, and the
plan (`removal`) saying the same while it changes nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from senpi_guard.core.patch.definition import Patch
from senpi_guard.core.states import State
from senpi_guard.demo import sample
from senpi_guard.discover import Install
from senpi_guard.io.config import Config
from senpi_guard.layers import extension
from senpi_guard.layers.change import Hold, Want
from senpi_guard.layers.extension_removal import removal, remove_all


def make_install(where: Path) -> Install:
    sample.write_sample_package(where, 3, fillers=3)
    return Install(where, sample.SHAPE_VERSIONS[3], "npm")


@pytest.fixture
def world(tmp_path, isolated_dirs, monkeypatch) -> tuple[Install, Path]:
    """A sample senpi and the agent dir it uses (SENPI_CODING_AGENT_DIR, set by isolated_dirs)."""
    monkeypatch.chdir(tmp_path)
    return make_install(tmp_path / "senpi"), isolated_dirs / "agent"


def put(patch: Patch, agent_dir: Path, text: str | None = None) -> Path:
    """senpi-guard's extension file in the agent dir, as apply renders it (or `text` in its place)."""
    path = extension.target_path(patch, agent_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(patch.render_extension(Config()) if text is None else text)
    return path


def edit(path: Path) -> str:
    text = path.read_text() + "// my own line\n"
    path.write_text(text)
    return text


def test_revert_takes_its_file_out_of_the_installs_agent_dir_and_holds_that_dir(patch, store, world):
    install, agent = world
    path = put(patch, agent)
    rendered = path.read_text()
    (planned,) = removal(patch, Config(), store, [install])
    assert (planned.where, planned.found, planned.want, planned.hold) == (path, State.INSTALLED, Want.REMOVE, Hold.SET)
    assert planned.writes and not planned.keep_aside and planned.installs == (install.package_dir,)
    assert path.read_text() == rendered and store.hold(agent) is None  # (the plan only reads)
    (done,) = remove_all(patch, Config(), store, [install])
    assert (done.before, done.after, done.ok) == (State.INSTALLED, State.ABSENT, True)
    assert not path.exists()
    assert "revert" in store.hold(agent)["reason"]  # (the watcher leaves it alone until apply)


def test_an_edited_file_is_kept_aside_in_the_data_folder_before_it_goes(patch, store, world):
    install, agent = world
    text = edit(put(patch, agent))
    (planned,) = removal(patch, Config(), store, [install])
    assert planned.found == State.MODIFIED and planned.want == Want.REMOVE and planned.keep_aside
    (done,) = remove_all(patch, Config(), store, [install])
    assert done.ok and done.after == State.ABSENT and "kept at" in done.detail
    (kept,) = done.kept
    assert Path(kept).read_text() == text and store.data_dir in Path(kept).parents
    assert not extension.target_path(patch, agent).exists()


def test_a_file_of_that_name_that_is_not_ours_is_left_as_it_is(patch, store, world):
    install, agent = world
    path = put(patch, agent, "// the user's own extension\n")
    (planned,) = removal(patch, Config(), store, [install])
    assert planned.found == State.FOREIGN and not planned.writes
    (done,) = remove_all(patch, Config(), store, [install])
    assert done.ok and done.after == State.FOREIGN and "left alone" in done.detail
    assert path.read_text() == "// the user's own extension\n"


def test_an_agent_dir_an_earlier_apply_wrote_to_is_cleaned_only_when_every_install_is_reverted(patch, store, world):
    install, agent = world
    elsewhere = agent.parent / "given-to-that-apply-alone"
    path = put(patch, elsewhere)
    extension.remember_written(store, elsewhere)
    assert [c.where for c in removal(patch, Config(), store, [install])] == [extension.target_path(patch, agent), path]
    assert [o.path for o in remove_all(patch, Config(), store, [install], everywhere=False)] == [
        extension.target_path(patch, agent)
    ]
    assert path.exists() and store.hold(elsewhere) is None  # (a revert of some installs: not there)
    outcomes = remove_all(patch, Config(), store, [install])
    assert [(o.path, o.after, o.ok) for o in outcomes if o.path == path] == [(path, State.ABSENT, True)]
    assert not path.exists() and store.hold(elsewhere) is not None
    assert elsewhere not in store.agent_dirs(extension.WRITTEN)  # (forgotten: nothing of ours is left)


def test_a_written_to_agent_dir_that_is_gone_or_empty_is_forgotten_without_a_word(patch, store, world):
    install, agent = world
    gone, emptied = agent.parent / "gone", agent.parent / "emptied"
    emptied.mkdir()
    for folder in (gone, emptied):
        extension.remember_written(store, folder)
    assert [c.where.parents[1] for c in removal(patch, Config(), store, [install])] == [agent]
    outcomes = remove_all(patch, Config(), store, [install])
    assert [o.path.parents[1] for o in outcomes] == [agent]
    assert store.agent_dirs(extension.WRITTEN) == [] and store.hold(emptied) is None and not gone.exists()


def fifo_in(patch: Patch, agent_dir: Path) -> Path:
    """A FIFO where the extension file goes: senpi-guard never opens it, so the agent dir cannot be read."""
    path = extension.target_path(patch, agent_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def test_a_written_to_agent_dir_it_cannot_read_is_said_and_forgotten_not_a_failure(patch, store, world):
    install, agent = world
    other = agent.parent / "someone-elses"
    fifo_in(patch, other)
    extension.remember_written(store, other)
    planned = [c for c in removal(patch, Config(), store, [install]) if c.found == State.ERROR]
    assert [(c.where.parents[1], c.executable) for c in planned] == [(other, True)]  # (uninstall goes on)
    (said,) = [o for o in remove_all(patch, Config(), store, [install]) if o.path.parents[1] == other]
    assert said.ok and said.detail.startswith("not looked in, and forgotten: ") and "remove it by hand" in said.detail
    assert other not in store.agent_dirs(extension.WRITTEN) and store.hold(other) is None  # (not held either)


def test_the_installs_own_agent_dir_it_cannot_read_fails_the_revert(patch, store, world):
    install, agent = world
    fifo_in(patch, agent)
    (planned,) = removal(patch, Config(), store, [install])
    assert planned.found == State.ERROR and not planned.executable and "not a regular file" in planned.detail
    (done,) = remove_all(patch, Config(), store, [install])
    assert not done.ok and done.after == State.ERROR and store.hold(agent) is None


def test_an_agent_dir_an_install_left_alone_uses_too_keeps_the_extension(patch, store, world, tmp_path):
    install, agent = world
    other = make_install(tmp_path / "another-senpi")
    path = put(patch, agent)
    (kept,) = remove_all(patch, Config(), store, [install], everywhere=False, others=[other])
    assert kept.ok and kept.after == State.INSTALLED and path.exists()
    assert kept.detail.startswith(f"kept: senpi {other.version} at {other.package_dir} uses this agent dir too")
    assert store.hold(agent) is None
    path.unlink()
    (absent,) = remove_all(patch, Config(), store, [install], everywhere=False, others=[other])
    assert absent.ok and absent.detail == "not installed"
    fifo_in(patch, agent)
    (unread,) = remove_all(patch, Config(), store, [install], everywhere=False, others=[other])
    assert not unread.ok and unread.after == State.ERROR and "not a regular file" in unread.detail


def test_a_remembered_apply_here_agent_dir_is_cleaned_held_and_forgotten(patch, store, world, tmp_path):
    install, _agent = world
    project = tmp_path / "project" / ".senpi" / "agent"
    path = put(patch, project)
    store.remember_agent_dir(project)
    planned = removal(patch, Config(), store, [install])
    assert [(c.where, c.want) for c in planned if c.where == path] == [(path, Want.REMOVE)]
    outcomes = remove_all(patch, Config(), store, [install])
    assert [(o.after, o.ok) for o in outcomes if o.path == path] == [(State.ABSENT, True)]
    assert not path.exists() and store.hold(project) is not None and store.agent_dirs() == []


def test_the_agent_dir_senpi_uses_from_here_is_cleaned_only_when_senpi_guards_file_is_there(
    patch, store, tmp_path, monkeypatch, isolated_dirs
):
    home = tmp_path / "home"
    project = home / "work" / ".senpi" / "agent"
    project.mkdir(parents=True)
    monkeypatch.delenv("SENPI_CODING_AGENT_DIR")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project.parents[1])
    install = make_install(tmp_path / "senpi")
    user = home / ".senpi" / "agent"
    path = put(patch, project, "// the project's own extension of that name\n")
    assert [c.where.parents[1] for c in removal(patch, Config(), store, [install])] == [user]
    path.unlink()
    fifo_in(patch, project)  # (one it cannot read blocks no revert)
    assert [c.where.parents[1] for c in removal(patch, Config(), store, [install])] == [user]
    path.unlink()
    put(patch, project)  # (a project moved here since `apply --here`, its file with it)
    assert [c.where.parents[1] for c in removal(patch, Config(), store, [install])] == [user, project]
    outcomes = remove_all(patch, Config(), store, [install])
    assert [(o.path, o.after) for o in outcomes] == [
        (extension.target_path(patch, user), State.ABSENT),
        (path, State.ABSENT),
    ]
    assert not path.exists()


def test_the_remembered_agent_dir_senpi_uses_from_here_is_cleaned_and_forgotten(
    patch, store, tmp_path, monkeypatch, isolated_dirs
):
    home = tmp_path / "home"
    project = home / "work" / ".senpi" / "agent"
    monkeypatch.delenv("SENPI_CODING_AGENT_DIR")
    monkeypatch.setenv("HOME", str(home))
    install = make_install(tmp_path / "senpi")
    path = put(patch, project)
    monkeypatch.chdir(project.parents[1])
    store.remember_agent_dir(project)
    outcomes = remove_all(patch, Config(), store, [install])
    assert [(o.path, o.after, o.ok) for o in outcomes if o.path == path] == [(path, State.ABSENT, True)]
    assert store.agent_dirs() == [] and store.hold(project) is not None


def test_an_install_whose_agent_dir_cannot_be_told_is_said_and_blocks_uninstall(patch, store, world, tmp_path):
    install, _agent = world
    broken = tmp_path / "broken"
    (broken / "dist").mkdir(parents=True)
    odd = Install(broken, "2026.8.5", "npm")
    errors = [c for c in removal(patch, Config(), store, [install, odd]) if c.found == State.ERROR]
    assert [c.executable for c in errors] == [False] and "dist/config.js" in errors[0].detail
    failed = [o for o in remove_all(patch, Config(), store, [install, odd]) if not o.ok]
    assert [o.installs for o in failed] == [[odd]]


def test_an_extensions_folder_with_no_write_bits_is_planned_as_a_step_for_the_user(patch, store, world):
    install, agent = world
    path = put(patch, agent)
    path.parent.chmod(0o555)
    try:
        (planned,) = removal(patch, Config(), store, [install])
    finally:
        path.parent.chmod(0o755)
    assert planned.want == Want.REMOVE and not planned.executable
    assert planned.detail == f"{path.parent} has no write bits (mode 0555): chmod u+w {path.parent}, then retry"
