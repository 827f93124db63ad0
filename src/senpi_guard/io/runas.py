"""The one way senpi-guard runs a program, as another user or as itself: node's replays, `node
--version`, `node --check`, audit's node and check's npm all start through `popen_kwargs`, and
io/unpack's child drops to its user through `drop`.

- Whom: a user is their uid with their PRIMARY group from the user database, never the group of a
  file (a tree `chown -R user` leaves on root's group, gid 0, and a replay as uid:0 reads what
  root's group may); a uid with no entry runs as nobody:nogroup; no supplementary groups.
- With what: an environment made from one allow-list (PATH, HOME, LANG, LC_*, TMPDIR; for npm its
  proxies, NODE_EXTRA_CA_CERTS and its registry) plus the values the caller sets itself (a scratch
  HOME, the replay's TMPDIR). Nothing else of ours passes, and never a token (`*_TOKEN`, npm's
  `_authToken` settings), even when a caller names one: the code run may be anyone's, and what is
  in a process's environment can be read in its /proc/<pid>/environ.
- Which file: a program judged by its owner (node) is opened once (`pinned`), its owner read from
  that descriptor and the descriptor run (`/proc/self/fd/N`): a link swapped after the check cannot
  put another file in its place."""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import stat
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

NOBODY, NOGROUP = "nobody", "nogroup"
UNKNOWN = 65534  # nobody's and nogroup's ids where the names are missing
PASSED = ("PATH", "HOME", "LANG", "TMPDIR")
PASSED_PREFIXES = ("LC_",)
NPM_PASSED = (
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "NO_PROXY",
    "no_proxy",
    "NODE_EXTRA_CA_CERTS",
    "npm_config_registry",
)


class Account(NamedTuple):
    """Whom a program runs as: a uid and the group it runs with."""

    uid: int
    gid: int


def nobody() -> Account:
    """nobody:nogroup, looked up by name (nobody's own group where there is no `nogroup`)."""
    try:
        entry = pwd.getpwnam(NOBODY)
    except KeyError:
        uid, gid = UNKNOWN, UNKNOWN
    else:
        uid, gid = entry.pw_uid, entry.pw_gid
    with contextlib.suppress(KeyError):
        gid = grp.getgrnam(NOGROUP).gr_gid
    return Account(uid, gid)


def user(uid: int) -> Account:
    """`uid` with its primary group from the user database; nobody:nogroup for a uid it lacks."""
    try:
        return Account(uid, pwd.getpwuid(uid).pw_gid)
    except KeyError:
        return nobody()


class Program(NamedTuple):
    """A program opened once (`pinned`): its descriptor (-1 where the system cannot run one) and
    the status of the very file run."""

    fd: int
    st: os.stat_result


def pin(path: str) -> Program:
    """Open the program at `path`, links resolved, without following one more (O_PATH: a FIFO or
    device is not opened); refused (OSError) unless a regular file. The caller closes it."""
    real = os.path.realpath(path)
    o_path = getattr(os, "O_PATH", 0)
    if not o_path or not os.path.isdir("/proc/self/fd"):  # (no running by descriptor here)
        st = os.stat(real, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{real} is not a regular file")
        return Program(-1, st)
    fd = os.open(real, o_path | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{real} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return Program(fd, st)


@contextlib.contextmanager
def pinned(path: str) -> Iterator[Program]:
    """`pin`, closed when the block ends."""
    program = pin(path)
    try:
        yield program
    finally:
        if program.fd >= 0:
            os.close(program.fd)


def owner_of(program: Program) -> Account | None:
    """Whom a program runs as when root judges it by its file alone: its owner (with their primary
    group) when someone else's; None (as we are) when ours or when we are not root."""
    if os.geteuid() != 0 or program.st.st_uid == 0:
        return None
    return user(program.st.st_uid)


def secret(name: str) -> bool:
    """A name no program senpi-guard starts is ever given: a token, npm's auth settings included."""
    upper = name.upper()
    return upper.endswith("_TOKEN") or "_AUTHTOKEN" in upper or upper.endswith("_AUTH")


def passed(name: str, npm: bool = False) -> bool:
    """Whether our own `name` passes to a program we start (to npm when `npm`)."""
    if secret(name):
        return False
    return name in PASSED or name.startswith(PASSED_PREFIXES) or (npm and name in NPM_PASSED)


def environment(npm: bool = False, own: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed part of our environment, then the caller's `own` values over it; no token."""
    env = {name: value for name, value in os.environ.items() if passed(name, npm)}
    env.update(own or {})
    return {name: value for name, value in env.items() if not secret(name)}


def popen_kwargs(
    account: Account | None, npm: bool = False, own: Mapping[str, str] | None = None, program: Program | None = None
) -> dict[str, Any]:
    """subprocess's arguments to run a program as `account` (None: as we are), with no
    supplementary group, in `environment(npm, own)`; the file run is `program` (pinned) when given,
    whatever argv[0] names now."""
    kwargs: dict[str, Any] = {"env": environment(npm, own)}
    if account is not None:
        kwargs.update(user=account.uid, group=account.gid, extra_groups=[])
    if program is not None and program.fd >= 0:
        kwargs.update(executable=f"/proc/self/fd/{program.fd}", pass_fds=(program.fd,))
    return kwargs


def drop(account: Account) -> None:
    """(In a forked child.) Become `account` for good: no supplementary group, group first."""
    os.setgroups([])
    os.setresgid(account.gid, account.gid, account.gid)
    os.setresuid(account.uid, account.uid, account.uid)
