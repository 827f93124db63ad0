"""Benchmark: the set-up and test times the README gives, measured on a fresh clone of this checkout's
HEAD (uncommitted changes are not in it): `scripts/demo.sh` cold (no venv) and warm, `scripts/test.sh
--fast` cold and warm (set-up included), and the whole suite as CI runs it (`CI=true .ci/run`: its
own venv, pnpm, bun, yarn and node 24 fetched into the clone). Wall times; the cores and the load
average are printed with them. The baseline, in the same run, is `python3 -c pass`.
Goals (issue 27): the whole suite <= 8 min on 2 cores; `--fast` warm <= 30 s.

    .venv/bin/python bench/timings.py [--skip-full] [--goals-json FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from goals import Goal, goals_file, report

REPO = Path(__file__).resolve().parents[1]
FULL_GOAL_S, FAST_GOAL_S = 8 * 60, 30


def timed(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 3600) -> float:
    """Wall seconds of one run of `argv` in `cwd`; a failed run stops the benchmark with its tail."""
    start = time.perf_counter()
    done = subprocess.run(
        argv, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        log = Path(tempfile.gettempdir()) / f"senpi-guard-timings-{os.getpid()}.log"
        log.write_text(done.stdout + done.stderr)  # (the clone goes with its scratch: its output stays)
        sys.exit(f"{' '.join(argv)} failed (exit {done.returncode}) in {cwd}; its output: {log}\n{done.stdout[-1500:]}")
    return took


def fresh_clone(into: Path) -> Path:
    clone = into / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(clone)], check=True)
    return clone


def measure(skip_full: bool) -> list[tuple[str, float]]:
    rows = [("python3 -c pass (baseline)", timed([sys.executable, "-c", "pass"], REPO))]
    with tempfile.TemporaryDirectory(prefix="senpi-guard-timings-") as scratch:
        # (a checkout anyone may pass through, as CI's is: the root tier's tests run the clone's
        # senpi-guard as a second user, which a 0700 scratch folder would keep out)
        Path(scratch).chmod(0o755)
        clone = fresh_clone(Path(scratch))
        demo = ["bash", "scripts/demo.sh"]
        rows.append(("scripts/demo.sh, cold (no venv)", timed(demo, clone)))
        rows.append(("scripts/demo.sh, warm", timed(demo, clone)))
        fast = ["bash", "scripts/test.sh", "--fast"]
        rows.append(("scripts/test.sh --fast, after demo.sh (set-up included)", timed(fast, clone)))
        rows.append(("scripts/test.sh --fast, warm (nothing changed)", timed(fast, clone)))
        if not skip_full:
            rows.append(("CI=true .ci/run, fresh clone (every tier)", full_suite(Path(scratch))))
    return rows


def full_suite(scratch: Path) -> float:
    clone = fresh_clone(scratch / "ci")
    # (the clone is not beside ../shared: the real builds are named for it)
    real = os.environ.get("SENPI_GUARD_REAL_SENPI") or str(REPO.parent / "shared" / "real-senpi")
    return timed(["bash", ".ci/run"], clone, env={"CI": "true", "SENPI_GUARD_REAL_SENPI": real}, timeout=3 * 3600)


def main() -> int:
    where = goals_file()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-full", action="store_true", help="leave out the whole suite (~10 min)")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = measure(args.skip_full)
    print(f"{os.cpu_count()} cores; load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    base = rows[0][1]
    for what, took in rows:
        print(f"{what:60} {took:8.1f} s  {took / base:8.1f}x baseline")
    found = dict(rows)
    fast = found["scripts/test.sh --fast, warm (nothing changed)"]
    goals = [Goal("scripts/test.sh --fast, warm", f"{fast:.1f} s", f"<= {FAST_GOAL_S} s", fast <= FAST_GOAL_S)]
    full = found.get("CI=true .ci/run, fresh clone (every tier)")
    if full is not None:
        goals.append(
            Goal("whole suite, fresh clone", f"{full / 60:.1f} min", f"<= {FULL_GOAL_S // 60} min", full <= FULL_GOAL_S)
        )
    report(goals, where)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
