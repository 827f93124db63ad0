"""Asking the package managers where their global folders are (`npm root -g`, `pnpm root -g`,
`yarn global dir`): all at once, each answer kept a while (in memory for the watcher, in a file
for read-only commands), and so that a question leaves nothing behind in the user's folders."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard.errors import FatalError
from senpi_guard.io import made, reader


def home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


_ANSWERS: dict[tuple[str, ...], tuple[float, str | None]] = {}
# what a package manager's answer depends on besides its arguments
PROBE_ENV = (
    "PATH",
    "HOME",
    "NPM_CONFIG_PREFIX",
    "npm_config_prefix",
    "PNPM_HOME",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "PREFIX_YARN",
    "YARN_GLOBAL_FOLDER",
)
PROBES = (["npm", "root", "-g"], ["pnpm", "root", "-g"], ["yarn", "global", "dir"])


@dataclass
class ProbeCache:
    """Package managers' answers kept in a file between runs (wall-clock ages), so that a plain
    `status` spawns `npm root -g` at most once per `max_age`. An answer naming a folder that was
    there when it was given and is gone now is asked again; one naming a folder that was not there
    (a node whose global folder was never made: nothing to find in it) is kept for its age."""

    path: Path
    max_age: float
    answers: dict[str, list] = field(default_factory=dict)
    asked: dict[str, list] = field(default_factory=dict)  # this run's answers, saved over the file's

    @classmethod
    def load(cls, path: Path, max_age: float) -> ProbeCache:
        try:
            if made.foreign(path.parent) is not None:  # (as root: a cache another user could write is not used)
                raise reader.Refused(str(path))
            data = json.loads(reader.read(path, reader.STATE))
        except (OSError, ValueError, reader.Refused):
            data = {}
        return cls(path, max_age, data if isinstance(data, dict) else {})

    @staticmethod
    def key(argv: list[str]) -> str:
        return json.dumps([argv, [os.environ.get(name) for name in PROBE_ENV]])

    def get(self, argv: list[str]) -> tuple[bool, str | None]:
        hit = self.answers.get(self.key(argv))
        if not (isinstance(hit, list) and len(hit) == 3 and isinstance(hit[0], int | float)):
            return False, None
        when, answer, was_there = hit
        fresh = 0 <= time.time() - when < self.max_age
        usable = answer is None or (isinstance(answer, str) and (Path(answer).is_dir() or was_there is False))
        if not (fresh and usable):
            return False, None
        return True, answer

    def put(self, argv: list[str], answer: str | None) -> None:
        self.answers[self.key(argv)] = [time.time(), answer, answer is not None and Path(answer).is_dir()]
        self.asked[self.key(argv)] = self.answers[self.key(argv)]

    def save(self) -> None:
        if self.asked and made.below_own(self.path.parent):  # (as io/memo: only below a folder of ours)
            from senpi_guard.io.locks import memo_lock
            from senpi_guard.io.write import write_private

            with memo_lock(self.path.parent):  # (what another run asked meanwhile is kept)
                merged = {**ProbeCache.load(self.path, self.max_age).answers, **self.asked}
                # a cache that cannot be written only costs the next run a probe
                with contextlib.suppress(FatalError):
                    write_private(self.path, json.dumps(merged).encode())


def _run(argv: list[str], max_age: float = 0.0) -> str | None:
    """A package manager's one-line answer (None when it is missing or fails); with max_age, an
    answer younger than that is reused (the watcher asks often, the answers rarely change)."""
    key = (os.environ.get("PATH", ""), *argv)
    cached = _ANSWERS.get(key)
    if max_age and cached and time.monotonic() - cached[0] < max_age:
        return cached[1]
    answer = _ask(argv)
    _ANSWERS[key] = (time.monotonic(), answer)
    return answer


def probe_all(max_age: float, cache: ProbeCache | None) -> dict[tuple[str, ...], str | None]:
    """Every package manager's answer, asked all at once (each takes a few hundred ms to start);
    from the file cache when it has a fresh one."""
    answers: dict[tuple[str, ...], str | None] = {}
    pending = []
    for argv in PROBES:
        known, answer = cache.get(argv) if cache else (False, None)
        if known:
            answers[tuple(argv)] = answer
        else:
            pending.append(argv)

    def ask(argv: list[str]) -> None:
        answers[tuple(argv)] = _run(argv, max_age)

    threads = [threading.Thread(target=ask, args=(argv,)) for argv in pending]
    missing = [folder for argv in pending for folder in _probe_made(argv)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if missing:  # (the folders a question made are senpi-guard's: uninstall takes them away when empty)
        made.record((folder for folder in missing if folder.is_dir()), in_cache=True)
    if cache and pending:
        for argv in pending:
            cache.put(argv, answers[tuple(argv)])
        cache.save()
    return answers


def _pnpm_bin() -> Path:
    """pnpm's global bin folder, which asking pnpm makes when it is missing (measured on pnpm 12)."""
    env = os.environ
    data = Path(env.get("XDG_DATA_HOME") or _probe_home() / ".local" / "share")
    return Path(env.get("PNPM_HOME") or data / "pnpm") / "bin"


