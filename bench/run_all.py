"""Every benchmark with goals, in one run, and the table of docs/benchmarks.md made from what they
measured: each figure beside its goal, "met" or "not met", with the machine it ran on (cores, load
average before and after each benchmark, node's version, the date). A benchmark that fails or
reports no goals is a row saying so, never a "met".

    .venv/bin/python bench/run_all.py [--only NAME ...] [--skip-full] [--no-write]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
DOC = BENCH.parent / "docs" / "benchmarks.md"
BEGIN, END = "<!-- run_all: begin -->", "<!-- run_all: end -->"

# name -> (script and its arguments, timeout in seconds)
BENCHMARKS: dict[str, tuple[list[str], float]] = {
    "extension": (["real_overhead.py", "--only", "runner"], 3600),  # issue 27 goal 1
    "cli": (["cli_cost.py"], 3600),  # goal 2, root and an unprivileged user
    "watcher": (["update_latency_real.py"], 3600),  # goal 3, real npm updates
    "timings": (["timings.py"], 3 * 3600),  # goal 4 and the README's set-up figures
}


def run_one(name: str, extra: list[str]) -> tuple[list[dict], str]:
    """(goals, note) of one benchmark; the note says what went wrong when it gave none."""
    argv, timeout = BENCHMARKS[name]
    with tempfile.TemporaryDirectory(prefix="senpi-guard-bench-") as scratch:
        out = Path(scratch) / "goals.json"
        command = [sys.executable, str(BENCH / argv[0]), *argv[1:], *extra, "--goals-json", str(out)]
        print(f"==> {name}: {' '.join(command[1:])}", flush=True)
        start = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return [], f"timed out after {timeout:.0f} s"
        print(done.stdout[-4000:], done.stderr[-2000:], sep="\n", flush=True)
        took = time.perf_counter() - start
        if out.exists():  # (a bench may exit 1 for a goal not met: its goals still count)
            return json.loads(out.read_text()), f"{took:.0f} s"
        if done.returncode != 0:
            said = [line for line in done.stderr.splitlines() if not line.startswith("WARNING: Location")]
            return [], f"failed (exit {done.returncode}) after {took:.0f} s: {' '.join(said)[-300:]}"
        return [], "ran, but reported no goals (it does not take --goals-json)"


def machine() -> str:
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{os.cpu_count()} cores, node {node or '(none)'}, {when}"


def table(results: dict[str, tuple[list[dict], str, tuple[float, float]]]) -> str:
    lines = [
        f"Made by `bench/run_all.py` on {machine()}. Load average (1 min) before and after each.",
        "",
        "| benchmark | what | measured | goal | met? | load |",
        "|---|---|---|---|---|---|",
    ]
    for name, (goals, note, (before, after)) in results.items():
        load = f"{before:.1f} → {after:.1f}"
        if not goals:
            lines.append(f"| {name} | — | {note} | — | **not met** (no figure) | {load} |")
        for goal in goals:
            met = "met" if goal["met"] else "**not met**"
            lines.append(f"| {name} | {goal['what']} | {goal['figure']} | {goal['goal']} | {met} | {load} |")
    return "\n".join(lines)


def write_doc(text: str) -> None:
    """Replace the block between the markers in docs/benchmarks.md (added after the title if none)."""
    doc = DOC.read_text("utf-8")
    block = f"{BEGIN}\n{text}\n{END}"
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN, 1)
        doc = head + block + rest.split(END, 1)[1]
    else:
        title, _, body = doc.partition("\n")
        doc = f"{title}\n\n## Every goal, one run\n\n{block}\n{body}"
    temp = DOC.with_name(f".{DOC.name}.tmp")
    temp.write_text(doc, "utf-8")
    temp.replace(DOC)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHMARKS), help="run these benchmarks only")
    parser.add_argument("--skip-full", action="store_true", help="timings: leave out the whole suite")
    parser.add_argument("--no-write", action="store_true", help="print the table; leave docs/benchmarks.md")
    args = parser.parse_args()
    results = {}
    for name in args.only or list(BENCHMARKS):
        extra = ["--skip-full"] if name == "timings" and args.skip_full else []
        before = os.getloadavg()[0]
        goals, note = run_one(name, extra)
        results[name] = (goals, note, (before, os.getloadavg()[0]))
    text = table(results)
    print(text)
    if not args.no_write:
        write_doc(text)
        print(f"wrote {DOC}")
    every = [g for goals, _note, _load in results.values() for g in goals]
    return 0 if every and all(g["met"] for g in every) and all(goals for goals, _n, _l in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
