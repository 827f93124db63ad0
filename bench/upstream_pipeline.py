"""Benchmark: on 2026.8.4-2+ (shape 3) the patched pipeline is buildPromptBlocks followed by
upstream's dedupeUltraworkBlocks, both patched. Baseline, measured in the same node process: the
patched buildPromptBlocks alone. Goal: the pipeline costs at most 1.2x the baseline.

    .venv/bin/python bench/upstream_pipeline.py
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from senpi_guard.core.patch import definition
from senpi_guard.demo import sample
from senpi_guard.discover import describe
from senpi_guard.io import config
from senpi_guard.io.store import Store
from senpi_guard.layers.dist import Reconciler

RUNNER = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [bridge, upstream, contexts] = process.argv.slice(1);
const { buildPromptBlocks } = await import(pathToFileURL(bridge).href);
const { dedupeUltraworkBlocks } = await import(pathToFileURL(upstream).href);
const time = (fn, input) => {
    const started = process.hrtime.bigint();
    fn(input);
    return Number(process.hrtime.bigint() - started) / 1e6;
};
const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
const rows = [];
for (const [name, context] of Object.entries(JSON.parse(readFileSync(contexts, "utf8")))) {
    const alone = [];
    const pipeline = [];
    for (let round = 0; round < 200; round++) {  // round-robin, inputs cloned outside the timing
        const [a, b] = [structuredClone(context), structuredClone(context)];
        alone.push(time(buildPromptBlocks, a));
        pipeline.push(time((c) => dedupeUltraworkBlocks(buildPromptBlocks(c)), b));
    }
    rows.push({ name, alone: median(alone), pipeline: median(pipeline) });
}
console.log(JSON.stringify(rows));
"""


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="senpi-guard-bench-"))
    pkg = work / "pkg"
    sample.write_sample_package(pkg, 3, fillers=0)
    patch = definition.load("directive-dedupe")
    reconciler = Reconciler(patch, config.Config(), Store(work / "data", work / "state"))
    outcome = reconciler.reconcile(describe(pkg, "sample"))
    assert outcome.ok, outcome.detail
    fixtures = {f["name"]: f["context"] for f in patch.fixtures() if f["name"].startswith("incident")}
    (work / "contexts.json").write_text(json.dumps(fixtures))
    provider = pkg / "dist/core/extensions/builtin/claude-sdk-oauth"
    out = subprocess.run(
        [
            "node",
            "--input-type=module",
            "-e",
            RUNNER,
            str(provider / "prompt-bridge.js"),
            str(provider / "prompt-directive-dedupe.js"),
            str(work / "contexts.json"),
        ],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    ).stdout
    print(f"{'context':<14}{'buildPromptBlocks alone (baseline)':>36}{'pipeline':>12}{'ratio':>8}")
    worst = 0.0
    for row in json.loads(out):
        ratio = row["pipeline"] / row["alone"]
        worst = max(worst, ratio)
        print(f"{row['name']:<14}{row['alone']:>33.3f} ms{row['pipeline']:>9.3f} ms{ratio:>7.2f}x")
    print(f"goal: pipeline <= 1.2x buildPromptBlocks alone: {'met' if worst <= 1.2 else 'MISSED'} (worst {worst:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
