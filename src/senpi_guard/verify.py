"""The node harness protocol: mirror the package with the candidate modules in place, run
`node --check` beside the replay, feed the harness a JSON job and read its report.

A "verify" job replays the patch's fixtures and runs its named checks (`patches/<name>/checks.mjs`);
a "serve" job (for audit) keeps one node process answering per-context measurements."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from senpi_guard.config import Config
from senpi_guard.errors import FatalError
from senpi_guard.patch.definition import Patch

MIN_NODE = 18
ORIGINAL_SUFFIX = ".senpi-guard-original.js"


@dataclass
class Failure:
    fixture: str
    check: str
    detail: str

    def __str__(self) -> str:
        return f"{self.check} failed on fixture {self.fixture}: {self.detail}"


@dataclass
class VerifyReport:
    ok: bool
    failures: list[Failure] = field(default_factory=list)
    checks_run: int = 0
    stats: dict[str, Any] = field(default_factory=dict)
    node_version: str = ""


@dataclass(frozen=True)
class ModulePair:
    """One module to replay: its real path, and the bytes of its unpatched and patched versions."""

    real_path: Path
    export: str
    original: bytes
    candidate: bytes | None


def find_node() -> tuple[str, str]:
    node = os.environ.get("SENPI_GUARD_NODE") or shutil.which("node")
    if node is None:
        raise FatalError("node was not found on PATH; senpi-guard verifies every patch with the "
                         f"real node (>= {MIN_NODE}): install Node.js or put it on PATH")
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30,
                             check=False).stdout.strip()
    except OSError as exc:
        raise FatalError(f"cannot run node at {node} ({exc.strerror}); reinstall Node.js") from exc
    match = re.match(r"v(\d+)\.", out)
    if match is None or int(match[1]) < MIN_NODE:
        raise FatalError(f"node at {node} is {out or 'unknown'}; senpi-guard needs node >= "
                         f"{MIN_NODE}: upgrade Node.js")
    return node, out


def harness_path() -> Path:
    return Path(str(resources.files("senpi_guard").joinpath("js", "harness.mjs")))


@contextmanager
def mirror(package_dir: Path, modules: list[ModulePair]) -> Iterator[dict[Path, tuple[Path, Path]]]:
    """A temp copy of the package made of symlinks to the real entries, except the directories on
    the way to each module, which are real and hold the candidate (under the real name) and the
    original (under ORIGINAL_SUFFIX). Yields real path -> (original path, candidate path)."""
    package_dir = package_dir.resolve()
    with tempfile.TemporaryDirectory(prefix="senpi-guard-verify-") as tmp:
        root = Path(tmp) / "pkg"
        real_dirs: set[Path] = set()
        for module in modules:
            rel = module.real_path.resolve().relative_to(package_dir)
            for depth in range(len(rel.parts)):
                real_dirs.add(Path(*rel.parts[:depth]) if depth else Path("."))
        for rel_dir in sorted(real_dirs, key=lambda p: len(p.parts)):
            (root / rel_dir).mkdir(parents=True, exist_ok=True)
            for entry in (package_dir / rel_dir).iterdir():
                link = root / rel_dir / entry.name
                rel_entry = (rel_dir / entry.name) if rel_dir != Path(".") else Path(entry.name)
                if rel_entry in real_dirs or link.exists():
                    continue
                link.symlink_to(entry)
        placed = {}
        for module in modules:
            rel = module.real_path.resolve().relative_to(package_dir)
            candidate = root / rel
            if candidate.is_symlink():
                candidate.unlink()
            candidate.write_bytes(module.candidate if module.candidate is not None else module.original)
            original = candidate.with_name(candidate.stem + ORIGINAL_SUFFIX)
            original.write_bytes(module.original)
            placed[module.real_path] = (original, candidate)
        yield placed


def start_node_check(node: str, path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([node, "--check", str(path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def finish_node_check(proc: subprocess.Popen[str], timeout: float) -> str | None:
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return f"node --check timed out after {timeout:g}s"
    if proc.returncode != 0:
        lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
        errors = [ln for ln in lines if "Error" in ln]
        return "node --check failed: " + (errors[0] if errors else lines[-1] if lines
                                           else f"exit {proc.returncode}")
    return None


def run_harness(node: str, job: dict[str, Any], timeout: float) -> dict[str, Any]:
    try:
        result = subprocess.run([node, str(harness_path())], input=json.dumps(job),
                                capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise FatalError(f"verification timed out after {timeout:g}s in node; the target may "
                         "loop forever, or raise verify_timeout in the config") from exc
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError as exc:
        tail = (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
        raise FatalError(f"the verification harness crashed in node: {tail}") from exc
    if "error" in report:
        raise FatalError(f"verification could not load the modules: {report['error']}")
    return report


def harness_job(mode: str, patch: Patch, config: Config,
                placed: dict[Path, tuple[Path, Path]], prompt: ModulePair,
                upstream: ModulePair | None) -> dict[str, Any]:
    """The first line the harness reads: what to load, which checks, which settings."""

    def spec(module: ModulePair | None) -> dict[str, Any] | None:
        if module is None:
            return None
        original, candidate = placed[module.real_path]
        return {"original": str(original), "export": module.export,
                "candidate": str(candidate) if module.candidate is not None else None}

    return {"mode": mode, "call": patch.call, "tags": list(config.tags),
            "marker": patch.marker_template, "maxMarkerBytes": patch.max_marker_bytes,
            "checks": str(patch.checks_path), "prompt": spec(prompt), "upstream": spec(upstream)}


def replay(package_dir: Path, prompt: ModulePair, upstream: ModulePair | None, patch: Patch,
           config: Config) -> VerifyReport:
    """Run the harness once over all fixtures; `node --check` must pass on every candidate too."""
    node, version = find_node()
    modules = [prompt] + ([upstream] if upstream is not None else [])
    timeout = config.verify_timeout
    with mirror(package_dir, modules) as placed:
        # node --check runs beside the replay (node starts slowly); both must pass before any write
        checks = [(module, start_node_check(node, placed[module.real_path][1]))
                  for module in modules if module.candidate is not None]
        job = harness_job("verify", patch, config, placed, prompt, upstream)
        job["fixtures"] = patch.fixtures()
        failure: FatalError | None = None
        try:
            report = run_harness(node, job, timeout)
        except FatalError as exc:  # a syntax error breaks both; report node --check's words
            failure, report = exc, {}
        errors = [f"{module.real_path.name}: {problem}" for module, proc in checks
                  if (problem := finish_node_check(proc, timeout))]
        if errors:
            return summarize({"node": version, "check_errors": errors})
        if failure is not None:
            raise failure
        report["node"] = version
        return summarize(report)


@contextmanager
def serve(package_dir: Path, pairs: dict[str, ModulePair], patch: Patch,
          config: Config) -> Iterator[subprocess.Popen[str]]:
    """A node harness in "serve" mode over the install's modules, ready for requests."""
    node, _ = find_node()
    with mirror(package_dir, list(pairs.values())) as placed:
        job = harness_job("serve", patch, config, placed, pairs["prompt"], pairs.get("upstream"))
        proc = subprocess.Popen([node, str(harness_path())], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            proc.stdin.write(json.dumps(job) + "\n")
            proc.stdin.flush()
            ready = proc.stdout.readline()
            if not ready.startswith('{"ready"'):
                tail = (proc.stderr.read().strip().splitlines() or [ready.strip() or "no output"])[-1]
                raise FatalError(f"the audit could not load senpi's modules in node: {tail}")
            yield proc
        finally:
            if proc.stdin and not proc.stdin.closed:
                proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def summarize(report: dict[str, Any]) -> VerifyReport:
    if report.get("check_errors"):
        failures = [Failure("-", "node-check", e) for e in report["check_errors"]]
        return VerifyReport(False, failures, 0, {}, report.get("node", ""))
    results = report.get("results", [])
    failures = [Failure(r["fixture"], r["check"], r["detail"]) for r in results if not r["ok"]]
    return VerifyReport(not failures and bool(results), failures, len(results),
                        report.get("stats", {}), report.get("node", ""))
