"""Find installed @code-yeongyu/senpi packages: every package manager, node version manager and
the `senpi` on PATH."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard.errors import FatalError
from senpi_guard.io import answers, made

PACKAGE_NAME = "@code-yeongyu/senpi"
SCOPED = Path("@code-yeongyu") / "senpi"
# a package's folder in a pnpm store (pnpm 10+ `store/v<N>/links/…`, older `.pnpm/…` of a global
# dir): an install only while a project links it, which `pnpm root -g` finds; an update leaves the
# old version there
PNPM_STORE = re.compile(r"/store/v\d+/links/|/\.pnpm/")
BINARY_MAGICS = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe", b"MZ")


@dataclass(frozen=True)
class Install:
    package_dir: Path
    version: str
    manager: str
    unsupported: str | None = None

    @property
    def real_dir(self) -> Path:
        return Path(os.path.realpath(self.package_dir))


@dataclass
class Discovery:
    installs: list[Install] = field(default_factory=list)
    searched: list[str] = field(default_factory=list)


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
    changed: bool = False

    @classmethod
    def load(cls, path: Path, max_age: float) -> ProbeCache:
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
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
        answers.expire(when + self.max_age)  # (what a status says with it is as old as it)
        return True, answer

    def put(self, argv: list[str], answer: str | None) -> None:
        self.answers[self.key(argv)] = [time.time(), answer, answer is not None and Path(answer).is_dir()]
        self.changed = True

    def save(self) -> None:
        if self.changed and made.below_own(self.path.parent):  # (as io/memo: only below a folder of ours)
            from senpi_guard.io.write import write_private

            # a cache that cannot be written only costs the next run a probe
            with contextlib.suppress(FatalError):
                write_private(self.path, json.dumps(self.answers).encode())


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


def _probe_all(max_age: float, cache: ProbeCache | None) -> dict[tuple[str, ...], str | None]:
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
    home, env = _home(), os.environ
    data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
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
# global folder they name does not depend on it).
QUIET_PROBES = {"npm_config_logs_max": "0", "npm_config_update_notifier": "false"}


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
    env = {**quiet_env(), "npm_config_cache": scratch, "YARN_CACHE_FOLDER": scratch}
    env.pop("NPM_CONFIG_CACHE", None)
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


def _probe_dir() -> str:
    home = _home()
    return str(home) if home.is_dir() else "/"


def read_manifest(package_dir: Path) -> dict | None:
    try:
        data = json.loads((package_dir / "package.json").read_text("utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: absurdly deep JSON
        return None
    return data if isinstance(data, dict) else None


def guess_manager(path: Path) -> str:
    text = str(path)
    if "/.pnpm/" in text or "/pnpm/" in text or "/store/v" in text:
        return "pnpm"
    if "/.bun/" in text or "/install/global/" in text:
        return "bun"
    if "/yarn/" in text or "/.yarn/" in text:
        return "yarn"
    for tool in ("nvm", "fnm", "volta", "asdf"):
        if f"/.{tool}/" in text or f"/{tool}/" in text:
            return f"npm ({tool})"
    return "npm"


def describe(package_dir: Path, manager: str | None = None) -> Install | None:
    manifest = read_manifest(package_dir)
    if manifest is None or manifest.get("name") != PACKAGE_NAME:
        return None
    version = str(manifest.get("version", "unknown"))
    manager = manager or guess_manager(Path(os.path.realpath(package_dir)))
    if not (package_dir / "dist").is_dir():
        return Install(package_dir, version, manager, "the package has no dist/ folder")
    return Install(package_dir, version, manager)


def explicit(roots: Iterable[Path]) -> Discovery:
    found = Discovery()
    for root in roots:
        root = Path(os.path.abspath(root))
        found.searched.append(str(root))
        if not root.exists():
            raise FatalError(
                f"--root {root}: no such directory; pass the senpi package dir "
                f"(the folder holding its package.json), e.g. $(npm root -g)/{SCOPED}"
            )
        install = describe(root)
        if install is None:
            raise FatalError(
                f"--root {root}: not a {PACKAGE_NAME} package (package.json missing "
                "or names another package); pass the senpi package dir"
            )
        found.installs.append(install)
    return found


def _glob_dirs(base: Path, pattern: str) -> list[Path]:
    return sorted(p for p in base.glob(pattern) if p.is_dir()) if base.is_dir() else []


def _home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def candidate_dirs(answers: dict[tuple[str, ...], str | None]) -> Iterator[tuple[str, str, Path]]:
    """(manager, how it was found, package dir candidate), given the package managers' answers."""
    npm_root = answers.get(("npm", "root", "-g"))
    if npm_root:
        yield "npm", "npm root -g", Path(npm_root) / SCOPED
    pnpm_root = answers.get(("pnpm", "root", "-g"))
    if pnpm_root:
        root = Path(pnpm_root)
        yield "pnpm", "pnpm root -g", root / SCOPED
        for project in _glob_dirs(root, "*"):
            yield "pnpm", "pnpm root -g", project / "node_modules" / SCOPED
    yarn_dir = answers.get(("yarn", "global", "dir"))
    if yarn_dir:
        yield "yarn", "yarn global dir", Path(yarn_dir) / "node_modules" / SCOPED
    bun_home = Path(os.environ.get("BUN_INSTALL") or _home() / ".bun")
    yield "bun", "$BUN_INSTALL", bun_home / "install" / "global" / "node_modules" / SCOPED
    nvm = Path(os.environ.get("NVM_DIR") or _home() / ".nvm")
    for version in _glob_dirs(nvm, "versions/node/*"):
        yield "npm (nvm)", "$NVM_DIR", version / "lib" / "node_modules" / SCOPED
    fnm_dirs = [
        os.environ.get("FNM_DIR"),
        _home() / ".local/share/fnm",
        _home() / ".fnm",
        _home() / "Library/Application Support/fnm",
    ]
    for fnm in filter(None, fnm_dirs):
        for version in _glob_dirs(Path(fnm), "node-versions/*/installation"):
            yield "npm (fnm)", "fnm", version / "lib" / "node_modules" / SCOPED
    volta = Path(os.environ.get("VOLTA_HOME") or _home() / ".volta")
    yield ("npm (volta)", "$VOLTA_HOME", volta / "tools/image/packages" / SCOPED / "lib/node_modules" / SCOPED)
    for version in _glob_dirs(volta, "tools/image/node/*"):
        yield "npm (volta)", "$VOLTA_HOME", version / "lib" / "node_modules" / SCOPED
    asdf = Path(os.environ.get("ASDF_DATA_DIR") or _home() / ".asdf")
    for version in _glob_dirs(asdf, "installs/nodejs/*"):
        yield "npm (asdf)", "$ASDF_DATA_DIR", version / "lib" / "node_modules" / SCOPED


