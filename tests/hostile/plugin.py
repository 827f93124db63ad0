"""tests/hostile/: root against a second, real, unprivileged user playing the attacker. (A plugin
that tests/conftest.py loads, not a conftest.py: the test modules import `conftest` by name.)

Every test here needs root; under CI=true as root, a test that skips fails instead (the suite
cannot pass without running them). The user is made with useradd when missing
($SENPI_GUARD_HOSTILE_USER, default senpi-guard-hostile); races repeat $SENPI_GUARD_HOSTILE_RUNS
times the test's own count (default 1)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
HOSTILE_USER = os.environ.get("SENPI_GUARD_HOSTILE_USER", "senpi-guard-hostile")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if Path(item.path).parent == HERE and report.skipped and os.environ.get("CI") == "true" and os.geteuid() == 0:
        report.outcome = "failed"
        report.longrepr = f"a hostile (root) test skipped under CI=true as root: {report.longrepr}"
    return report


def _make_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    useradd = shutil.which("useradd") or shutil.which("useradd", path="/usr/sbin:/sbin")
    if useradd is None:
        pytest.skip("no useradd on this machine to make the attacker's user")
    done = subprocess.run(
        [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        capture_output=True,
        text=True,
        check=False,
    )
    try:  # (another run may have made it meanwhile: that is fine)
        return pwd.getpwnam(name)
    except KeyError:
        pytest.fail(f"useradd {name} failed: {done.stderr.strip()}")


@pytest.fixture(scope="session")
def attacker() -> pwd.struct_passwd:
    """The second real user, who owns what the tests let them own and attacks from there."""
    if os.geteuid() != 0:
        pytest.skip("the hostile tests run as root, against a second real user")
    return _make_user(HOSTILE_USER)


@pytest.fixture
def open_dir():
    """A folder every user can reach (pytest's own temp folders are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="senpi-guard-hostile-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def users_dir(open_dir, attacker) -> Path:
    """A folder the attacker owns, inside the open one."""
    folder = open_dir / "attacker"
    folder.mkdir()
    os.chown(folder, attacker.pw_uid, attacker.pw_gid)
    return folder


def as_user(user: pwd.struct_passwd, work: Callable[[], dict]) -> dict:
    """`work()` in a forked child that has become `user` (no other group): what it returned, or the
    one-line refusal (`fatal`) or the OS error (`oserror`, its errno) that stopped it."""
    from senpi_guard.errors import FatalError

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # (the child: never returns into pytest)
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setresgid(user.pw_gid, user.pw_gid, user.pw_gid)
            os.setresuid(user.pw_uid, user.pw_uid, user.pw_uid)
            try:
                said = work()
            except FatalError as exc:
                said = {"fatal": str(exc)}
            except OSError as exc:
                said = {"oserror": exc.errno}
            os.write(write_end, json.dumps(said).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        said = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, said
    return json.loads(said)


def runs(default: int) -> int:
    """How many times a race is run: the test's count, times $SENPI_GUARD_HOSTILE_RUNS."""
    return default * max(1, int(os.environ.get("SENPI_GUARD_HOSTILE_RUNS", "1")))
