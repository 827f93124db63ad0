"""`senpi-guard demo`: a throw-away npm prefix with a sample senpi, patched before your eyes."""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
import textwrap
from pathlib import Path

from senpi_guard.audit import replay as audit
from senpi_guard.audit import resend
from senpi_guard.commands import common, results_view
from senpi_guard.core.patch.classify import State
from senpi_guard.demo import sample, sample_session
from senpi_guard.discover import Install, describe
from senpi_guard.layers import pipeline

SUMMARY = "try senpi-guard on a throw-away sample install (needs node and npm)"
EXAMPLE = "senpi-guard demo --keep   # keep the temp prefix to look at"
EXITS = "0 the sample was patched, verified and reverted; 1 anything else"


def configure(parser) -> None:
    parser.add_argument("--keep", action="store_true", help="keep the temp prefix for inspection")


def _say(text: str = "") -> None:
    """A step, wrapped to 100 columns (continuation lines indented under the step's text)."""
    indent = " " * (len(text) - len(text.lstrip(" 0123456789.")))
    print(textwrap.fill(text, 100, subsequent_indent=indent or "   ") if len(text) > 100 else text, flush=True)


DEMO_PATCH = "directive-dedupe"


def run(args) -> int:
    work = Path(tempfile.mkdtemp(prefix="senpi-guard-demo-"))
    work.chmod(0o755)  # (as root, replays run as nobody, who must read the sample installs)
    # every folder it writes is in `work`: senpi-guard's own (the cache too) and npm's cache and logs
    redirected = ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "SENPI_CODING_AGENT_DIR")
    saved = {k: os.environ.get(k) for k in (*redirected, "npm_config_cache", "NPM_CONFIG_CACHE")}
    for key in saved:
        os.environ[key] = str(work / "xdg" / key.lower()) if key in redirected else str(work / "npm-cache")
    try:
        return _demo(work)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if args.keep:
            _kept(work)
        else:
            shutil.rmtree(work, ignore_errors=True)


SHAPES = (2, 3)  # 2026.8.1: no dedupe of its own; 2026.8.5: upstream's keep-last


def _kept(work: Path) -> None:
    """Where the kept folder is, and the command that audits its session against its own sample
    senpi (each on a line of its own, to copy)."""
    print(f"kept:\n{work}")
    session, senpi = work / "session.jsonl", sample.npm_package_dir(work / f"prefix{SHAPES[0]}")
    if session.is_file() and senpi.is_dir():
        print("audit its sample session with its sample senpi:")
        print(f"senpi-guard audit --root {shlex.quote(str(senpi))} {shlex.quote(str(session))}", flush=True)


def _install(work: Path, shape: int) -> Install:
    sample.write_sample_package(work / f"src{shape}", shape)
    tarball = sample.npm_pack(work / f"src{shape}", work / "packs")
    package_dir = sample.npm_install_global(tarball, work / f"prefix{shape}")
    _say(f"   npm install -g --prefix {work / f'prefix{shape}'} {tarball.name}")
    return describe(package_dir, "npm")


def _demo(work: Path) -> int:
    _say(
        f"1. Writing two sample senpi packages and installing each with the real npm into a throw-away "
        f"prefix: {sample.SHAPE_VERSIONS[2]} (no dedupe of its own) and {sample.SHAPE_VERSIONS[3]} "
        "(upstream's keep-last dedupe)"
    )
    installs = [_install(work, shape) for shape in SHAPES]
    patches, config = common.load()
    patch = next(p for p in patches if p.name == DEMO_PATCH)  # what this demo shows

    def flow() -> pipeline.Pipeline:  # (both layers of the demo's patch, whatever the config says)
        return pipeline.build(patches, config, all_layers=True, only=(DEMO_PATCH,))

    def looked() -> list[pipeline.Result]:  # (what status would show of each sample install)
        return [r for r in flow().run("inspect", installs, pipeline.Run()) if r.layer == "dist"]

    def states(results: list[pipeline.Result]) -> str:
        return "; ".join(f"status of {r.install.version}: {r.after}" for r in results)

    _say("2. " + states(looked()))
    _say(
        "3. apply: locate buildPromptBlocks by syntax tree, wrap its return, replay the fixture "
        "contexts through the original and patched modules with node, then write atomically; then the "
        "extension layer (every provider, the delta lane too), proven through senpi's own extension "
        "runner, into a throw-away agent dir"
    )
    applying = flow()
    with applying.store.lock():
        applying.run("apply", installs, pipeline.Run())
    results_view.print_results(applying, False, say_changes=False)  # (step 4 says what it changes)
    outcomes, layers = applying.split()
    if not applying.ok or not all(o.report is not None for o in outcomes) or not layers:
        return 1
    _incidents(patch, installs, outcomes)
    after = looked()
    _say("5. " + states(after))
    _audit(work, installs[0], patch, config)
    _say("7. revert restores the original bytes exactly and removes the extension layer:")
    reverting = flow()
    with reverting.store.lock():
        reverting.run("revert", installs, pipeline.Run())
    reverted, removed = reverting.split()
    for outcome in reverted:
        _say(f"   {outcome.install.version}: {outcome.before} -> {outcome.after}: {outcome.detail}")
    for layer in removed:
        _say(f"   extension layer {layer.before} -> {layer.after}: {layer.detail}")
    _say(
        "Next: `senpi-guard status` shows your own installs (read-only); `senpi-guard apply` patches "
        "them; `senpi-guard daemon install` keeps them patched across `senpi update`."
    )
    ok = all(a.after == State.PATCHED for a in after) and reverting.ok and bool(removed)
    return 0 if ok else 1