def _package_of_cli(cli: Path) -> Path | None:
    if cli.name == "cli.js" and cli.parent.name == "dist":
        return cli.parent.parent
    return None


def on_path(name: str) -> list[Path]:
    """Every executable `name` on PATH, in PATH order: not only the first, which the shell runs
    (an install shadowed by an earlier folder is still installed, and may be patched)."""
    found = []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        exe = shutil.which(name, path=folder) if folder else None
        if exe is not None and Path(exe) not in found:
            found.append(Path(exe))
    return found


def from_path_command(exe: Path) -> tuple[Path | None, Install | None]:
    """Follow one `senpi` (or `pi`) found on PATH through symlinks, pnpm shims and bun launchers."""
    real = Path(os.path.realpath(exe))
    package = _package_of_cli(real)
    if package is not None:
        return package, None
    try:
        with real.open("rb") as handle:
            head = handle.read(1 << 16)
    except OSError:
        return None, None
    if head.startswith(b"#!"):
        return _package_of_script(real, head.decode("utf-8", "replace")), None
    if head.startswith(BINARY_MAGICS) and _mentions_senpi(real):
        return None, Install(
            real,
            "unknown",
            "bun (compiled binary)",
            "a bun-compiled single binary has no dist/ to patch; install senpi "
            "from npm (npm install -g @code-yeongyu/senpi) to use senpi-guard",
        )
    return None, None


def _package_of_script(script: Path, text: str) -> Path | None:
    """A pnpm shim (`# cmd-shim-target=` or `"$basedir"/'…/dist/cli.js'`) or bun's launcher
    (`exec '<bun>' '<pkg>/dist/cli.js'`)."""
    shim = re.search(r"^# cmd-shim-target=(.+)$", text, re.MULTILINE)
    named = [shim[1].strip()] if shim else []
    named += re.findall(r"""['"]?([^'"\s]*/dist/cli\.js)['"]?""", text)
    for name in named:
        candidate = Path(name) if name.startswith("/") else script.parent / name.lstrip("/")
        package = _package_of_cli(Path(os.path.realpath(candidate)))
        if package is not None and read_manifest(package) is not None:
            return package
    return None


def _mentions_senpi(path: Path) -> bool:
    needle = PACKAGE_NAME.encode()
    tail = b""
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            if needle in tail + chunk:
                return True
            tail = chunk[-len(needle) :]
    return False


def discover(
    max_age: float = 0.0, cache: ProbeCache | None = None, recorded: Iterable[Path] = (), store_copies: bool = False
) -> Discovery:
    """Every install; `max_age` lets a long-running caller reuse package managers' answers, and
    `cache` lets short runs share them; `recorded`: the package dirs senpi-guard's state records
    (patched once, maybe with --root: still there, still to be reported and reverted). A recorded
    one pnpm left in its store (removed or updated since) is no install, but with `store_copies`
    (revert, uninstall) it is one to revert: pnpm gives that folder back to the next install of
    its version."""
    found = Discovery()
    answers = _probe_all(max_age, cache)
    seen: set[Path] = set()

    def add(install: Install | None) -> None:
        if install is None:
            return
        key = install.real_dir
        if key not in seen:
            seen.add(key)
            found.installs.append(install)

    for manager, how, path in candidate_dirs(answers):
        found.searched.append(f"{path} ({how})")
        if (path / "package.json").is_file():
            add(describe(path, manager))
    for command in ("senpi", "pi"):
        found.searched.append(f"`{command}` in every PATH folder")
        for exe in on_path(command):
            package, unsupported = from_path_command(exe)
            if package is not None:
                add(describe(package))
            add(unsupported)
    for package in recorded:
        if store_copies or not PNPM_STORE.search(package.as_posix()):
            found.searched.append(f"{package} (recorded in senpi-guard's state)")
            add(describe(package))
    return found
