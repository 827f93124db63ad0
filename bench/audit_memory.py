"""Benchmark: `senpi-guard audit` on a large session streams in bounded memory, at >= 20 MB/s.

Writes a senpi-shaped session of --size-mb (default 200 MB; compactions keep each context below
the model's window, as in real long sessions), audits it with the real CLI, and samples the peak
RSS of the audit's Python process and of its node process. The baseline, measured in the same run,
is a naive reader that json-loads every line of the same file into memory.

    .venv/bin/python bench/audit_memory.py [--size-mb 200]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from senpi_guard.demo import sample, sample_session

NAIVE = """import json, sys
rows = []
for line in open(sys.argv[1], "rb"):
    try:
        rows.append(json.loads(line))
    except ValueError:
        pass
print(len(rows))
"""


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e6  # (VmHWM is in KiB; MB here are SI)
    except OSError:
        pass
    return 0.0


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def run_sampled(argv: list[str]) -> tuple[float, float, float]:
    """(seconds, peak RSS MB of the process, peak RSS MB of its children)."""
    peak = {"self": 0.0, "kids": 0.0}
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def sample_loop() -> None:
        while proc.poll() is None:
            peak["self"] = max(peak["self"], rss_mb(proc.pid))
            peak["kids"] = max(peak["kids"], sum(rss_mb(c) for c in children(proc.pid)))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample_loop)
    sampler.start()
    proc.wait()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed with exit {proc.returncode}")
    return time.monotonic() - started, peak["self"], peak["kids"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="senpi-guard-bench-") as tmp:
        path = Path(tmp) / "big.jsonl"
        steps = int(args.size_mb * 1e6 / 27_000)
        sample_session.write_sample_session(path, turns=steps, directive_bytes=25_000, compact_every=12)
        size = path.stat().st_size / 1e6
        pkg = Path(tmp) / "pkg"
        sample.write_sample_package(pkg, 2, fillers=0)
        env_python = sys.executable
        naive_s, naive_mb, _ = run_sampled([env_python, "-c", NAIVE, str(path)])
        audit_s, audit_mb, node_mb = run_sampled(
            [env_python, "-m", "senpi_guard", "audit", str(path), "--root", str(pkg), "--json"]
        )
    print(f"session file                         {size:8.1f} MB  ({steps:,} steps)")
    print(f"naive json-load of every line (base) {naive_mb:8.1f} MB peak RSS  {naive_s:6.1f} s  1.00x")
    print(
        f"senpi-guard audit, python            {audit_mb:8.1f} MB peak RSS  {audit_s:6.1f} s  "
        f"{audit_mb / naive_mb:.2f}x"
    )
    print(f"senpi-guard audit, node              {node_mb:8.1f} MB peak RSS")
    print(f"peak RSS / file size: python {audit_mb / size:.2f}, node {node_mb / size:.2f}")
    rate = size / audit_s
    print(
        f"throughput: {rate:.1f} MB of session per second ({naive_s / audit_s:.2f}x the naive reader's "
        f"speed; every call measured as a full re-send, the worst case) — goal >= 20 MB/s "
        f"{'met' if rate >= 20 else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