def _audit(work: Path, install: Install, patch, config) -> None:
    session_file = sample_session.write_sample_session(
        work / "session.jsonl", turns=30, lanes=True, payload_from=work / f"src{SHAPES[0]}", broken_lines=False
    )
    with audit.serializer([install], patch, config) as server:
        report = audit.audit_session(session_file, server)
    _say(
        f"6. audit of a sample 30-step session on {install.version} (a 25 kB <ultrawork-mode> in every "
        "user message; senpi's continuity record on every call):"
    )
    for line in _audit_lines(report["summary"]):
        _say("   " + line)


def _incidents(patch, installs: list[Install], outcomes) -> None:
    _say(
        "4. one full re-send of incident-shaped contexts (N identical ~25 kB <ultrawork-mode> blocks + one "
        "variant), as each senpi sends it as installed and patched:"
    )
    _say(f"   {'senpi':<12}{'context':<14}{'as installed':>14}{'patched':>11}{'change':>9}{'directives kept':>26}")
    older, newer = installs[0], installs[1]
    for name in patch.headline:
        stats = outcomes[0].report.stats.get(name, {})
        if stats:
            _say(f"   {older.version:<12}" + _incident_row(name, stats))
    _say(f"   On {older.version} every copy is re-sent: senpi-guard sends one.")
    said = resend.sentence(outcomes[1].report.stats, patch.headline, True, newer.package_dir)
    _say(
        f"   On {newer.version} (2026.8.4-2+) senpi already keeps one copy, the last, so what matters there "
        f"is the prompt cache, {said.get('text', 'not measured')}"
    )


def _change(before: int, after: int) -> str:
    if not before:
        return "0%"
    ratio = after / before - 1
    return f"{ratio:+.1%}"


def _incident_row(name: str, s: dict) -> str:
    installed = s.get("upstreamOnly", {}).get("bytes") or s["originalBytes"]
    patched = s.get("pipelineBytes") or s["patchedBytes"]
    kept_installed = s.get("upstreamOnly", {}).get("surviving", s["distinctDirectives"])
    kept = f"{kept_installed} -> {s['distinctDirectives']} of {s['distinctDirectives']}"
    return f"{name:<14}{installed:>14,}{patched:>11,}{_change(installed, patched):>9}{kept:>26}"


def _audit_lines(s: dict) -> list[str]:
    head, delta, cache = s["headline"], s["sent"]["delta"], s["cache_write"]
    losing, rec = s["turns_losing_a_directive"], s["recorded_payload"]
    return [
        f"{head['turns']} full re-sends: {head['unpatched_bytes']:,} bytes as installed -> "
        f"{head['patched_bytes']:,} patched ({_change(head['unpatched_bytes'], head['patched_bytes'])})",
        f"{delta['turns']} delta calls: {delta['unpatched_bytes']:,} bytes, unchanged by the dist patch; "
        f"{delta['bytes']['both']:,} with the extension layer "
        f"({_change(delta['unpatched_bytes'], delta['bytes']['both'])})",
        f"prompt cache written anew on full re-sends: {cache['unpatched_bytes']:,} -> "
        f"{cache['patched_bytes']:,} bytes ({_change(cache['unpatched_bytes'], cache['patched_bytes'])})",
        f"calls that dropped a distinct directive: {losing['unpatched']} as installed, {losing['patched']} patched",
        f"senpi's own payloadBytes matched the audit on {rec['matched']} of {rec['turns']} recorded calls",
    ]