def _probe_made(argv: list[str]) -> list[Path]:
    """The folders, missing now, that asking this package manager makes in the user's folders:
    pnpm's global bin folder and the parents it needs (npm's and yarn's caches go to a scratch
    folder of the question's own: `_ask`)."""
    if argv[0] != "pnpm" or not shutil.which("pnpm"):
        return []
    return made.missing_chain(_pnpm_bin())


# A question to a package manager leaves nothing behind: npm writes a debug log per run otherwise
# (~/.npm/_logs), and checks for its own updates; npm and yarn make their cache folder (~/.npm, one
# named in ~/.npmrc, yarn's v6/.tmp), so theirs is a scratch folder, removed after the answer (the
# global folder they name does not depend on it). npm on node >= 22 turns on node's compile cache,
# in $TMPDIR/node-compile-cache: the first to make that folder owns it (0755), and no other user's
# node can keep its cache there (a second user's senpi start: +0.25 s CPU, measured); no time
# measurable is lost without it (npm root -g, node 24).
QUIET_PROBES = {
    "npm_config_logs_max": "0",
    "npm_config_update_notifier": "false",
    "NODE_DISABLE_COMPILE_CACHE": "1",
}


def quiet_env() -> dict[str, str]:
    return {**os.environ, **QUIET_PROBES}


def _refused_probe(argv: list[str]) -> bool:
    """Asking pnpm would make its missing bin folder where the folder above is not ours (root
    with a user's HOME): not asked, and no global install can be there (pnpm makes that folder
    on its first global install)."""
    chain = _probe_made(argv)
    return bool(chain) and not made.below_own(chain[0])


def _ask(argv: list[str]) -> str | None:
    exe = shutil.which(argv[0])
    if exe is None or _refused_probe(argv):
        return None
    scratch = tempfile.mkdtemp(prefix="senpi-guard-probe-")
    env = {**quiet_env(), "npm_config_cache": scratch, "YARN_CACHE_FOLDER": scratch, "HOME": str(_probe_home())}
    env.pop("NPM_CONFIG_CACHE", None)
    for name in USER_RC if os.geteuid() == 0 else ():  # (as root: no rc file another user could change)
        if env.get(name) and made.foreign(Path(env[name])) is not None:
            env.pop(name)
    try:
        # from HOME: a .npmrc/.yarnrc where the user stands must not point discovery elsewhere
        result = subprocess.run(
            [exe, *argv[1:]],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
            stdin=subprocess.DEVNULL,
            cwd=_probe_dir(),
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = result.stdout.strip().splitlines()
    return out[-1].strip() if result.returncode == 0 and out else None


# where a package manager finds its user's rc files (npm's .npmrc, pnpm's rc, yarn's .yarnrc)
USER_RC = ("NPM_CONFIG_USERCONFIG", "npm_config_userconfig", "NPM_CONFIG_GLOBALCONFIG", "npm_config_globalconfig")
USER_RC += ("XDG_CONFIG_HOME",)


def _probe_home() -> Path:
    """The HOME a package manager is asked with: as root, a HOME another user could change (root run
    with theirs: `sudo -E`) is not used, root's own from the user database instead: yarn 1 runs the
    program a ~/.yarnrc `yarn-path` names, and npm's and pnpm's rc files steer them."""
    folder = home()
    if os.geteuid() == 0 and made.foreign(folder) is not None:
        return Path(pwd.getpwuid(0).pw_dir)
    return folder


def _probe_dir() -> str:
    """Where it is asked from: as root `/` (an rc file where the user stands steers nothing), else HOME."""
    folder = _probe_home()
    return str(folder) if os.geteuid() != 0 and folder.is_dir() else "/"
