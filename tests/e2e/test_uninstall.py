"""`senpi-guard uninstall` on a machine laid out as a user's: two installs patched with the real npm,
one shadowed on PATH by the other, a project agent dir from `apply --here`, the user service written.
Afterwards nothing senpi-guard made is left (file or folder) and every senpi byte is as before."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import HANG_S, SHAPE_REL, add_path, run_cli, tool, write_user_config
from usermanager import user_manager

from senpi_guard.io import made
from senpi_guard.io.store import Store
from senpi_guard.keep import service

NAME = "senpi-guard-directive-dedupe.js"


def everything(*roots: Path) -> dict[str, str]:
    """Every file (its bytes' digest) and folder (`dir`) under the roots: the machine as seen."""
    import hashlib

    seen = {}
    for root in roots:
        for path in [root, *root.rglob("*")]:
            if path.is_symlink():
                seen[str(path)] = "link:" + os.readlink(path)
            elif path.is_dir():
                seen[str(path)] = "dir"
            elif path.is_file():
                seen[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return seen


@pytest.fixture
def machine(env, npm_install, isolated_dirs, monkeypatch, tmp_path_factory):
    """Two patched installs (2026.8.1-shaped ones, in two prefixes, the second shadowed on PATH), a
    project whose agent dir got the extension with `apply --here`, and the service's unit written.
    Returns (the roots to compare, the state before apply, the project)."""
    monkeypatch.delenv("SENPI_CODING_AGENT_DIR")  # (senpi's default: ~/.senpi/agent, and a project's)
    first = npm_install(3, prefix=env / "prefix-a", through_npm=True)  # (the user's ~/.npm: npm was used here)
    second = npm_install(2, prefix=env / "prefix-b")
    add_path(monkeypatch, env / "prefix-a" / "bin", env / "prefix-b" / "bin")
    assert (env / "prefix-a" / "bin" / "senpi").exists() and (env / "prefix-b" / "bin" / "senpi").exists()
    project = env / "home" / "code" / "proj"
    (project / ".senpi" / "agent").mkdir(parents=True)  # (the project's own, as senpi uses it)
    roots = (env, isolated_dirs)
    before = everything(*roots)
    # a user service manager (its folder outside the roots), as on a machine where the unit is installed
    with user_manager(monkeypatch, isolated_dirs / "xdg_config_home", tmp_path_factory.mktemp("manager")):
        yield {"roots": roots, "before": before, "project": project, "installs": (first, second)}


def set_up(capsys, machine, monkeypatch) -> None:
    code, out, err = run_cli(capsys, "apply", "--json")
    rows = json.loads(out)["installs"]
    assert code == 0, out + err
    assert sorted(r["package_dir"] for r in rows if r["state"] == "patched") == sorted(map(str, machine["installs"]))
    monkeypatch.chdir(machine["project"])
    code, out, err = run_cli(capsys, "apply", "--here")
    assert code == 0, out + err
    assert (machine["project"] / ".senpi" / "agent" / "extensions" / NAME).is_file()
    code, _, err = run_cli(capsys, "daemon", "install")
    assert code == 0 and service.systemd_unit_path().is_file(), err
    stop_service()
    for pkg, shape in zip(machine["installs"], (3, 2), strict=True):
        assert b"__senpiGuardDedupe(" in (pkg / SHAPE_REL[shape]).read_bytes()


def stop_service() -> None:
    """The installed service stopped (enabled still): no watcher of its own runs during the test."""
    subprocess.run(["systemctl", "--user", "stop", service.UNIT_NAME], check=True, capture_output=True, timeout=HANG_S)
    assert Store().running_watcher() is None


def made_now(machine) -> set[str]:
    return set(everything(*machine["roots"])) - set(machine["before"])


def test_uninstall_leaves_nothing_it_made_and_every_senpi_byte_exact(capsys, machine, monkeypatch):
    set_up(capsys, machine, monkeypatch)
    recorded = {str(p) for p in made.recorded()}
    extensions = machine["project"] / ".senpi" / "agent" / "extensions"
    assert {str(extensions), str(service.systemd_unit_path().parent)} <= recorded
    shown = json.loads(run_cli(capsys, "paths", "--json")[1])
    assert shown["project_agent_dirs"] == [str(machine["project"] / ".senpi" / "agent")]
    code, out, err = run_cli(capsys, "uninstall", "--json")
    doc = json.loads(out)  # one JSON document, nothing else on stdout
    assert code == 0, out + err
    assert doc["ok"] and sorted(r["package_dir"] for r in doc["installs"] if r["changed"]) == sorted(
        map(str, machine["installs"])
    )
    assert made_now(machine) == set()
    assert everything(*machine["roots"]) == machine["before"]  # every senpi file byte-exact, nothing else left
    assert not service.systemd_unit_path().exists()


def test_a_second_uninstall_leaves_nothing_either(capsys, machine, monkeypatch):
    """Its revert holds each install again, which makes the data folder anew: that is taken away
    too (measured before: backups/*/hold.json left after a second uninstall, or an uninstall on a
    machine senpi-guard never patched)."""
    set_up(capsys, machine, monkeypatch)
    assert run_cli(capsys, "uninstall")[0] == 0
    code, out, err = run_cli(capsys, "uninstall")
    assert code == 0, out + err
    assert made_now(machine) == set() and everything(*machine["roots"]) == machine["before"]


def test_an_uninstall_stopped_after_its_state_folder_went_still_knew_the_folders_it_made(capsys, machine, monkeypatch):
    """The list of the folders senpi-guard made lives in its state folder: those that hold none of
    its own go before it, so a run stopped just after the state folder is gone has taken them away
    (measured before: ~/.senpi/agent/extensions and its parents left empty, and no later run knew
    them). Only the folders above its own state and data folders (XDG_STATE_HOME, XDG_DATA_HOME,
    when it made them) can still be left by a stop in that instant: they go after its own."""
    from senpi_guard.commands import uninstall
    from senpi_guard.io.store import Store

    set_up(capsys, machine, monkeypatch)
    state = Store().state_dir
    real_rmtree = uninstall.shutil.rmtree

    def stopped_after_state(path, *args, **kwargs):
        real_rmtree(path, *args, **kwargs)
        if Path(path) == state:
            raise KeyboardInterrupt  # (^C, or a kill, just after the state folder went)

    monkeypatch.setattr(uninstall.shutil, "rmtree", stopped_after_state)
    with contextlib.suppress(KeyboardInterrupt):
        run_cli(capsys, "uninstall")
    monkeypatch.setattr(uninstall.shutil, "rmtree", real_rmtree)
    assert run_cli(capsys, "uninstall")[0] == 0
    own = (Store().state_dir, Store().data_dir)
    left = {Path(p) for p in made_now(machine)}
    assert all(any(folder.is_relative_to(p) for folder in own) for p in left), left  # (only those above)


def test_an_extension_written_under_an_agent_dir_variable_apply_alone_had_is_taken_out(capsys, machine, monkeypatch):
    """An apply run with SENPI_CODING_AGENT_DIR set (a shell that had it, a one-off) wrote into that
    agent dir; uninstall, run without it, takes that file out too (measured before: left there, and
    senpi kept loading it from that folder)."""
    set_up(capsys, machine, monkeypatch)
    other = machine["project"].parents[1] / "other-agent"
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(other))
    assert run_cli(capsys, "apply")[0] == 0
    assert (other / "extensions" / NAME).is_file()
    monkeypatch.delenv("SENPI_CODING_AGENT_DIR")
    code, out, err = run_cli(capsys, "uninstall", "--dry-run")
    assert code == 0 and f"would remove  extension {other / 'extensions' / NAME}" in out, out + err
    code, out, err = run_cli(capsys, "uninstall")
    assert code == 0, out + err
    assert made_now(machine) == set() and everything(*machine["roots"]) == machine["before"]


def test_revert_takes_out_an_extension_written_elsewhere_unless_one_install_is_named(capsys, machine, monkeypatch):
    set_up(capsys, machine, monkeypatch)
    other = machine["project"].parents[1] / "other-agent"
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(other))
    assert run_cli(capsys, "apply")[0] == 0
    monkeypatch.delenv("SENPI_CODING_AGENT_DIR")
    written = other / "extensions" / NAME
    code, out, err = run_cli(capsys, "revert", "--root", machine["installs"][0])
    assert written.is_file(), out + err  # (one install named: the other agent dir is not its to empty)
    code, out, err = run_cli(capsys, "revert", "--json")
    assert code == 0 and not written.exists(), out + err
    assert str(written) in {row["path"] for row in json.loads(out)["extension"]}
    code, out, err = run_cli(capsys, "revert", "--json")  # (a second revert: nothing left there to say)
    assert code == 0 and str(written) not in {row["path"] for row in json.loads(out)["extension"]}, out


