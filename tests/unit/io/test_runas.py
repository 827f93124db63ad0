"""io/runas: the one way a program is started (issue 46, item 2): a user's own primary group from the
user database, nobody:nogroup for a uid it lacks, no supplementary group, and an environment made
from one allow-list that never carries a token, whatever the caller asks."""

from __future__ import annotations

import ast
import grp
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from senpi_guard.io import runas

TOKENS = {
    "NPM_TOKEN": "secret-npm",
    "SOMETHING_TOKEN": "secret-something",
    "github_token": "secret-lower",
    "npm_config__authToken": "secret-auth",
    "NPM_CONFIG__AUTHTOKEN": "secret-auth-upper",
    "npm_config_//registry.example/:_authToken": "secret-scoped",
    "npm_config__auth": "secret-basic",
}
NOT_PASSED = {"NODE_OPTIONS": "--require /root/x.js", "SENPI_GUARD_CONFIG": "/root/c.toml", "AWS_SECRET": "s"}
ALWAYS = {"PATH": "/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp"}
FOR_NPM = {
    "HTTP_PROXY": "http://proxy:3128",
    "http_proxy": "http://proxy:3128",
    "HTTPS_PROXY": "http://proxy:3128",
    "https_proxy": "http://proxy:3128",
    "NO_PROXY": "localhost",
    "no_proxy": "localhost",
    "NODE_EXTRA_CA_CERTS": "/etc/ssl/extra.pem",
    "npm_config_registry": "https://registry.example/",
}


@pytest.fixture
def roots_environment(monkeypatch):
    for name in list(os.environ):
        monkeypatch.delenv(name)
    for name, value in {**TOKENS, **NOT_PASSED, **ALWAYS, **FOR_NPM}.items():
        monkeypatch.setenv(name, value)


def test_only_the_allow_list_passes(roots_environment):
    assert runas.environment() == ALWAYS
    assert runas.environment(npm=True) == {**ALWAYS, **FOR_NPM}


def test_no_token_passes_even_when_the_caller_sets_it(roots_environment):
    env = runas.environment(npm=True, own={**TOKENS, "HOME": "/scratch/home", "npm_config_cache": "/scratch/c"})
    assert not any(value.startswith("secret-") for value in env.values()), env
    assert env["HOME"] == "/scratch/home" and env["npm_config_cache"] == "/scratch/c"  # (the caller's own)
    assert not runas.popen_kwargs(None, npm=True, own=TOKENS)["env"].keys() & TOKENS.keys()


def test_a_started_program_sees_the_allow_list_alone(roots_environment):
    """A real child process: its whole environment, as /proc/<pid>/environ holds it."""
    read = "import sys; sys.stdout.write(open('/proc/self/environ').read())"
    done = subprocess.run(
        [sys.executable, "-c", read], capture_output=True, text=True, check=True, **runas.popen_kwargs(None)
    )
    seen = dict(entry.split("=", 1) for entry in done.stdout.split("\0") if entry)
    assert seen == ALWAYS


def test_a_user_runs_with_their_primary_group_and_an_unknown_uid_as_nobody():
    me = pwd.getpwuid(os.getuid())
    assert runas.user(me.pw_uid) == (me.pw_uid, me.pw_gid)
    unknown = next(uid for uid in range(4242, 1 << 20) if not _known(uid))
    nobody = pwd.getpwnam("nobody")
    assert runas.user(unknown) == runas.nobody()
    try:
        wanted = grp.getgrnam("nogroup").gr_gid
    except KeyError:
        wanted = nobody.pw_gid
    assert runas.nobody() == (nobody.pw_uid, wanted)


def _known(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


@pytest.mark.skipif(os.geteuid() != 0, reason="running as another user needs root")
def test_as_another_user_no_group_but_their_own():
    """Root's supplementary groups (and root's group) are not kept: the child has nobody's alone."""
    account = runas.nobody()
    ids = subprocess.run(
        ["sh", "-c", "id -u; id -g; id -G"], capture_output=True, text=True, check=True, **runas.popen_kwargs(account)
    )
    assert ids.stdout.split() == [str(account.uid), str(account.gid), str(account.gid)]


def test_no_other_module_builds_a_run_as():
    """Dropping to a user and starting a program as one are io/runas's alone: any other place doing
    it (a `user=`, `group=` or `extra_groups=` of subprocess, a dict of them, os.setgroups or
    os.setres[ug]id) would be a second way, with its own group or environment."""
    src = Path(runas.__file__).parents[1]
    found = []
    for path in sorted(src.rglob("*.py")):
        if path == Path(runas.__file__):
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Call):
                names = [k.arg for k in node.keywords] + [ast.unparse(node.func)]
            elif isinstance(node, ast.Dict):
                names = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            found += [f"{path.relative_to(src)}:{node.lineno}: {n}" for n in names if n in BUILDERS]
    assert found == []


BUILDERS = {"user", "group", "extra_groups", "os.setgroups", "os.setresuid", "os.setresgid", "os.setuid", "os.setgid"}
