"""Benchmark of the injected payload against the bug report's hand hot-fix and upstream's shipped
keep-last, in one node process.

(a) senpi-guard's payload with the default tags configured, (a1) the same with only <ultrawork-mode>
(the hot-fix handles one tag: this is the per-tag comparison), (a2) with tags = "auto" (every tag
name is read, any block from 512 bytes), (b) the hand hot-fix, written in the
bench from its description in the project facts (the baseline), (c) upstream's keep-last as the
sample 2026.8.4-2-shaped package ships it. Prompts: the incident fixtures (N = 3, 21, 70 copies of a
~25 kB directive plus one variant) serialised by the sample shape-2 buildPromptBlocks, and n distinct
25 kB spans of one length (a plugin stamping a counter). Time ratios are against (b), same run.
Prefix stability is turn by turn: what turn k sent is a prefix of what turn k+1 sent.

    .venv/bin/python bench/payload_compare.py [--markdown]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from senpi_guard.core.patch import definition
from senpi_guard.demo import sample
from senpi_guard.io import config

GOALS = {"same-length": 3.0, "default tags": 1.25, "one tag": 1.0, "auto": 1.5}


def _table(rows: list[list[str]], header: list[str], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for line in rows:
            print("| " + " | ".join(line) + " |")
        return
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    for line in [header, *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=False)))


def _goals(rows: list[dict]) -> list[tuple[str, float, float]]:
    """(goal, worst ratio found, limit)."""
    base = {r["fixture"]: r["medianUs"] for r in rows if r["design"].startswith("(b)")}

    def worst(design: str, which) -> float:
        return max(
            r["medianUs"] / base[r["fixture"]] for r in rows if r["design"].startswith(design) and which(r["fixture"])
        )

    return [
        ("distinct same-length spans, (a) vs (b)", worst("(a)", lambda f: "same-length" in f), GOALS["same-length"]),
        (
            "incident shape (N = 70), the default tags, (a) vs (b)",
            worst("(a)", lambda f: f == "incident-70"),
            GOALS["default tags"],
        ),
        (
            "incident shape (N = 70), one tag, (a1) vs (b)",
            worst("(a1)", lambda f: f == "incident-70"),
            GOALS["one tag"],
        ),
        (
            'incident shape (N = 70), tags = "auto", (a2) vs (b)',
            worst("(a2)", lambda f: f == "incident-70"),
            GOALS["auto"],
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument(
        "--repeat-budget", type=int, default=3000, help="timed calls per prompt scale down with its size from this"
    )
    args = parser.parse_args()
    patch = definition.load("directive-dedupe")
    by_name = {f["name"]: f for f in patch.fixtures()}
    fixtures = [by_name[name] for name in ("incident-3", "incident-21", "incident-70")]
    with tempfile.TemporaryDirectory(prefix="senpi-guard-bench-") as tmp:
        work = Path(tmp)
        bridge = sample.write_sample_package(work / "pkg2", 2, fillers=0)
        upstream = sample.write_sample_package(work / "pkg3", 3, fillers=0).with_name("prompt-directive-dedupe.js")
        payloads = {}
        one_tag = config.Config().with_patch("directive-dedupe", tags=["ultrawork-mode"])
        auto = config.Config().with_patch("directive-dedupe", tags="auto")
        for name, cfg in (("payloadAll", config.Config()), ("payloadOne", one_tag), ("payloadAuto", auto)):
            payloads[name] = work / f"{name}.js"
            payloads[name].write_text(patch.render_payload(cfg))
        job = {
            **{k: str(v) for k, v in payloads.items()},
            "bridge": str(bridge),
            "upstream": str(upstream),
            "fixtures": fixtures,
            "sameLength": [300, 1000],
            "repeatBudget": args.repeat_budget,
        }
        result = subprocess.run(
            ["node", "--expose-gc", str(Path(__file__).with_name("payload_compare.mjs"))],
            input=json.dumps(job),
            capture_output=True,
            text=True,
            check=True,
        )
    report = json.loads(result.stdout)
    base = {r["fixture"]: r["medianUs"] for r in report["rows"] if r["design"].startswith("(b)")}
    header = [
        "prompt",
        "design",
        "output bytes",
        "directives kept",
        "prefix-stable turns",
        "median µs/call",
        "time vs (b)",
    ]
    lines = [
        [
            r["fixture"],
            r["design"],
            f"{r['outputBytes']:,} of {r['inputBytes']:,}",
            f"{r['surviving']} of {r['distinct']}",
            f"{r['stable']} of {r['turns']}" if "stable" in r else "-",
            f"{r['medianUs']:,.0f}",
            f"{r['medianUs'] / base[r['fixture']]:.2f}x",
        ]
        for r in report["rows"]
    ]
    _table(lines, header, args.markdown)
    print(f"\nnode {report['node']}")
    ours = [r for r in report["rows"] if r["design"].startswith("(a")]
    for goal, found, limit in _goals(report["rows"]):
        print(f"goal: {goal} <= {limit:g}x: {found:.2f}x {'met' if found <= limit else 'MISSED'}")
    survive = all(r["surviving"] == r["distinct"] for r in ours)
    stable = all(r["stable"] == r["turns"] for r in ours if "stable" in r)
    print(
        f"goal: every directive survives (a, a1): {'met' if survive else 'MISSED'}; "
        f"every turn prefix-stable (a, a1): {'met' if stable else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
