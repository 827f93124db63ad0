"""The watcher's policy for the extension layer, round after round, in-process on a sample package
and a real agent dir: a held agent dir, an edited or foreign file, an unsafe agent dir, a config
change that would reshape sent messages, an agent dir a failed re-proof emptied and an install
whose agent dir cannot be told are each reported once and left alone (again once they come back
after going); a failed replay is not tried again; an installed extension whose loader changed is
handed over for its re-proof; an absent one is proven and written (one real replay)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from senpi_guard.core.patch.definition import Patch, load_all
from senpi_guard.core.states import State
from senpi_guard.demo import sample
from senpi_guard.discover import Install
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import extension, extension_reprove
from senpi_guard.layers.extension_keep import Keeping, keep_all
from senpi_guard.layers.extension_state import LayerOutcome
from senpi_guard.layers.findings import Reason


@pytest.fixture
def world(tmp_path, isolated_dirs, monkeypatch) -> tuple[Install, Path]:
    """A sample senpi (2026.8.5: upstream's own dedupe is there) and the agent dir it uses."""
    monkeypatch.chdir(tmp_path)
    sample.write_sample_package(tmp_path / "senpi", 3, fillers=3)
    return Install(tmp_path / "senpi", sample.SHAPE_VERSIONS[3], "npm"), isolated_dirs / "agent"


def keep(
    patch: Patch,
    store: Store,
    installs: list[Install],
    keeping: Keeping,
    config: Config | None = None,
    cancel: threading.Event | None = None,
) -> list[LayerOutcome]:
    """One watcher round of the patch's extension layer (the installs' targets as status finds them)."""
    present = {i.package_dir: {"prompt", "upstream"} for i in installs}
    return keep_all(patch, config or Config(), store, installs, present, keeping, cancel or threading.Event())


def put(patch: Patch, agent_dir: Path, text: str | None = None, config: Config | None = None) -> Path:
    path = extension.target_path(patch, agent_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(patch.render_extension(config or Config()) if text is None else text)
    return path


def test_a_patch_without_an_extension_layer_has_nothing_to_keep(store, world):
    install, agent = world
    (other,) = [p for p in load_all() if p.extension is None]
    assert keep(other, store, [install], Keeping()) == []
    assert not agent.exists()


def test_a_held_agent_dir_is_reported_once_and_left_alone(patch, store, world):
    install, agent = world
    store.set_hold(agent, "extension removed by `senpi-guard revert`")
    keeping = Keeping()
    (held,) = keep(patch, store, [install], keeping)
    assert held.standing and not held.ok and held.after == State.HELD and held.path == agent
    assert held.detail == "held by `senpi-guard revert`; left alone until `senpi-guard apply`"
    assert held.installs == [install]
    assert keep(patch, store, [install], keeping) == []  # (said once)
    assert not extension.target_path(patch, agent).exists()


@pytest.mark.parametrize("state", [State.MODIFIED, State.FOREIGN])
def test_an_edited_or_foreign_file_is_reported_once_left_alone_and_reported_again_when_it_comes_back(
    patch, store, world, state
):
    install, agent = world
    mine = patch.render_extension(Config())
    text = mine + "// my own line\n" if state == State.MODIFIED else "// the user's own extension\n"
    path = put(patch, agent, text)
    keeping = Keeping()
    (found,) = keep(patch, store, [install], keeping)
    assert found.standing and not found.ok and found.after == state and found.path == path
    assert found.detail.startswith(f"{state} (") and found.detail.endswith("run `senpi-guard apply`")
    assert keep(patch, store, [install], keeping) == []
    assert path.read_text() == text  # (never changed by the watcher)
    put(patch, agent)  # (the user puts senpi-guard's own file back)
    assert keep(patch, store, [install], keeping) == []
    put(patch, agent, text)
    assert [o.after for o in keep(patch, store, [install], keeping)] == [state]  # (it came back: said again)


def test_an_agent_dir_where_the_extension_alone_is_unsafe_is_reported_once_and_not_written(patch, store, world):
    install, agent = world
    keeping, alone = Keeping(), Config(layers=("extension",))
    (unsafe,) = keep(patch, store, [install], keeping, alone)
    assert unsafe.standing and not unsafe.ok and unsafe.path == agent
    assert unsafe.detail.startswith(f"not installed: senpi {install.version} uses this agent dir")
    assert keep(patch, store, [install], keeping, alone) == []
    assert not extension.target_path(patch, agent).exists()


def test_a_config_change_that_reshapes_sent_messages_is_left_to_apply(patch, store, world):
    install, agent = world
    earlier = Config().with_patch(patch.name, tags=["my-own-tag"])
    path = put(patch, agent, config=earlier)
    keeping = Keeping()
    (left,) = keep(patch, store, [install], keeping)
    assert left.standing and not left.ok and left.after == State.STALE and left.reason == Reason.RESHAPE_LEFT
    assert left.detail.startswith("left as it is: ") and left.detail.endswith(
        "run `senpi-guard apply` to make that change"
    )
    assert keep(patch, store, [install], keeping) == []
    assert path.read_text() == patch.render_extension(earlier)


def test_an_agent_dir_a_failed_reproof_emptied_is_left_alone_until_apply(patch, store, world):
    install, agent = world
    job = extension_reprove.Reproof(patch, Config(), agent, [install], ())
    extension_reprove.record(store, job, "its proof through senpi's new loader failed")
    keeping = Keeping()
    (out,) = keep(patch, store, [install], keeping)
    assert out.standing and not out.ok and out.after == State.ABSENT
    assert out.detail == "its proof through senpi's new loader failed; left alone until `senpi-guard apply`"
    assert keep(patch, store, [install], keeping) == []
    assert not extension.target_path(patch, agent).exists()


def test_an_install_whose_agent_dir_cannot_be_told_is_reported_once(patch, store, world, tmp_path):
    install, agent = world
    (tmp_path / "broken" / "dist").mkdir(parents=True)
    odd = Install(tmp_path / "broken", "2026.8.5", "npm")
    keeping = Keeping()
    put(patch, agent)  # (the other install's agent dir is as wanted: nothing to say there)
    (error,) = keep(patch, store, [install, odd], keeping)
    assert error.standing and not error.ok and error.installs == [odd] and "dist/config.js" in error.detail
    assert keep(patch, store, [install, odd], keeping) == []


def test_an_installed_extension_is_handed_over_for_its_reproof_when_its_loader_stamp_is_new(patch, store, world):
    install, agent = world
    path = put(patch, agent)
    keeping = Keeping()
    assert keep(patch, store, [install], keeping) == []
    (job,) = keeping.reproofs
    assert (job.agent_dir, job.installs, job.key) == (agent, [install], (patch.name, str(agent)))
    keeping.reproofs.clear()
    keeping.stamps[job.key] = job.stamp  # (the watcher re-proved it on that stamp)
    assert keep(patch, store, [install], keeping) == [] and keeping.reproofs == []
    (install.package_dir / "package.json").write_text((install.package_dir / "package.json").read_text() + "\n")
    assert keep(patch, store, [install], keeping) == []
    assert [j.agent_dir for j in keeping.reproofs] == [agent]  # (an update: due again)
    assert path.read_text() == patch.render_extension(Config())


def test_a_failed_replay_is_not_tried_again_for_the_same_patch_config_and_agent_dir(
    patch, store, world, tmp_path, monkeypatch
):
    install, agent = world
    monkeypatch.setenv("SENPI_GUARD_NODE", str(tmp_path / "no-node"))  # (the replay cannot run)
    keeping = Keeping()
    (failed,) = keep(patch, store, [install], keeping)
    assert not failed.ok and not failed.standing and not failed.passing and "cannot run node" in failed.detail
    assert keeping.failed == {(patch.patch_id(Config()), str(agent))}
    monkeypatch.delenv("SENPI_GUARD_NODE")
    assert keep(patch, store, [install], keeping) == []  # (not tried again, even with a node now)
    assert not extension.target_path(patch, agent).exists()


def test_an_agent_dir_being_reproven_is_skipped_and_what_stood_there_is_not_forgotten(patch, store, world):
    install, agent = world
    put(patch, agent, "// the user's own extension\n")
    keeping = Keeping()
    assert [o.after for o in keep(patch, store, [install], keeping)] == [State.FOREIGN]
    keeping.proving.add((patch.name, str(agent)))
    assert keep(patch, store, [install], keeping) == []
    keeping.proving.clear()
    assert keep(patch, store, [install], keeping) == []  # (still known: not said again)


def test_a_round_cut_short_does_nothing_and_forgets_nothing(patch, store, world):
    install, agent = world
    put(patch, agent, "// the user's own extension\n")
    keeping = Keeping()
    keep(patch, store, [install], keeping)
    stop = threading.Event()
    stop.set()
    assert keep(patch, store, [install], keeping, cancel=stop) == []
    assert keep(patch, store, [install], keeping) == []


def test_an_agent_dir_it_cannot_read_is_an_error_each_round_and_forgets_nothing(patch, store, world):
    install, agent = world
    path = put(patch, agent, "// the user's own extension\n")
    keeping = Keeping()
    keep(patch, store, [install], keeping)
    path.unlink()
    path.parent.rmdir()
    path.parent.write_text("not a folder")  # (extensions/ is a file: nothing in it can be read)
    for _ in range(2):
        (error,) = keep(patch, store, [install], keeping)
        assert not error.ok and not error.standing and error.after == State.ERROR and error.installs == [install]
    path.parent.unlink()
    put(patch, agent, "// the user's own extension\n")
    assert keep(patch, store, [install], keeping) == []  # (what stood before the errors is still known)


def test_without_installs_this_patchs_standing_problems_are_forgotten(patch, store, world):
    install, agent = world
    put(patch, agent, "// the user's own extension\n")
    keeping = Keeping()
    keep(patch, store, [install], keeping)
    others = ("another-patch", "held", "/elsewhere")
    keeping.noted.add(others)
    assert keep(patch, store, [], keeping) == []
    assert keeping.noted == {others}
    assert [o.after for o in keep(patch, store, [install], keeping)] == [State.FOREIGN]


def test_an_absent_extension_is_proven_written_and_its_loader_stamp_remembered(patch, store, world):
    install, agent = world
    keeping = Keeping()
    (done,) = keep(patch, store, [install], keeping)
    assert done.ok and (done.before, done.after) == (State.ABSENT, State.INSTALLED)
    assert done.report is not None and done.report.ok
    assert extension.target_path(patch, agent).read_text() == patch.render_extension(Config())
    assert (patch.name, str(agent)) in keeping.stamps
    assert keep(patch, store, [install], keeping) == [] and keeping.reproofs == []  # (just proven on it)