def test_revert_of_one_install_keeps_the_extension_another_patched_install_uses(capsys, machine, monkeypatch):
    """Both installs use ~/.senpi/agent: `revert --root` of one leaves the extension there (it is
    the other's layer too) and says why; the revert of the other, the last, takes it out (measured
    before: taken out at once, the other install left without its layer, unasked)."""
    set_up(capsys, machine, monkeypatch)
    first, second = machine["installs"]
    shared = machine["project"].parents[1] / ".senpi" / "agent" / "extensions" / NAME
    code, out, err = run_cli(capsys, "revert", "--root", first)
    assert code == 0 and shared.is_file(), out + err
    assert f"kept: senpi 2026.8.1 at {second} uses this agent dir too" in out, out
    code, out, err = run_cli(capsys, "status", "--root", second, "--json")
    assert code == 0 and json.loads(out)["installs"][0]["as_wanted"], out + err
    code, out, err = run_cli(capsys, "revert", "--root", second)
    assert code == 0 and not shared.exists(), out + err


def test_a_folder_without_write_bits_is_refused_before_anything_changes(capsys, machine, monkeypatch):
    """A dist folder of mode 0555 is the owner's "hands off", which the writer respects even as
    root: uninstall names it and changes nothing (before, as root, its plan let it through, the
    revert failed on that folder and the other install was already reverted)."""
    set_up(capsys, machine, monkeypatch)
    folder = (machine["installs"][1] / SHAPE_REL[2]).parent
    folder.chmod(0o555)
    try:
        after_setup = everything(*machine["roots"])
        code, out, err = run_cli(capsys, "uninstall")
        assert everything(*machine["roots"]) == after_setup
    finally:
        folder.chmod(0o755)
    assert code == 1 and "nothing was changed" in err and f"{folder}" in err, out + err
    assert len(err.strip().splitlines()) == 1


