"""Find installed @code-yeongyu/senpi packages: every package manager, node version manager and
the `senpi` on PATH."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from senpi_guard import probes
from senpi_guard.errors import FatalError
from senpi_guard.io import reader
from senpi_guard.io.visible import visible
from senpi_guard.probes import QUIET_PROBES, ProbeCache  # noqa: F401 (commands reach them here)

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


def read_manifest(package_dir: Path) -> dict | None:
    """package.json's object (None: absent, unreadable, not JSON); one senpi-guard does not read
    (a FIFO, a device, another user's link, past its cap) is refused: reader.Refused."""
    try:
        data = json.loads(reader.read(package_dir / "package.json", reader.MANIFEST))
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
    """The install at `package_dir` (None: no senpi there); one whose package.json senpi-guard
    refuses to read is one it cannot use, and says why."""
    manager = manager or guess_manager(Path(os.path.realpath(package_dir)))
    try:
        manifest = read_manifest(package_dir)
    except reader.Refused as exc:
        return Install(package_dir, "unknown", manager, str(exc))
    if manifest is None or manifest.get("name") != PACKAGE_NAME:
        return None
    # (escaped here, once: the version is only ever shown or compared, and is said in many messages)
    version = visible(str(manifest.get("version", "unknown")))
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


_home = probes.home


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
        head = reader.head(real, reader.PROGRAM, 1 << 16)
    except (OSError, reader.Refused):  # (a FIFO or a device on PATH: no senpi)
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
        with contextlib.suppress(reader.Refused):  # (a package.json not read: not that shim's package)
            if package is not None and read_manifest(package) is not None:
                return package
    return None


def _mentions_senpi(path: Path) -> bool:
    needle = PACKAGE_NAME.encode()
    tail = b""
    with reader.opened(path, reader.PROGRAM) as handle:
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
    answers = probes.probe_all(max_age, cache)
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
