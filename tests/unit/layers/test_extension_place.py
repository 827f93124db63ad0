"""Which agent dirs an install's extension goes to, on a sample package: the one senpi uses from
its user's home (an agent-dir variable, else ~/.senpi/agent) and the one it uses from the current
folder (a project's own, for `apply --here`); an install whose agent dir cannot be told says why.
As root, the agent dir of another user's senpi is resolved in that user's home, and one made of
that user's config outside the folders they own is refused (never root's own by accident)."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest

from senpi_guard.demo import sample
from senpi_guard.discover import Install
from senpi_guard.layers.extension_place import placement

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="resolves another user's agent dir (root only)")


@pytest.fixture
def install(tmp_path) -> Install:
    sample.write_sample_package(tmp_path / "senpi", 3, fillers=3)
    return Install(tmp_path / "senpi", sample.SHAPE_VERSIONS[3], "npm")


@pytest.fixture
def home(tmp_path, monkeypatch, isolated_dirs) -> Path:
    """No agent-dir variable: senpi's agent dir is made of HOME and its package.json's configDir."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.delenv("SENPI_CODING_AGENT_DIR")
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.chdir(tmp_path)
    return folder


def a_user(wanted, why: str) -> pwd.struct_passwd:
    """A user of this machine's user database that fits `wanted` (skipped when there is none)."""
    found = next((u for u in pwd.getpwall() if u.pw_uid != 0 and u.pw_dir.startswith("/") and wanted(u)), None)
    if found is None:
        pytest.skip(f"no user on this machine {why}")
    return found


def give(install: Install, uid: int) -> None:
    """The install belongs to `uid` (its folder's owner is the user whose senpi it is)."""
    os.chown(install.package_dir, uid, uid)


