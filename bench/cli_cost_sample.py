"""Benchmark: what `senpi-guard status --root` costs on a 30,000-file dist/, against `node -e 0`
measured in the same run (round robin, medians of 5). First run: one walk of dist/; later runs:
where the targets were last time (after an apply), with no walk. Goal: <= 3x `node -e 0`.

    .venv/bin/python bench/cli_cost_sample.py [--fillers 10000]

(bench/cli_cost.py measures the real 2026.8.22-2, as root and as a user, every command.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from senpi_guard.demo import sample


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.monotonic()
    subprocess.run(argv, capture_output=True, env=env, check=False)
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fillers", type=int, default=10000, help="3 files each (.js, .map, .d.ts)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="senpi-guard-bench-"))
    pkg = work / "pkg"
    sample.write_sample_package(pkg, 2, fillers=args.fillers)
    files = sum(1 for _ in (pkg / "dist").rglob("*"))
    env = {**os.environ, "XDG_STATE_HOME": str(work / "state"), "XDG_DATA_HOME": str(work / "data")}
    status = [sys.executable, "-m", "senpi_guard", "status", "--root", str(pkg)]
    rows = {
        "node -e 0 (baseline)": [],
        "status, first (shapes' folders first)": [],
        "status, after apply (remembered)": [],
    }
    for _ in range(5):
        rows["node -e 0 (baseline)"].append(timed(["node", "-e", "0"], env))
        shutil.rmtree(work / "state", ignore_errors=True)  # nothing remembered: a first run
        rows["status, first (shapes' folders first)"].append(timed(status, env))
    subprocess.run(
        [sys.executable, "-m", "senpi_guard", "apply", "--root", str(pkg)], env=env, capture_output=True, check=True
    )
    for _ in range(5):
        rows["node -e 0 (baseline)"].append(timed(["node", "-e", "0"], env))
        rows["status, after apply (remembered)"].append(timed(status, env))
    base = statistics.median(rows["node -e 0 (baseline)"])
    print(f"dist/ with {files:,} files")
    for name, times in rows.items():
        median = statistics.median(times)
        print(f"{name:<36}{median:>7.3f} s  {median / base:>5.2f}x")
    remembered = statistics.median(rows["status, after apply (remembered)"]) / base
    print(f"goal: status <= 3x node -e 0: {'met' if remembered <= 3 else 'MISSED'} once remembered")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
