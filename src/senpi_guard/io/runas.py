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
  in a process's environment can be read in its /proc/<pid>/environ."""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
from collections.abc import Mapping
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


def popen_kwargs(account: Account | None, npm: bool = False, own: Mapping[str, str] | None = None) -> dict[str, Any]:
    """subprocess's arguments to run a program as `account` (None: as we are), with no
    supplementary group, in `environment(npm, own)`."""
    kwargs: dict[str, Any] = {"env": environment(npm, own)}
    if account is not None:
        kwargs.update(user=account.uid, group=account.gid, extra_groups=[])
    return kwargs


def drop(account: Account) -> None:
    """(In a forked child.) Become `account` for good: no supplementary group, group first."""
    os.setgroups([])
    os.setresgid(account.gid, account.gid, account.gid)
    os.setresuid(account.uid, account.uid, account.uid)
