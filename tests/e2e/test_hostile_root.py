"""Root over another user's files: a second real user (made with useradd when the tests run as
root; skipped with the reason otherwise), real files, real node."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import SHAPE_REL, run_cli, tree_digest, wait_for
from test_hostile import one_error_line

USER = "senpi-guard-test"
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
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                       check=True, capture_output=True)
        return pwd.getpwnam(USER)


def give_to(user: pwd.struct_passwd, *roots: Path) -> None:
    for root in roots:
        for path in [root, *root.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)


@pytest.fixture
def open_dir():
    """A folder the other user can reach (pytest's own temp folders are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="senpi-guard-hostile-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


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
        proc = subprocess.Popen([sys.executable, "-m", "senpi_guard", "apply", "--root", str(users_install)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # the swap is timed from the replay's own folder appearing, then delayed a little more each time
        wait_for(lambda p=proc: p.poll() is not None or any(Path("/tmp").glob(f"senpi-guard-verify-{p.pid}-*"))
                 or (verify_dir.is_dir() and any(verify_dir.iterdir())), timeout=60, what="the replay")
        time.sleep(attempt * 0.01)
        os.rename(provider, aside)
        provider.symlink_to(roots_pkg / PROVIDER)
        out, err = proc.communicate(timeout=60)
        outcomes.append(proc.returncode)
        provider.unlink()
        os.rename(aside, provider)
        if proc.returncode:  # one line of error (besides the progress lines)
            errors = [line for line in err.strip().splitlines() if not line.endswith("…")]
            assert len(errors) <= 1 and "Traceback" not in out + err
        assert (roots_file.read_bytes(), os.stat(roots_file).st_uid, os.stat(roots_file).st_mode) == \
            (roots_before[0], roots_before[1].st_uid, roots_before[1].st_mode)
        run_cli(capsys, "revert", "--root", users_install)
        run_cli(capsys, "apply", "--root", users_install)  # lifts the hold for the next round
        run_cli(capsys, "revert", "--root", users_install)
        capsys.readouterr()
    assert not list((roots_pkg / PROVIDER).glob(".*.senpi-guard"))
    print(f"directory swap: {outcomes.count(0)} of 20 applies finished before the swap mattered, "
          f"{len(outcomes) - outcomes.count(0)} refused; root's file never changed")


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
writeFileSync(process.env.SENPI_GUARD_PLANT_LOG ?? "/dev/null", `${process.getuid()}\n`, { flag: "a" });
"""


def test_planted_code_runs_as_its_owner_not_as_root(users_install, other_user, open_dir, capsys, monkeypatch):
    log = open_dir / "who-ran-it"
    log.touch()
    log.chmod(0o666)
    tools = users_install / PROVIDER / "tools.js"
    tools.write_text(PLANTED + tools.read_text())
    give_to(other_user, tools)
    monkeypatch.setenv("SENPI_GUARD_PLANT_LOG", str(log))
    run_cli(capsys, "verify", "--root", users_install)
    ran_as = {int(x) for x in log.read_text().split()}
    assert ran_as == {other_user.pw_uid}, f"the planted code ran as uids {ran_as or 'none'}"
    log.write_text("")
    run_cli(capsys, "verify", "--allow-foreign-root", "--root", users_install)
    assert {int(x) for x in log.read_text().split()} == {0}  # only when asked for


def test_several_owners_are_refused_naming_the_escape_hatch(users_install, capsys):
    os.chown(users_install / PROVIDER / "prompt-bridge.js", 12345, 12345)
    code, out, err = run_cli(capsys, "verify", "--root", users_install)
    assert code == 1 and "--allow-foreign-root" in one_error_line(out + err)
