"""Where an install's extension goes: the agent dir senpi uses when started in its user's home (the
one senpi-guard installs into) and the one it uses from the current folder (`apply --here`),
resolved in the environment of the user whose senpi it serves (never root's own by accident)."""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass
from pathlib import Path

from senpi_guard.core import agentdir
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError


@dataclass(frozen=True)
class Placement:
    """One install's agent dirs: the one senpi-guard installs into, and the one senpi uses from here."""

    install: Install
    user: agentdir.Resolved | None
    here: agentdir.Resolved | None
    error: str = ""
    here_error: str = ""  # (as root) why `apply --here` may not write in `here`


def _env() -> dict[str, str]:
    return dict(os.environ)


def _cwd() -> Path | None:
    try:
        return Path(os.getcwd())
    except OSError:  # a deleted folder: senpi itself would start from the home folder
        return None


def served_env(install: Install) -> tuple[dict[str, str], str]:
    """The environment the agent dir is resolved in: ours, except that root (under sudo, or over
    another user's senpi) resolves it in the home of the user whose senpi it serves, never in its own
    by accident; and a line when that user cannot be told."""
    env = _env()
    if os.geteuid() != 0:
        return env, ""
    uid = _owner(install)
    sudo = env.get("SUDO_UID", "")
    if uid == 0 and sudo.isdigit():
        uid = int(sudo)  # root's own senpi, patched by a user through sudo: that user's agent dir
    if uid == 0:
        return env, ""
    try:
        return {**env, "HOME": pwd.getpwuid(uid).pw_dir}, ""
    except KeyError:
        return env, (
            f"senpi {install.version} at {install.package_dir}: the extension layer is skipped: its "
            f"user (uid {uid}) has no entry in the user database to find its agent dir; run "
            "apply as that user, or set SENPI_CODING_AGENT_DIR"
        )


def _not_owned(top: Path, path: Path, uid: int) -> str:
    """The first folder there from `top` down to `path` (no link followed) that `uid` does not own,
    said ("": none)."""
    chain = [top]
    for name in path.relative_to(top).parts:
        chain.append(chain[-1] / name)
    for folder in chain:
        try:
            owner = os.lstat(folder).st_uid
        except FileNotFoundError:
            return "" if folder != top else f"in {top}, which does not exist"
        except OSError as exc:
            return f"in {folder}, which cannot be looked at ({exc.strerror})"
        if owner != uid:
            return f"in {folder}, which belongs to uid {owner}, not to uid {uid}"
    return ""


def _owner(install: Install) -> int:
    """The uid of the user whose senpi it is (0 when it cannot be told)."""
    try:
        return os.stat(os.path.realpath(install.package_dir)).st_uid
    except OSError:
        return 0


def placement(install: Install) -> Placement:
    if install.unsupported:
        return Placement(install, None, None, install.unsupported)
    env, problem = served_env(install)
    home = agentdir.node_home(env)
    try:
        rule = agentdir.rule_for(install.package_dir)
        user = agentdir.user_agent_dir(rule, env, home)
        cwd = _cwd()
        here = agentdir.resolve(rule, env, cwd, home) if cwd is not None else user
    except FatalError as exc:
        return Placement(install, None, None, f"senpi {install.version} at {install.package_dir}: {exc}")
    if problem and user.how == "default":  # (an agent-dir variable names it: no home is needed)
        return Placement(install, None, None, problem)
    refused = _outside_users_home(install, user, home)
    if refused:
        return Placement(install, None, None, refused)
    return Placement(install, user, here, here_error=_outside_users_home(install, here, home))


def _outside_users_home(install: Install, resolved: agentdir.Resolved, home: str) -> str:
    """Why root may not write in an agent dir that another user's senpi makes of its own config ("":
    it may). Such a path (the home folder or a project, then the user's piConfig.configDir from
    their package.json) is accepted only inside that user's home, in folders that user owns: a
    configDir with `..` named a root-only folder, or root's own agent dir. An agent-dir variable is
    root's own choice and stays as it is."""
    if os.geteuid() != 0 or resolved.how not in ("default", "project"):
        return ""
    uid = _owner(install)
    if uid == 0:
        return ""  # (root's own senpi: its config is root's, even when it serves a user through sudo)
    path, top = Path(resolved.path), Path(os.path.normpath(home))
    if top == Path("/") or not path.is_relative_to(top):
        wrong = f"outside the home folder {top} of uid {uid}"
    else:
        wrong = _not_owned(top, path, uid)
    if not wrong:
        return ""
    return (
        f"senpi {install.version} at {install.package_dir}: the extension layer is skipped: its agent dir "
        f"{path}, made of its owner's config (piConfig.configDir in its package.json), is {wrong}; as root "
        "senpi-guard writes only in that user's own folders: fix that configDir, or run apply as that user"
    )
