"""Benchmark: `apply` and `verify` on one install of a senpi-sized dist/ (3,700 files), and on 20
nvm installs of the same version, against `node -e 0` measured in the same run (round robin,
medians of --rounds). Every run starts from unpatched installs and an empty state dir, so nothing
is remembered from an earlier run; within a run, identical installs share one replay.
Goals: <= 0.6 s per install; 20 installs <= 3x one.

    .venv/bin/python bench/apply_cost.py [--rounds 3] [--installs 20]
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
    result = subprocess.run(argv, capture_output=True, env=env, check=False, text=True)
    if result.returncode not in (0,) and "node" not in argv[0]:
        raise SystemExit(f"{argv[2:4]} failed: {result.stdout[-400:]} {result.stderr[-400:]}")
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--installs", type=int, default=20)
    args = parser.parse_args()
    cli = [sys.executable, "-m", "senpi_guard"]
    with tempfile.TemporaryDirectory(prefix="senpi-guard-bench-") as tmp:
        work = Path(tmp)
        source = work / "source"
        sample.write_sample_package(source, 3, fillers=1230)
        files = sum(1 for p in (source / "dist").rglob("*") if p.is_file())
        nvm = work / "nvm"
        installs = [nvm / f"versions/node/v24.{i}.0/lib/node_modules/@code-yeongyu/senpi" for i in range(args.installs)]
        base = dict(os.environ, HOME=str(work / "home"), NVM_DIR=str(nvm))
        (work / "home").mkdir()
        rows: dict[str, list[float]] = {
            k: []
            for k in (
                "node -e 0 (baseline)",
                "apply, 1 install",
                "verify, 1 install",
                f"apply, {args.installs} installs",
                f"verify, {args.installs} installs",
            )
        }
        for round_no in range(args.rounds):
            rows["node -e 0 (baseline)"].append(timed(["node", "-e", "0"], base))
            for count in (1, args.installs):
                shutil.rmtree(nvm, ignore_errors=True)
                for target in installs[:count]:
                    shutil.copytree(source, target, symlinks=True)
                env = dict(
                    base,
                    XDG_STATE_HOME=str(work / f"state{round_no}-{count}"),
                    XDG_DATA_HOME=str(work / f"data{round_no}-{count}"),
                )
                label = "1 install" if count == 1 else f"{count} installs"
                roots = [] if count > 1 else ["--root", str(installs[0])]  # 20: through discovery
                rows[f"apply, {label}"].append(timed([*cli, "apply", "-q", *roots], env))
                rows[f"verify, {label}"].append(timed([*cli, "verify", "-q", *roots], env))
    med = {k: statistics.median(v) for k, v in rows.items()}
    node = med["node -e 0 (baseline)"]
    print(f"dist/ with {files:,} files; medians of {args.rounds} rounds")
    for name, value in med.items():
        print(f"{name:<28}{value:7.2f} s  {value / node:6.2f}x node -e 0")
    one, many = med["apply, 1 install"], med[f"apply, {args.installs} installs"]
    v_one, v_many = med["verify, 1 install"], med[f"verify, {args.installs} installs"]
    print(
        f"goal: apply <= 0.6 s per install: {'met' if one <= 0.6 else 'NOT met'} ({one:.2f} s); "
        f"verify: {'met' if v_one <= 0.6 else 'NOT met'} ({v_one:.2f} s)"
    )
    print(
        f"goal: {args.installs} installs <= 3x one: apply {many / one:.2f}x "
        f"{'met' if many <= 3 * one else 'NOT met'}; verify {v_many / v_one:.2f}x "
        f"{'met' if v_many <= 3 * v_one else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