def test_quiet_uninstall_prints_nothing_when_everything_went(capsys, machine, monkeypatch):
    set_up(capsys, machine, monkeypatch)
    code, out, err = run_cli(capsys, "uninstall", "-q")
    assert code == 0 and out == "" and err == "", out + err
    assert made_now(machine) == set()


def test_the_folders_asking_npm_and_pnpm_made_are_taken_away(capsys, env, isolated_dirs, monkeypatch):
    """On a machine where pnpm was never used, asking it where its global folder is makes its
    global bin folder: senpi-guard's doing, recorded from a read-only `status` too (in its cache),
    and uninstall takes it away (measured before: left, as was npm's ~/.npm, now never made)."""
    add_path(monkeypatch, *{Path(tool(name)).parent for name in ("pnpm", "yarn")})
    roots = (env / "home", isolated_dirs)
    before = everything(*roots)
    assert run_cli(capsys, "status")[0] == 1  # (no senpi: but the package managers were asked)
    made_by_asking = set(everything(*roots)) - set(before)
    npm_cache, pnpm_bin = env / "home" / ".npm", isolated_dirs / "xdg_data_home" / "pnpm" / "bin"
    assert str(pnpm_bin) in made_by_asking and not npm_cache.exists(), sorted(made_by_asking)  # (npm: a scratch cache)
    assert not (isolated_dirs / "xdg_state_home" / "senpi-guard").exists()  # (status: the cache only)
    code, out, err = run_cli(capsys, "uninstall")
    assert code == 0, out + err
    assert everything(*roots) == before


def test_a_written_agent_dir_that_is_no_longer_a_folder_blocks_nothing(capsys, machine, monkeypatch):
    """An agent dir an apply wrote to is now a file of the user's: nothing of senpi-guard's can be
    there, so revert and uninstall go on and forget it (found by a hostile pass: revert failed and
    uninstall was refused for good, "move it aside")."""
    set_up(capsys, machine, monkeypatch)
    other = machine["project"].parents[1] / "other-agent"
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(other))
    assert run_cli(capsys, "apply")[0] == 0
    monkeypatch.delenv("SENPI_CODING_AGENT_DIR")
    shutil.rmtree(other)
    other.write_text("the user's own file, nothing to do with senpi\n")
    code, out, err = run_cli(capsys, "revert")
    assert code == 0 and str(other) not in out, out + err
    code, out, err = run_cli(capsys, "uninstall")
    assert code == 0, out + err
    assert other.read_text() == "the user's own file, nothing to do with senpi\n"


