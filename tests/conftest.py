from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from senpi_guard.cli import main
from senpi_guard.core.patch import apply as edit
from senpi_guard.demo import sample

# the real tier's fixtures (tests/realsenpi.py); the hostile tests' user, folders and CI rule; the
# watcher as a process (tests/watching.py); the run's own HOME (tests/runhome.py)
pytest_plugins = ("runhome", "realsenpi", "hostile.plugin", "watching")

SHAPE_REL = {
    1: "dist/core/extensions/builtin/claude-agent-sdk/prompt-bridge.js",
    2: "dist/core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js",
    3: "dist/core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js",
}
UPSTREAM_REL = "dist/core/extensions/builtin/claude-sdk-oauth/prompt-directive-dedupe.js"

# The ceiling of every wait in the tests: what only a hang reaches, never a slow or busy machine
# (at load 10 on 2 cores a 30 s wait for the watcher's report ran out). A wait ends on its event;
# a test that proves something did NOT happen waits for the process's own next step instead (the
# watcher's next round: tests/watching.py), never for a length of time.
HANG_S = 600.0


@pytest.fixture(scope="session", autouse=True)
def temp_folders_laid_out_like_installs(tmp_path_factory):
    """As root, pytest's temp folders (0700) become 0755, as the global prefixes senpi is installed
    in are: a replay then runs as `nobody` there, as it does on a real root install, instead of
    falling back to root with a note (that fallback, for a 077 install, has tests of its own under
    tests/hostile, which make their folders themselves)."""
    if os.geteuid() != 0:
        yield
        return
    base = tmp_path_factory.getbasetemp()
    # pytest-of-<user> down to this run's folder (under xdist, one more level: popen-gwN); with
    # --basetemp, that folder alone (never a shared parent such as /tmp)
    chain = [*reversed(base.parents), base]
    given = len(chain) - (2 if os.environ.get("PYTEST_XDIST_WORKER") else 1)  # (--basetemp's own folder)
    top = next((i for i, folder in enumerate(chain) if folder.name.startswith("pytest-of-")), given)
    ancestors = chain[top:]
    made = pytest.TempPathFactory.mktemp

    def mktemp(self, basename: str, numbered: bool = True) -> Path:
        path = made(self, basename, numbered)
        # (again each time: another pytest on this machine makes pytest-of-<user> private again)
        for folder in (*ancestors, path):
            folder.chmod(0o755)
        return path

    pytest.TempPathFactory.mktemp = mktemp
    yield
    pytest.TempPathFactory.mktemp = made


@pytest.fixture(autouse=True)
def isolated_dirs(run_home, tmp_path_factory, monkeypatch):
    """senpi-guard's config, data and state go to temp dirs (through the XDG variables), and the
    test leaves the run's HOME (tests/runhome.py) as it found it: a test that undoes the isolation
    here, or a process it starts with HOME alone, would write there."""
    home = tmp_path_factory.mktemp("xdg")
    for key in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(key, str(home / key.lower()))
    monkeypatch.delenv("SENPI_GUARD_CONFIG", raising=False)
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(home / "agent"))  # where the extension goes
    import runhome  # (loaded as a plugin: an import at the top would skip its assert rewriting)

    before = runhome.tree(run_home)
    yield home
    changed = runhome.what_changed(before, runhome.tree(run_home))
    assert not changed, f"this test wrote into the run's HOME {run_home} (no test owns it): {changed[:20]}"


@pytest.fixture(scope="session")
def tarballs(tmp_path_factory) -> dict[int, Path]:
    """The three sample shapes, packed once with the real `npm pack`."""
    out = tmp_path_factory.mktemp("tarballs")
    packs = {}
    for shape in (1, 2, 3):
        src = out / f"src{shape}"
        sample.write_sample_package(src, shape)
        packs[shape] = sample.npm_pack(src, out)
    return packs


@pytest.fixture
def npm_install(tarballs, tmp_path, tmp_path_factory) -> Callable[..., Path]:
    """A sample shape as the real `npm install -g --prefix TMP` leaves it; returns the package dir.
    Each shape is installed with npm once per run (as the run: npm's HOME and cache in the run's
    folder, not the test's) and copied (cp -a) into a new prefix of the test's own. A tarball of the
    test's own, a prefix that already exists (an install over another, as `senpi update` runs it)
    or through_npm=True (npm run as the test's user, leaving its ~/.npm) goes through npm itself."""
    import realsenpi  # (loaded as a plugin: an import at the top would skip its assert rewriting)

    counter = iter(range(100))

    def install(
        shape: int = 2, tarball: Path | None = None, prefix: Path | None = None, through_npm: bool = False
    ) -> Path:
        prefix = prefix or tmp_path / f"prefix{next(counter)}"
        if tarball is not None or prefix.exists() or through_npm:
            return sample.npm_install_global(tarball or tarballs[shape], prefix)
        return realsenpi.installed_once(tmp_path_factory, f"sample-shape{shape}", tarballs[shape], prefix)

    return install


