"""Root over another user's files: a second real user (made with useradd when the tests run as
root; skipped with the reason otherwise), real files, real node."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HANG_S, SHAPE_REL, run_cli, tree_digest, wait_for, write_user_config
from test_hostile import one_error_line

USER = "senpi-guard-test"
KEPT = 3  # extension_kept.KEEP_COPIES
REL = SHAPE_REL[2]
PROVIDER = str(Path(REL).parent)


@pytest.fixture(scope="session")
def other_user() -> pwd.struct_passwd:
    """A second real user, for root runs over files someone else owns."""
    if os.geteuid() != 0:
        pytest.skip("root runs over another user's files need the tests to run as root")
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True, capture_output=True
        )
        return pwd.getpwnam(USER)


def give_to(user: pwd.struct_passwd, *roots: Path) -> None:
    for root in roots:
        for path in [root, *root.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)


@pytest.fixture
def users_install(npm_install, other_user, open_dir):
    """A senpi install owned by the other user, in a prefix that user owns."""
    prefix = open_dir / "user-prefix"
    pkg = npm_install(2, prefix=prefix)
    give_to(other_user, prefix)
    return pkg


# ---- 1. writes stay where they were read ---------------------------------------------------------


def test_directory_swap_never_redirects_a_root_write(users_install, npm_install, other_user, tmp_path, capsys):
    """The user swaps the provider folder for a symlink into root's own install while root's apply
    verifies; root's file must never change. Twenty tries, each at a different moment."""
    roots_pkg = npm_install(2, prefix=tmp_path / "root-prefix")
    roots_file = roots_pkg / REL
    roots_before = (roots_file.read_bytes(), os.stat(roots_file))
    provider = users_install / PROVIDER
    verify_dir = Path(os.environ["XDG_STATE_HOME"]) / "senpi-guard" / "verify"
    outcomes = []
    for attempt in range(20):
        aside = provider.with_name(f"aside{attempt}")
        proc = subprocess.Popen(
            [sys.executable, "-m", "senpi_guard", "apply", "--root", str(users_install)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # the swap is timed from the replay's own folder appearing, then delayed a little more each time
        wait_for(
            lambda p=proc: (
                p.poll() is not None
                or any(Path("/tmp").glob(f"senpi-guard-verify-{p.pid}-*"))
                or (verify_dir.is_dir() and any(verify_dir.iterdir()))
            ),
            what="the replay",
        )
        time.sleep(attempt * 0.01)
        os.rename(provider, aside)
        provider.symlink_to(roots_pkg / PROVIDER)
        out, err = proc.communicate(timeout=HANG_S)
        outcomes.append(proc.returncode)
        provider.unlink()
        os.rename(aside, provider)
        if proc.returncode:  # one line of error (besides the progress lines)
            errors = [line for line in err.strip().splitlines() if not line.endswith("…")]
            assert len(errors) <= 1 and "Traceback" not in out + err
        assert (roots_file.read_bytes(), os.stat(roots_file).st_uid, os.stat(roots_file).st_mode) == (
            roots_before[0],
            roots_before[1].st_uid,
            roots_before[1].st_mode,
        )
        run_cli(capsys, "revert", "--root", users_install)
        run_cli(capsys, "apply", "--root", users_install)  # lifts the hold for the next round
        run_cli(capsys, "revert", "--root", users_install)
        capsys.readouterr()
    assert not list((roots_pkg / PROVIDER).glob(".*.senpi-guard"))
    print(
        f"directory swap: {outcomes.count(0)} of 20 applies finished before the swap mattered, "
        f"{len(outcomes) - outcomes.count(0)} refused; root's file never changed"
    )


def test_owner_is_kept_or_nothing_is_written(users_install, other_user, capsys):
    target = users_install / REL
    assert run_cli(capsys, "apply", "--root", users_install)[0] == 0
    st = os.stat(target)
    assert (st.st_uid, st.st_gid) == (other_user.pw_uid, other_user.pw_gid)
    run_cli(capsys, "revert", "--root", users_install)
    # a file whose owner differs from its folder's: root will not hand a new file to that owner
    os.chown(target, 4242, 4242)
    before = tree_digest(users_install)
    # (--allow-foreign-root: past the replay, which would refuse a tree of two owners first)
    code, out, err = run_cli(capsys, "apply", "--allow-foreign-root", "--root", users_install)
    assert code == 1 and "will not give a file to another owner" in one_error_line(out + err)
    assert tree_digest(users_install) == before


# ---- 2. no one else's code runs as root ----------------------------------------------------------

PLANTED = """\
import { writeFileSync } from "node:fs";
writeFileSync(LOG, `${process.getuid()}\n`, { flag: "a" });
"""


def planted(log: Path) -> str:
    """Code that appends the uid it runs as to `log`, a path it holds itself: root's environment
    does not reach the code a replay runs (io/runas)."""
    return PLANTED.replace("LOG", json.dumps(str(log)), 1)


def shared_log(folder: Path, name: str) -> Path:
    """A file any user's code can append to (what planted code writes its uid into)."""
    log = folder / name
    log.touch()
    log.chmod(0o666)
    return log


def test_planted_code_runs_as_its_owner_not_as_root(users_install, other_user, open_dir, capsys):
    log = shared_log(open_dir, "who-ran-it")
    tools = users_install / PROVIDER / "tools.js"
    tools.write_text(planted(log) + tools.read_text())
    give_to(other_user, tools)
    run_cli(capsys, "verify", "--fresh", "--root", users_install)
    ran_as = {int(x) for x in log.read_text().split()}
    assert ran_as == {other_user.pw_uid}, f"the planted code ran as uids {ran_as or 'none'}"
    log.write_text("")
    run_cli(capsys, "verify", "--fresh", "--allow-foreign-root", "--root", users_install)
    assert {int(x) for x in log.read_text().split()} == {0}  # only when asked for


def test_several_owners_are_refused_naming_the_escape_hatch(users_install, capsys, isolated_dirs):
    write_user_config(isolated_dirs, 'layers = ["dist"]\n')  # (the dist layer's refusal alone)
    os.chown(users_install / PROVIDER / "prompt-bridge.js", 12345, 12345)
    code, out, err = run_cli(capsys, "verify", "--root", users_install)
    assert code == 1 and "--allow-foreign-root" in one_error_line(out + err)


# ---- 3. node and every module a replay may import run as the one owner they share ----------------


def _logging_node(path: Path, log: Path) -> None:
    """A `node` that notes who runs it, then is the real node."""
    real = shutil.which("node")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nid -u >> "{log}"\nexec "{real}" "$@"\n')
    path.chmod(0o755)


@pytest.fixture
def roots_install(npm_install, open_dir):
    """A senpi install root owns, in a prefix the other user can read."""
    return npm_install(2, prefix=open_dir / "root-prefix")


@pytest.fixture
def uid_log(open_dir) -> Path:
    return shared_log(open_dir, "who-ran-node")


def test_a_users_node_in_the_prefix_never_runs_as_root(roots_install, other_user, uid_log, capsys):
    """<prefix>/bin/node belongs to the user: status's `--version`, apply's replay and the
    extension's replay all run it as that user."""
    node = roots_install.parents[3] / "bin" / "node"
    _logging_node(node, uid_log)
    give_to(other_user, node)
    for command in ("status", "apply", "verify"):
        run_cli(capsys, command, "--root", roots_install)
    ran_as = [int(x) for x in uid_log.read_text().split()]
    assert ran_as and set(ran_as) == {other_user.pw_uid}, f"node ran as uids {sorted(set(ran_as))}"


def test_a_users_module_in_a_roots_package_runs_as_that_user(roots_install, other_user, open_dir, capsys):
    """Not a target, not a target's folder: a module the target imports, chowned to the user."""
    log = shared_log(open_dir, "who-ran-it")
    tools = roots_install / PROVIDER / "tools.js"
    tools.write_text(planted(log) + tools.read_text())
    give_to(other_user, tools)
    assert run_cli(capsys, "apply", "--root", roots_install)[0] == 0
    ran_as = {int(x) for x in log.read_text().split()}
    assert ran_as == {other_user.pw_uid}, f"the user's module ran as uids {ran_as or 'none'}"


def test_modules_of_two_users_are_refused_naming_them(roots_install, other_user, capsys, isolated_dirs):
    write_user_config(isolated_dirs, 'layers = ["dist"]\n')  # (the dist layer's refusal alone)
    tools = roots_install / PROVIDER / "tools.js"
    give_to(other_user, tools)
    stray = roots_install / "dist" / "config.js"
    os.chown(stray, 12345, 12345)
    before = tree_digest(roots_install)
    code, out, err = run_cli(capsys, "apply", "--root", roots_install)
    line = one_error_line(out + err)
    assert code == 1 and "several users" in line and str(tools) in line and "uid 12345" in line
    assert tree_digest(roots_install) == before


# ---- 4. the agent dir: links as senpi follows them, root follows none of a user's, sudo serves the user


def as_user(user: pwd.struct_passwd, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    """senpi-guard run as that user: a Python of the same version it can run, this checkout's code and
    the venv's libraries (this venv's own Python may live where only root can reach)."""
    import sysconfig

    python = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("no system Python of this version for the other user to run")
    src = str(Path(__file__).resolve().parents[2] / "src")
    libs = sysconfig.get_paths()
    paths = ":".join([os.environ.get("PYTHONPATH", src), src, libs["purelib"], libs["platlib"]])
    return subprocess.run(
        [
            "runuser",
            "-u",
            user.pw_name,
            "--",
            "env",
            "-i",
            f"PATH={os.environ['PATH']}",
            f"PYTHONPATH={paths}",
            *(f"{k}={v}" for k, v in env.items()),
            python,
            "-m",
            "senpi_guard",
            *argv,
        ],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )


def test_as_the_user_a_symlinked_extensions_folder_is_followed(users_install, other_user, open_dir):
    home = open_dir / "user-home"
    elsewhere = home / "dotfiles" / "senpi-extensions"
    elsewhere.mkdir(parents=True)
    (home / ".senpi" / "agent").mkdir(parents=True)
    (home / ".senpi" / "agent" / "extensions").symlink_to(elsewhere)
    give_to(other_user, home)
    env = {
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    done = as_user(other_user, env, "apply", "--root", str(users_install))
    assert done.returncode == 0, done.stdout + done.stderr
    installed = elsewhere / "senpi-guard-directive-dedupe.js"
    assert installed.is_file() and installed.stat().st_uid == other_user.pw_uid


def test_as_root_a_users_link_on_the_agent_dir_path_is_refused(
    users_install, other_user, open_dir, tmp_path, capsys, monkeypatch
):
    roots_place = tmp_path / "roots-own"  # somewhere only root may write
    roots_place.mkdir()
    home = open_dir / "user-home"
    (home / ".senpi").mkdir(parents=True)
    (home / ".senpi" / "agent").symlink_to(roots_place)
    give_to(other_user, home)
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(home / ".senpi" / "agent"))
    code, out, err = run_cli(capsys, "apply", "--root", users_install)
    assert code == 1 and "symbolic link owned by uid" in out + err and "run senpi-guard as that user" in out + err
    assert list(roots_place.iterdir()) == []


@pytest.fixture
def users_home(other_user):
    """The other user's own home, as the user database names it (made for the test when missing)."""
    home = Path(other_user.pw_dir)
    made = not home.exists()
    if made:
        home.mkdir(parents=True)
        os.chown(home, other_user.pw_uid, other_user.pw_gid)
    yield home
    if made:
        shutil.rmtree(home, ignore_errors=True)
    else:
        shutil.rmtree(home / ".senpi", ignore_errors=True)


def test_under_sudo_the_extension_goes_to_the_users_agent_dir_not_roots(
    users_install, other_user, users_home, tmp_path, capsys, monkeypatch
):
    roots_home = tmp_path / "root-home"
    roots_home.mkdir()
    monkeypatch.setenv("HOME", str(roots_home))  # (sudo sets HOME to root's)
    monkeypatch.delenv("SENPI_CODING_AGENT_DIR")  # (sudo's env_reset drops it)
    monkeypatch.setenv("SUDO_UID", str(other_user.pw_uid))
    monkeypatch.setenv("SUDO_USER", other_user.pw_name)
    assert run_cli(capsys, "apply", "--root", users_install)[0] == 0
    installed = users_home / ".senpi" / "agent" / "extensions" / "senpi-guard-directive-dedupe.js"
    assert installed.is_file() and not (roots_home / ".senpi").exists()
    for path in (users_home / ".senpi", installed.parent, installed):
        assert path.stat().st_uid == other_user.pw_uid, path
    assert run_cli(capsys, "revert", "--root", users_install)[0] == 0 and not installed.exists()


def test_an_unwritable_state_dir_is_one_line_not_a_crash(users_install, other_user, open_dir):
    """The user's own state dir, made read-only (root ignores modes: this runs as that user)."""
    home = open_dir / "user-home"
    state = home / "state" / "senpi-guard"
    state.mkdir(parents=True)
    give_to(other_user, home)
    state.chmod(0o500)
    env = {
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
    }
    before = tree_digest(users_install)
    for command in ("apply", "revert"):
        done = as_user(other_user, env, command, "--root", str(users_install))
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        line = one_error_line(done.stdout + done.stderr)
        assert "cannot take the lock" in line and "writable" in line and "unexpected" not in line
    assert tree_digest(users_install) == before


def test_check_replays_a_users_tarball_as_that_user(other_user, open_dir, tmp_path):
    """The release's code runs in check's replay: a tarball someone else owns is replayed as them,
    never as root (extraction alone would give root every file)."""
    from realsenpi import senpi_guard

    from senpi_guard.demo import sample

    log = shared_log(open_dir, "who-ran-it")
    src = tmp_path / "src"
    sample.write_sample_package(src, 2, fillers=0)
    tools = src / PROVIDER / "tools.js"
    tools.write_text(planted(log) + tools.read_text())
    tarball = sample.npm_pack(src, open_dir)
    os.chown(tarball, other_user.pw_uid, other_user.pw_gid)
    done = senpi_guard("check", tarball)
    assert done.returncode == 0, done.stdout + done.stderr
    ran_as = {int(x) for x in log.read_text().split()}
    assert ran_as == {other_user.pw_uid}, f"the tarball's code ran as uids {ran_as or 'none'}"


def test_an_owner_without_a_passwd_entry_still_gets_the_extension_where_a_variable_names_it(
    npm_install, open_dir, capsys, isolated_dirs
):
    """Common in containers (a bind mount owned by a host uid): the agent-dir variable needs no home."""
    pkg = npm_install(2, prefix=open_dir / "host-prefix")
    for path in [open_dir / "host-prefix", *(open_dir / "host-prefix").rglob("*")]:
        os.chown(path, 4242, 4242, follow_symlinks=False)
    _, out, err = run_cli(capsys, "apply", "--root", pkg, "--json")
    layers = json.loads(out)["extension"]
    assert [(layer["state"], layer["ok"]) for layer in layers] == [("installed", True)], out + err
    assert (isolated_dirs / "agent" / "extensions" / "senpi-guard-directive-dedupe.js").is_file()


def test_a_user_over_roots_senpi_is_told_to_apply_as_root_not_to_apply_again(npm_install, other_user, open_dir):
    """A user's apply over root's files is refused (as it must be); status, verify and apply's own
    lines then name the step that works, `sudo senpi-guard apply`, never the plain apply that would
    be refused again (before: "run `senpi-guard apply`" after every refusal, the risk line too)."""
    roots_install = npm_install(3, prefix=open_dir / "root-prefix")
    home = open_dir / "user-home"
    home.mkdir()
    give_to(other_user, home)
    env = {"HOME": str(home), **{f"XDG_{k}_HOME": str(home / k.lower()) for k in ("STATE", "CONFIG", "DATA", "CACHE")}}
    before = tree_digest(roots_install)
    for argv in (["status"], ["apply"], ["status"], ["verify"]):
        done = as_user(other_user, env, *argv, "--root", str(roots_install))
        said = " ".join((done.stdout + done.stderr).split())  # (prose wraps at the width)
        sudo = "run senpi-guard as root (sudo senpi-guard …)" if argv == ["apply"] else "sudo senpi-guard apply"
        assert done.returncode == 1 and sudo in said, (argv, said)
        assert "run `senpi-guard apply`" not in said, (argv, said)
    assert tree_digest(roots_install) == before
    status = as_user(other_user, env, "status", "--root", str(roots_install)).stdout
    assert "next      run `sudo senpi-guard apply`: senpi's files belong to root" in status, status
    # the dist layer failed, so the user's apply left the extension out: no state status calls a risk
    # (before: the extension was written, and status then said "the extension is here without the
    # dist layer")
    assert "risk" not in status and "extension absent" in status, status
    assert not list((home / ".senpi").rglob("senpi-guard-*.js")), status


def test_an_apply_whose_dist_layer_fails_says_why_the_extension_was_left_out(npm_install, other_user, open_dir):
    roots_install = npm_install(3, prefix=open_dir / "root-prefix")
    home = open_dir / "user-home"
    home.mkdir()
    give_to(other_user, home)
    env = {"HOME": str(home), **{f"XDG_{k}_HOME": str(home / k.lower()) for k in ("STATE", "CONFIG", "DATA", "CACHE")}}
    dry = as_user(other_user, env, "apply", "--dry-run", "--json", "--root", str(roots_install))
    done = as_user(other_user, env, "apply", "--json", "--root", str(roots_install))
    for run in (dry, done):
        (row,) = json.loads(run.stdout)["extension"]
        assert run.returncode == 1 and not row["would_write"] and not row["ok"], run.stdout
        assert row["detail"].startswith("not written: senpi "), row


def test_a_users_edited_extension_kept_by_roots_applies_is_bounded(
    users_install, other_user, open_dir, isolated_dirs, capsys, monkeypatch
):
    """Each root apply that finds the user's extension edited keeps a copy in root's data folder:
    never the same bytes twice, and at most 3 (extension_kept.KEEP_COPIES) of that file, the oldest
    removed (and said)."""
    agent = open_dir / "user-agent"
    agent.mkdir()
    give_to(other_user, agent)
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(agent))
    installed = agent / "extensions" / "senpi-guard-directive-dedupe.js"
    kept_dir = isolated_dirs / "xdg_data_home" / "senpi-guard" / "extension-kept"
    assert run_cli(capsys, "apply", "--root", users_install)[0] == 0 and installed.is_file()
    said = []
    for edit in [0, 1, 2, 3, 4, 4]:  # (the last: bytes kept already)
        installed.write_bytes(installed.read_bytes() + f"// the user's edit {edit}\n".encode())
        code, out, err = run_cli(capsys, "apply", "--root", users_install)
        assert code == 0, out + err
        said.append(out)
        assert installed.stat().st_uid == other_user.pw_uid
    copies = sorted(kept_dir.iterdir(), key=lambda p: p.stat().st_mtime_ns)
    assert len(copies) == KEPT, copies
    assert [c.read_bytes().rsplit(b"edit ", 1)[1] for c in copies] == [b"2\n", b"3\n", b"4\n"]
    assert all("pruned" not in out for out in said[:KEPT])
    assert all(out.count("pruned   ") == 1 for out in said[KEPT:5]) and "pruned" not in said[5]
    assert f"kept     {copies[-1]}" in said[4] and f"kept     {copies[-1]}" in said[5]