def test_revert_and_uninstall_take_out_the_file_a_moved_project_took_along(capsys, machine, monkeypatch):
    """`apply --here`, then the project is moved (its extension file with it, still loaded by
    senpi there): apply forgets the old place and says the file went along; uninstall run from the
    new place takes it out (found by a hostile pass: left there, "uninstalled from this machine")."""
    set_up(capsys, machine, monkeypatch)
    moved = machine["project"].with_name("proj-renamed")
    machine["project"].rename(moved)
    monkeypatch.chdir(moved.parent)
    code, out, _ = run_cli(capsys, "apply")
    assert code == 0 and "and the extension file in it with it" in out, out
    monkeypatch.chdir(moved)
    code, out, err = run_cli(capsys, "uninstall")
    assert code == 0, out + err
    assert not (moved / ".senpi" / "agent" / "extensions" / NAME).exists(), out


def test_asking_npm_makes_no_cache_folder_even_one_named_in_npmrc(capsys, env, isolated_dirs):
    """npm and yarn are asked with a scratch cache folder of the question's own: ~/.npm, or the
    cache an ~/.npmrc names, is not made (found by a hostile pass: made by status, left by
    uninstall, since only ~/.npm was guessed)."""
    cache = env / "npm-cache-from-npmrc"
    (env / "home" / ".npmrc").write_text(f"cache={cache}\n")
    before = everything(env / "home")
    assert run_cli(capsys, "status")[0] == 1
    assert not cache.exists() and everything(env / "home") == before


@pytest.mark.skipif(os.geteuid() != 0, reason="root's hands-off rule")
def test_uninstall_as_root_removes_no_folder_from_one_without_write_bits(capsys, machine, monkeypatch):
    """~/.senpi/agent made 0555 by its owner ("hands off", respected even as root): the folders
    senpi-guard made in it stay, said even with -q (found by a hostile pass: both removed)."""
    set_up(capsys, machine, monkeypatch)
    agent = machine["project"].parents[1] / ".senpi" / "agent"
    agent.chmod(0o555)
    try:
        code, out, err = run_cli(capsys, "uninstall", "-q")
        assert agent.is_dir() and (agent / "extensions").is_dir(), out + err
    finally:
        agent.chmod(0o755)
    assert code == 0 and f"left      {agent / 'extensions'} ({agent} has no write bits" in out, out
    assert not (agent / "extensions" / NAME).exists()