@pytest.fixture
def custom_package(tmp_path) -> Callable[..., Path]:
    """Pack and install a package whose prompt-bridge.js is the given source."""

    def make(bridge_source: str, shape: int = 2, version: str = "2026.8.1") -> Path:
        src = tmp_path / f"custom-src-{version}"
        sample.write_sample_package(src, shape, version, fillers=20, bridge_source=bridge_source)
        tarball = sample.npm_pack(src, tmp_path / "custom-packs")
        return sample.npm_install_global(tarball, tmp_path / f"custom-prefix-{version}")

    return make


def rows_of(doc: dict, patch: str = "directive-dedupe") -> list[dict]:
    """apply/verify/revert --json report one row per install and patch: those of one patch."""
    return [row for row in doc["installs"] if row.get("patch", patch) == patch]


def cli(*args: str | Path) -> int:
    return main([str(a) for a in args])


def run_cli(capsys, *args: str | Path) -> tuple[int, str, str]:
    code = cli(*args)
    out, err = capsys.readouterr()
    return code, out, err


def run_console(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = HANG_S
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "senpi_guard", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def kb(size: int) -> str:
    """A size as the extension's status line and the CLI say it (SI units)."""
    from senpi_guard import ui

    return ui.size(size)


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under root (to prove nothing changed; {} when there is no root): the one
    byte-exact comparison of a tree before and after."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def tree_entries(root: Path) -> dict[str, bytes | None]:
    """Every folder (None) and file (its bytes) under root: a tree left byte-exact, folders too."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


REPO = Path(__file__).resolve().parents[1]
MANAGER_VARS = (
    "NPM_CONFIG_PREFIX",
    "npm_config_prefix",
    "PNPM_HOME",
    "BUN_INSTALL",
    "NVM_DIR",
    "FNM_DIR",
    "VOLTA_HOME",
    "ASDF_DATA_DIR",
    "YARN_GLOBAL_FOLDER",
)


def tool(name: str) -> str:
    """A real package manager: on PATH, or installed by .ci/run into .ci/tools."""
    found = shutil.which(name) or shutil.which(name, path=str(REPO / ".ci/tools/node_modules/.bin"))
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing: .ci/run installs it into .ci/tools")
        pytest.skip(f"{name} not installed (run .ci/run once, or npm i --prefix .ci/tools {name})")
    return found


@pytest.fixture
def env(monkeypatch, tmp_path):
    """A machine with nothing installed: own HOME, no manager variables, only node/npm on PATH."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in MANAGER_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NPM_CONFIG_PREFIX", str(tmp_path / "npm-global"))
    bins = {str(Path(shutil.which(t)).parent) for t in ("node", "npm")}
    monkeypatch.setenv("PATH", os.pathsep.join([*sorted(bins), "/bin"]))
    return tmp_path


def field(out: str, label: str) -> str:
    """A field of a text block (`  label   text`, wrapped under its first word) as one line of text;
    "" when no line has that label."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        head = re.match(rf"  {re.escape(label)}( +|$)", line)
        if head:
            indent = len(head[0]) if line[len(head[0]) :] else None
            words = [line[len(head[0]) :]]
            for more in lines[i + 1 :]:
                lead = len(more) - len(more.lstrip(" "))
                if not more.strip() or lead < 4 or (indent is not None and lead != indent):
                    break
                indent = lead
                words.append(more.strip())
            return " ".join(w for w in words if w)
    return ""


def write_user_config(isolated_dirs: Path, text: str) -> Path:
    """The user's config.toml, where senpi-guard looks for it (XDG_CONFIG_HOME of isolated_dirs)."""
    config = isolated_dirs / "xdg_config_home" / "senpi-guard" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)
    return config


def add_path(monkeypatch, *dirs: Path | str) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join([*map(str, dirs), os.environ["PATH"]]))


@pytest.fixture
def given_tmp(tmp_path, monkeypatch) -> Path:
    """The temp folder (TMPDIR) of this test's processes, laid out as /tmp (the runner's, sticky,
    anyone may write): a test then sees what they leave in it."""
    folder = tmp_path / "given-tmp"
    folder.mkdir()
    folder.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


# ---- the watcher, run as a real process ---------------------------------------------------


