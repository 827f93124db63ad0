"""`senpi-guard demo`: a throw-away npm prefix with a sample senpi, patched before your eyes."""

from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
from pathlib import Path

from senpi_guard import audit, sample
from senpi_guard.commands import common
from senpi_guard.discover import Install, describe
from senpi_guard.patch.classify import State
from senpi_guard.reconcile import Reconciler

SUMMARY = "try senpi-guard on a throw-away sample install (needs node and npm)"
EXAMPLE = "senpi-guard demo --keep   # keep the temp prefix to look at"
EXITS = "0 the sample was patched, verified and reverted; 1 anything else"


def configure(parser) -> None:
    parser.add_argument("--keep", action="store_true", help="keep the temp prefix for inspection")


def _say(text: str = "") -> None:
    """A step, wrapped to 100 columns (continuation lines indented under the step's text)."""
    indent = " " * (len(text) - len(text.lstrip(" 0123456789.")))
    print(textwrap.fill(text, 100, subsequent_indent=indent or "   ") if len(text) > 100 else text, flush=True)


def run(args) -> int:
    work = Path(tempfile.mkdtemp(prefix="senpi-guard-demo-"))
    saved = {k: os.environ.get(k) for k in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME")}
    for key in saved:
        os.environ[key] = str(work / "xdg" / key.lower())
    try:
        return _demo(work)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if args.keep:
            _say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _demo(work: Path) -> int:
    _say(f"1. Writing a sample senpi {sample.SHAPE_VERSIONS[3]} package (shape 3: with upstream's "
         "keep-last dedupe) and installing it with the real npm into a throw-away prefix")
    sample.write_sample_package(work / "src", 3)
    tarball = sample.npm_pack(work / "src", work / "packs")
    package_dir = sample.npm_install_global(tarball, work / "prefix")
    _say(f"   npm install -g --prefix {work / 'prefix'} {tarball.name}")
    install: Install = describe(package_dir, "npm")
    patch, config = common.load()
    reconciler = Reconciler(patch, config)
    before = reconciler.inspect(install)
    _say(f"2. status: {before.state}  ({before.prompt.rel if before.prompt else '?'})")
    _say("3. apply: locate buildPromptBlocks by syntax tree, wrap its return, replay the fixture "
         "contexts through the original and patched modules with node, then write atomically")
    with reconciler.store.lock():
        outcome = reconciler.reconcile(install)
    common.print_outcomes([outcome], False)
    if not outcome.ok or outcome.report is None:
        return 1
    _say("4. prompt bytes for incident-shaped contexts (N identical ~25 KB <ultrawork-mode> "
         "blocks + one variant):")
    _say(f"   {'context':<14}{'unpatched':>12}{'patched':>11}{'saved':>8}"
         f"{'upstream alone keeps':>24}")
    for name in ("incident-3", "incident-21", "incident-70"):
        s = outcome.report.stats.get(name, {})
        if not s:
            continue
        saved = 100 * (1 - s["patchedBytes"] / s["originalBytes"])
        upstream = s.get("upstreamOnly", {})
        keeps = f"{upstream.get('surviving', '?')} of {s['distinctDirectives']} directives"
        _say(f"   {name:<14}{s['originalBytes']:>12,}{s['patchedBytes']:>11,}{saved:>7.1f}%"
             f"{keeps:>24}")
    after = reconciler.inspect(install)
    _say(f"5. status: {after.state}")
    session_file = sample.write_sample_session(work / "session.jsonl", turns=30)
    with audit.serializer([install], patch, config) as server:
        report = audit.audit_session(session_file, server)
    s = report["summary"]
    big = s["largest_turn"]
    _say(f"6. audit of a sample 30-step session ({s['turns']} assistant turns, a 25 KB "
         "<ultrawork-mode> in every user message):")
    change = (f"{s['saved_percent']}% fewer" if s["saved_bytes"] >= 0 else
              f"{-s['saved_percent']}% more")
    _say(f"   re-sent in total {s['total_unpatched_bytes']:,} -> {s['total_patched_bytes']:,} bytes "
         f"({change}); largest turn {big['unpatched_bytes']:,} -> {big['patched_bytes']:,} bytes")
    losing = s["turns_losing_a_directive"]
    _say(f"   turns whose prompt lost a distinct directive: {losing['unpatched']} without the patch "
         f"(upstream's keep-last drops the earlier variant), {losing['patched']} with it")
    _say("7. revert restores the original bytes exactly:")
    with reconciler.store.lock():
        reverted = reconciler.revert(install)
    _say(f"   {reverted.before} -> {reverted.after}: {reverted.detail}")
    return 0 if after.state == State.PATCHED and reverted.ok else 1