def test_dry_run_changes_nothing_and_says_what_it_would_do(capsys, machine, monkeypatch):
    set_up(capsys, machine, monkeypatch)
    after_setup = everything(*machine["roots"])
    code, out, err = run_cli(capsys, "uninstall", "--dry-run")
    assert code == 0, err
    assert everything(*machine["roots"]) == after_setup
    assert out.count("would revert") == 2, out
    for agent in (machine["project"], machine["project"].parents[1]):  # the project's and ~/.senpi/agent
        assert f"would remove  extension {agent / '.senpi' / 'agent' / 'extensions' / NAME}" in out, out
    assert str(service.systemd_unit_path()) in out
    code, out, _ = run_cli(capsys, "uninstall", "--dry-run", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["dry_run"] and str(service.systemd_unit_path()) in doc["would_remove"]
    assert everything(*machine["roots"]) == after_setup


def test_hand_edited_files_are_reverted_and_kept_aside_and_uninstall_keeps_them(capsys, machine, monkeypatch):
    """A patched file and the extension, both edited by hand: uninstall reverts them as revert does,
    each edit kept aside, and keeps those copies (and the one an earlier apply kept) where it names
    them; --purge then takes them too. Before, it refused a drifted install, and deleted with the
    data folder the copies apply had promised to keep ("your copy stays")."""
    set_up(capsys, machine, monkeypatch)
    first = machine["installs"][0]
    target = first / SHAPE_REL[3]
    earlier = target.read_bytes() + b"\n// an earlier fix of mine\n"
    target.write_bytes(earlier)
    code, out, err = run_cli(capsys, "apply", "--json")  # (rebuilt from the backup, the edit kept aside)
    assert code == 0, out + err
    edited = target.read_bytes() + b"\n// my own fix\n"
    target.write_bytes(edited)
    extension = machine["project"].parents[1] / ".senpi" / "agent" / "extensions" / NAME
    mine = extension.read_bytes() + b"\n// mine too\n"
    extension.write_bytes(mine)
    projects = machine["project"] / ".senpi" / "agent" / "extensions" / NAME  # (both taken out in one second)
    theirs = projects.read_bytes() + b"\n// the project's own\n"
    projects.write_bytes(theirs)
    code, out, err = run_cli(capsys, "uninstall", "--dry-run")
    assert code == 0 and "all but the hand-edited files kept in it" in out, out + err
    assert out.count("(edited by hand: your copy would be kept aside)") == 3, out
    code, out, err = run_cli(capsys, "uninstall", "--json")
    doc = json.loads(out)
    assert code == 0, out + err
    kept = {Path(p).read_bytes() for p in doc["kept"] if Path(p).is_file()}
    assert {earlier, edited, mine, theirs} <= kept, doc["kept"]
    assert b"__senpiGuardDedupe(" not in target.read_bytes() and not extension.exists() and not projects.exists()
    assert all(Path(p).is_relative_to(Store().data_dir) for p in doc["kept"]), doc["kept"]
    code, out, _ = run_cli(capsys, "uninstall")  # (a second: nothing left to do, the copies still kept)
    assert code == 0 and out.count("(a file you edited, kept aside by senpi-guard; --purge removes it)") == 4, out
    assert "the files kept above aside" in out
    left = made_now(machine)
    assert left and all(Path(p).is_relative_to(Store().data_dir.parent) for p in left), left  # (the kept files)
    code, out, _ = run_cli(capsys, "uninstall", "--purge")
    assert code == 0 and made_now(machine) == set(), (out, made_now(machine))  # (the folders above them too)


def test_purge_removes_the_config_and_without_it_the_config_is_kept(capsys, machine, monkeypatch, isolated_dirs):
    config = write_user_config(isolated_dirs, "rescan_interval = 60\n")
    set_up(capsys, machine, monkeypatch)
    code, out, err = run_cli(capsys, "uninstall")
    assert code == 0, err
    assert config.is_file() and f"kept      {config}" in out
    code, _, err = run_cli(capsys, "uninstall", "--purge")
    assert code == 0, err
    assert not config.exists() and not config.parent.exists()


def test_folders_the_user_made_stay_and_a_recorded_one_with_files_is_left_and_said(capsys, machine, monkeypatch, env):
    units = service.systemd_unit_path().parent
    units.mkdir(parents=True)  # the user's own: senpi-guard did not make it
    set_up(capsys, machine, monkeypatch)
    assert str(units) not in {str(p) for p in made.recorded()}
    agent = env / "home" / ".senpi" / "agent"
    (agent / "extensions" / "mine.js").write_text("// the user's own extension\n")  # in a folder we made
    code, out, err = run_cli(capsys, "uninstall")
    assert code == 0, err
    assert units.is_dir() and not service.systemd_unit_path().exists()
    assert (agent / "extensions" / "mine.js").is_file()
    assert f"left      {agent / 'extensions'} (not empty" in out
    assert not (agent / "extensions" / NAME).exists()


def test_mistyped_uninstall_is_suggested(capsys):
    code, _, err = run_cli(capsys, "uninstal")
    assert code == 2 and "did you mean `uninstall`?" in err


def test_help_and_bash_completion_know_uninstall(capsys):
    with pytest.raises(SystemExit) as done:
        run_cli(capsys, "uninstall", "--help")
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert "senpi-guard uninstall --dry-run" in out and "exit codes:" in out and "1 refused" in out
    assert "--purge" in out and "--json" in out
    code, script, _ = run_cli(capsys, "completion", "bash")
    assert code == 0
    top = next(line for line in script.splitlines() if line.strip().startswith('"") words='))
    assert " uninstall " in top
    (case,) = [line for line in script.splitlines() if line.strip().startswith("uninstall) words=")]
    assert all(option in case for option in ("--dry-run", "--purge", "--json"))


def test_a_bad_option_is_one_line_with_json_on_stdout(capsys):
    code, out, err = run_cli(capsys, "uninstall", "--purgee", "--json")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "uninstall --help" in err
    assert json.loads(out)["error"]