def wait_for(predicate, timeout: float = HANG_S, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def patched(path: Path) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return False
    header = edit.read_header(data)
    return header is not None and b"// senpi-guard: end directive-dedupe" in data


def npm_update(tarball: Path, prefix: Path) -> None:
    """What `senpi update` runs for npm installs."""
    subprocess.run(
        ["npm", "install", "-g", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", str(prefix), str(tarball)],
        check=True,
        capture_output=True,
    )


def node_check(path: Path) -> None:
    subprocess.run(["node", "--check", str(path)], check=True, capture_output=True)


def harness_processes(parent: int) -> list[int]:
    """The node replays that `parent` started (by /proc: their parent pid and command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if b"harness.mjs" in cmdline and ppid == parent:
                found.append(int(entry.name))
    return found


# A hand-applied hot-fix like the one in the bug report (our own text), for hand-patched files.
HAND_FIX = """
function dedupeRepeatedDirectiveBlocks(blocks) {
    const seen = new Set();
    return blocks.map((block) => {
        if (block.type !== "text") return block;
        const text = block.text.replace(/<ultrawork-mode>[\\s\\S]*?<\\/ultrawork-mode>/g, (m) => {
            if (seen.has(m)) return "[repeated ultrawork-mode omitted]";
            seen.add(m);
            return m;
        });
        return { ...block, text };
    });
}
"""


def hand_patched(base: str) -> str:
    body, _, source_map = base.rpartition("//# sourceMappingURL=")
    body = body.replace("    return blocks;\n}", "    return dedupeRepeatedDirectiveBlocks(blocks);\n}")
    return body + HAND_FIX.lstrip("\n") + "//# sourceMappingURL=" + source_map


_OWN_BASETEMP = pytest.StashKey[Path]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    _own_basetemp(config)


def _own_basetemp(config) -> None:
    """As root, this run's temp folders go in a folder of its own in the temp folder, removed when
    the run ends (`--basetemp DIR` keeps them). Under pytest's default, /tmp/pytest-of-root, they
    are at the mercy of every other pytest started on the machine meanwhile: each makes that folder
    0700 again, and `nobody`, whom the replays of a root install run as, loses every folder of this
    run at once (node's imports then fail: EACCES in the middle of a test)."""
    if os.geteuid() != 0 or config.option.basetemp or getattr(config, "workerinput", None) is not None:
        return
    folder = Path(tempfile.mkdtemp(prefix="senpi-guard-tests-"))
    folder.chmod(0o755)
    config.option.basetemp = str(folder)
    config.stash[_OWN_BASETEMP] = folder


def pytest_unconfigure(config):
    if _OWN_BASETEMP in config.stash:
        _removed_after_the_run(config.stash[_OWN_BASETEMP])


def _removed_after_the_run(folder: Path) -> None:
    """The run's temp folder is removed by a process of its own that the run does not wait for:
    removed here, its tens of thousands of files (npm prefixes, the big sample packages, the real
    installs) held the run for a minute and more after its summary (measured: 60 s after a -n 2 run
    of tests/e2e/test_watch.py, the controller in the kernel's block-I/O wait on a disk with online
    discard). Renamed first: the run's name is gone the moment the run ends."""
    doomed = folder.with_name(f"{folder.name}.removing")
    try:
        folder.rename(doomed)
    except OSError:
        doomed = folder
    subprocess.Popen(  # (no output, a session of its own: no terminal or pipe waits for it)
        ["rm", "-rf", "--", str(doomed)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def pytest_collection_modifyitems(items):
    """Everything under tests/e2e installs real packages with npm/pnpm/bun/yarn: marked `slow`;
    everything under tests/real runs the real senpi builds: marked `slow` and `real`."""
    e2e, real = Path(__file__).parent / "e2e", Path(__file__).parent / "real"
    for item in items:
        parents = Path(item.fspath).parents
        if e2e in parents or real in parents:
            item.add_marker(pytest.mark.slow)
        if real in parents:
            item.add_marker(pytest.mark.real)


def _counted(reports) -> tuple[int, int]:
    """Tests that ran (their call phase reported), and of them those of the real tier."""
    calls = [r for r in reports if getattr(r, "when", None) == "call"]
    return len(calls), sum(1 for r in calls if "real" in r.keywords)


def _tally(config) -> tuple[int, int, int, int]:
    stats = config.pluginmanager.get_plugin("terminalreporter").stats
    ran = [r for key in ("passed", "failed", "xfailed", "xpassed") for r in stats.get(key, [])]
    return (*_counted(ran), *_counted(stats.get("passed", [])))


def pytest_terminal_summary(terminalreporter, config):
    if getattr(config, "workerinput", None) is not None:
        return
    total, real, passed, real_passed = _tally(config)
    terminalreporter.write_line(
        f"senpi-guard tests: {passed} of {total} passed; real-build tests: {real_passed} of {real} passed"
    )
    stamp = os.environ.get("SENPI_GUARD_SUMMARY_STAMP")
    if stamp:  # (scripts/test.sh says how long the run took from here to its exit)
        Path(stamp).write_text(f"{time.time()}\n")
