"""Benchmark of the injected payload against two other dedupe designs, in one node process.

(a) senpi-guard's injected function; (b) keep-first as described in the original bug report
(<ultrawork-mode> only, per text block, marker wrapped in the tag); (c) keep-last like upstream's
(regex per text block, the last span kept, earlier spans replaced whatever their content).
(b) and (c) are written here from those descriptions. The prompts are the incident fixtures
(N = 3, 21, 70 copies of a ~25 KB directive plus one variant), serialised by the sample shape-2
buildPromptBlocks. Time ratios are against (b), measured in the same run.

    .venv/bin/python bench/payload_compare.py [--markdown]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from senpi_guard import config, sample
from senpi_guard.patch import definition


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--repeat-budget", type=int, default=6000,
                        help="timed calls per fixture are this divided by its message count")
    args = parser.parse_args()
    patch = definition.load()
    by_name = {f["name"]: f for f in patch.fixtures()}
    fixtures = [by_name[name] for name in ("incident-3", "incident-21", "incident-70")]
    with tempfile.TemporaryDirectory(prefix="senpi-guard-bench-") as tmp:
        work = Path(tmp)
        bridge = sample.write_sample_package(work / "pkg", 2, fillers=0)
        payload = work / "payload.js"
        payload.write_text(patch.render_payload(config.Config()))
        job = {"payload": str(payload), "bridge": str(bridge), "fixtures": fixtures,
               "repeatBudget": args.repeat_budget}
        result = subprocess.run(["node", "--expose-gc", str(Path(__file__).with_name("payload_compare.mjs"))],
                                input=json.dumps(job), capture_output=True, text=True, check=True)
    report = json.loads(result.stdout)
    baseline = {r["fixture"]: r["medianUs"] for r in report["rows"] if r["design"].startswith("(b)")}
    header = ["prompt", "design", "output bytes", "directives kept", "prefix-stable", "median µs/call",
              "time vs (b)"]
    lines = []
    for r in report["rows"]:
        lines.append([r["fixture"], r["design"], f"{r['outputBytes']:,} of {r['inputBytes']:,}",
                      f"{r['surviving']} of {r['distinct']}", f"{r['stable']} of {r['prefixes']}",
                      f"{r['medianUs']:,.0f}", f"{r['medianUs'] / baseline[r['fixture']]:.2f}x"])
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for line in lines:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(str(x)) for x in col) for col in zip(header, *lines, strict=False)]
        for line in [header, *lines]:
            print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=False)))
    print(f"\nnode {report['node']}")
    ours = [r for r in report["rows"] if r["design"].startswith("(a)")]
    goals = {
        "bytes <= (b)": all(r["outputBytes"] <= next(b["outputBytes"] for b in report["rows"]
                            if b["fixture"] == r["fixture"] and b["design"].startswith("(b)")) for r in ours),
        "every directive survives": all(r["surviving"] == r["distinct"] for r in ours),
        "100% prefix-stable": all(r["stable"] == r["prefixes"] for r in ours),
        "time <= (b)": all(r["medianUs"] <= baseline[r["fixture"]] for r in ours),
    }
    print("goals: " + ", ".join(f"{k} {'met' if v else 'MISSED'}" for k, v in goals.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