def test_an_agent_dir_variable_names_both_agent_dirs(install, isolated_dirs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    placed = placement(install)
    assert placed.error == "" and placed.here_error == ""
    assert (placed.user.path, placed.user.how) == (isolated_dirs / "agent", "SENPI_CODING_AGENT_DIR")
    assert placed.here == placed.user


def test_without_a_variable_it_is_the_home_folders_and_from_a_project_the_projects_own(install, home, monkeypatch):
    placed = placement(install)
    assert (placed.user.path, placed.user.how) == (home / ".senpi" / "agent", "default")
    assert placed.here.path == placed.user.path
    project = home / "work" / "site"
    (project / ".senpi" / "agent").mkdir(parents=True)
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")  # (the nearest project above the folder senpi starts in)
    placed = placement(install)
    assert (placed.user.path, placed.user.how) == (home / ".senpi" / "agent", "default")  # (apply's own)
    assert (placed.here.path, placed.here.how) == (project / ".senpi" / "agent", "project")  # (apply --here's)


def test_from_a_folder_deleted_under_it_here_is_the_home_folders(install, home, tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    (gone / ".senpi" / "agent").mkdir(parents=True)
    monkeypatch.chdir(gone)
    for folder in (gone / ".senpi" / "agent", gone / ".senpi", gone):
        folder.rmdir()
    placed = placement(install)
    assert placed.error == "" and placed.here == placed.user and placed.user.path == home / ".senpi" / "agent"


def test_an_unsupported_install_has_no_agent_dir_and_says_why(tmp_path):
    odd = Install(tmp_path / "pi", "2026.8.5", "bun", unsupported="a single binary: nothing to patch")
    placed = placement(odd)
    assert (placed.user, placed.here, placed.error) == (None, None, "a single binary: nothing to patch")


def test_a_build_whose_agent_dir_rule_cannot_be_read_says_which_install(install):
    (install.package_dir / "dist" / "config.js").unlink()
    placed = placement(install)
    assert placed.user is None and placed.here is None
    assert placed.error.startswith(f"senpi {install.version} at {install.package_dir}: ")
    assert "dist/config.js: cannot read it" in placed.error


def test_a_relative_home_is_refused_with_what_to_set(install, home, monkeypatch):
    monkeypatch.setenv("HOME", "relative/home")
    placed = placement(install)
    assert placed.user is None and "HOME is 'relative/home', not an absolute path" in placed.error


@as_root
def test_as_root_an_owner_the_user_database_does_not_know_needs_the_variable(install, home, isolated_dirs, monkeypatch):
    uid = next(u for u in range(54321, 60000) if not any(p.pw_uid == u for p in pwd.getpwall()))
    give(install, uid)
    placed = placement(install)
    assert placed.user is None
    assert f"its user (uid {uid}) has no entry in the user database to find its agent dir" in placed.error
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(isolated_dirs / "agent"))  # (names it: no home needed)
    placed = placement(install)
    assert placed.error == "" and placed.user.path == isolated_dirs / "agent"


@as_root
def test_as_root_through_sudo_roots_own_senpi_serves_the_users_agent_dir(install, home, monkeypatch):
    user = a_user(lambda u: True, "but root")
    monkeypatch.setenv("SUDO_UID", str(user.pw_uid))
    placed = placement(install)
    assert placed.error == "" and placed.user.path == Path(os.path.normpath(user.pw_dir)) / ".senpi" / "agent"


@as_root
def test_as_root_another_users_config_naming_a_folder_outside_their_home_is_refused(install, home):
    user = a_user(lambda u: True, "but root")
    manifest = install.package_dir / "package.json"
    data = json.loads(manifest.read_text())
    data["piConfig"]["configDir"] = "../../../../../../root-only"
    manifest.write_text(json.dumps(data))
    give(install, user.pw_uid)
    placed = placement(install)
    assert placed.user is None and placed.error.startswith(f"senpi {install.version} at {install.package_dir}: ")
    assert "its agent dir /root-only/agent, made of its owner's config" in placed.error
    assert f"is outside the home folder {os.path.normpath(user.pw_dir)} of uid {user.pw_uid}" in placed.error


@as_root
def test_as_root_another_users_agent_dir_in_a_home_they_do_not_own_is_refused(install, home):
    def not_theirs(u: pwd.struct_passwd) -> bool:
        return u.pw_dir != "/" and os.path.isdir(u.pw_dir) and os.lstat(u.pw_dir).st_uid != u.pw_uid

    user = a_user(not_theirs, "whose home folder belongs to someone else")
    give(install, user.pw_uid)
    placed = placement(install)
    owner = os.lstat(user.pw_dir).st_uid
    assert placed.user is None
    assert f"in {user.pw_dir}, which belongs to uid {owner}, not to uid {user.pw_uid}" in placed.error


@as_root
def test_as_root_another_users_agent_dir_in_a_home_that_does_not_exist_is_refused(install, home):
    user = a_user(lambda u: not os.path.lexists(u.pw_dir), "whose home folder does not exist")
    give(install, user.pw_uid)
    placed = placement(install)
    assert placed.user is None and f"in {user.pw_dir}, which does not exist" in placed.error


@as_root
def test_as_root_a_project_outside_the_users_home_is_refused_for_apply_here_only(install, home, tmp_path, monkeypatch):
    def owns_home(u: pwd.struct_passwd) -> bool:
        return u.pw_dir != "/" and os.path.isdir(u.pw_dir) and os.lstat(u.pw_dir).st_uid == u.pw_uid

    user = a_user(owns_home, "who owns their home folder")
    give(install, user.pw_uid)
    project = tmp_path / "project"
    (project / ".senpi" / "agent").mkdir(parents=True)
    monkeypatch.chdir(project)
    placed = placement(install)
    assert placed.error == "" and placed.user.path == Path(user.pw_dir) / ".senpi" / "agent"
    assert placed.here.path == project / ".senpi" / "agent" and placed.here.how == "project"
    assert f"its agent dir {project / '.senpi' / 'agent'}, made of its owner's config" in placed.here_error
    assert "outside the home folder" in placed.here_error
