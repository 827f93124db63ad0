"""The node harness protocol: mirror the package with the candidate modules in place, run
`node --check` beside the replay, feed the harness a JSON job and read its report.

The job replays the patch's fixtures and runs its named checks (`patches/<name>/checks.mjs`).
(audit serves measurements from its own node script, js/audit.mjs.)"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import secrets
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from senpi_guard import ui
from senpi_guard.core.patch.definition import Patch
from senpi_guard.core.patch.fixtures import FIXTURES_CODE
from senpi_guard.errors import FatalError, Passing
from senpi_guard.io import reader
from senpi_guard.io.config import Config
from senpi_guard.io.write import write_private
from senpi_guard.prove import nodes
from senpi_guard.prove.mirror import Mirror, mirror
from senpi_guard.prove.sandbox import Sandbox


class Cancelled(FatalError):
    """The watcher is stopping: a running replay was killed, or a write was not started."""


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
    reused_from: float | None = None  # when the identical replay ran (it was not run again)

    def as_json(self) -> dict[str, Any]:
        """The replay as --json reports it, for either layer."""
        return {
            "ok": self.ok,
            "checks": self.checks_run,
            "node": self.node_version,
            "failures": [str(f) for f in self.failures],
            "reused_from": self.reused_from,  # (not run again: when the identical replay ran)
        }


@dataclass(frozen=True)
class ModulePair:
    """One module to replay: its real path, and the bytes of its unpatched and patched versions."""

    real_path: Path
    export: str
    original: bytes
    candidate: bytes | None


def start_node_check(node: str, path: Path, popen_kwargs: dict[str, Any] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [node, "--check", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        **(popen_kwargs or {}),
    )


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
        return "node --check failed: " + (errors[0] if errors else lines[-1] if lines else f"exit {proc.returncode}")
    return None


def _communicate(proc: subprocess.Popen[str], timeout: float, cancel: threading.Event | None) -> tuple[str, str]:
    """proc.communicate, in short slices so that `cancel` kills node within ~0.1 s."""
    deadline = time.monotonic() + timeout
    while True:
        if cancel is not None and cancel.is_set():
            proc.kill()
            proc.communicate()
            raise Cancelled("stopped during verification; nothing was written")
        try:
            return proc.communicate(timeout=min(0.1, max(0.01, deadline - time.monotonic())))
        except subprocess.TimeoutExpired as exc:
            if time.monotonic() >= deadline:
                proc.kill()
                proc.communicate()
                raise Passing(
                    f"verification timed out after {timeout:g}s in node; the target may "
                    "loop forever, or raise verify_timeout in the config"
                ) from exc


def run_script(
    node: str,
    script: Path,
    job: dict[str, Any],
    timeout: float,
    cancel: threading.Event | None,
    sandbox: Sandbox,
    what: str,
    fixtures: str | None = None,
) -> dict[str, Any]:
    """The one node harness client: run `script` (in a folder of `sandbox`) with the job on stdin,
    as the sandbox's owner, cancellable (`cancel` kills node within ~0.1 s) and bounded by
    `timeout`, and read its one JSON report. `fixtures`, when
    given, is JSON text spliced into the job as it is. The script writes its report after the job's
    reportTag, so what the code under test prints on stdout is never taken for it."""
    tag = f"senpi-guard-report-{secrets.token_hex(8)}:"
    ui.slow_step_begins()
    # the job goes in through a file: communicate() in slices cannot resume writing a pipe
    with tempfile.TemporaryFile("w+", encoding="utf-8", dir=sandbox.work_dir) as job_file:
        text = json.dumps({**job, "reportTag": tag})
        job_file.write(text if fixtures is None else text[:-1] + ', "fixtures": ' + fixtures + "}")
        job_file.seek(0)
        proc = subprocess.Popen(
            [node, str(script)],
            stdin=job_file,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **sandbox.popen_kwargs(script.parent),  # (every harness is at the top of its replay folder)
        )
        try:
            stdout, stderr = _communicate(proc, timeout, cancel)
        except BaseException:  # ^C included: node must not outlive the replay it was started for
            proc.kill()
            proc.wait()
            raise
    report = _report(stdout, tag)
    if report is None:
        raise FatalError(_no_report(what, proc.returncode, stdout, stderr))
    if "error" in report:
        raise FatalError(f"{what} could not load the modules: {report['error']}")
    return report


def _report(stdout: str, tag: str) -> dict[str, Any] | None:
    at = stdout.find(tag)
    if at == -1:
        return None
    try:  # (raw_decode: what the code under test prints after the report is not part of it)
        report, _ = json.JSONDecoder().raw_decode(stdout, at + len(tag))
    except ValueError:
        return None
    return report if isinstance(report, dict) else None


def error_lines(lines: list[str]) -> list[str]:
    """node's "SomeError: what" lines of its stderr (it also prints the source line and its version)."""
    return [line for line in lines if re.match(r"(Uncaught )?[A-Za-z]*Error\b", line)]


def _no_report(what: str, code: int, stdout: str, stderr: str) -> str:
    """Why node gave no report: how it ended, its last error line, what the code printed."""
    how = f"killed by signal {-code}" if code < 0 else f"exit {code}"
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = error_lines(lines) or lines[-1:]
    printed = " | ".join(line.strip()[:200] for line in stdout.strip().splitlines()[:3])
    return (
        f"{what} ended without its report ({how})"
        + (f": {errors[0][:300]}" if errors else "")
        + (f"; the code it loaded printed to stdout: {printed!r}" if printed else "")
    )


def run_harness(
    node: str,
    place: Mirror,
    job: dict[str, Any],
    timeout: float,
    cancel: threading.Event | None = None,
    fixtures: str | None = None,
) -> dict[str, Any]:
    return run_script(
        node,
        place.harness,
        job,
        timeout,
        cancel,
        place.sandbox,
        "the verification harness",
        fixtures,
    )


def harness_job(mode: str, patch: Patch, config: Config, place: Mirror, pairs: dict[str, ModulePair]) -> dict[str, Any]:
    """The first line the harness reads: the modules by role (original and patched), the patch's
    checks, its settings, each target's own fixtures, and the rendered extension where a target's
    replay needs it."""

    def spec(module: ModulePair | None) -> dict[str, Any] | None:
        if module is None:
            return None
        original, candidate = place.placed[module.real_path]
        return {
            "original": str(original),
            "export": module.export,
            "candidate": str(candidate) if module.candidate is not None else None,
        }

    job = {
        "mode": mode,
        "call": patch.call,
        **patch.job_settings(config),
        "checks": str(place.checks),
        "modules": {role: spec(pair) for role, pair in pairs.items()},
        "targetFixtures": {
            t.role: patch.load_fixtures(patch.root / t.fixtures)
            for t in patch.targets
            if t.fixtures and t.role in pairs
        },
    }
    if EXTENSION_COPY in place.extras:
        job["extension"] = str(place.extras[EXTENSION_COPY])
    return job


# The rendered extension, beside the harness, for a target whose replay runs it (.mjs: the mirror
# folder has no package.json saying "module").
EXTENSION_COPY = "extension.mjs"


def extras_for(patch: Patch, config: Config, pairs: dict[str, ModulePair]) -> dict[str, bytes]:
    """Files the harness needs beside the modules: the extension, for a target that runs it."""
    if patch.extension is None or not any(t.with_extension and t.role in pairs for t in patch.targets):
        return {}
    return {EXTENSION_COPY: patch.render_extension(config).encode("utf-8")}


def replay(
    package_dir: Path,
    pairs: dict[str, ModulePair],
    patch: Patch,
    config: Config,
    sandbox: Sandbox,
    cancel: threading.Event | None = None,
) -> VerifyReport:
    """Run the harness once over all fixtures. The harness imports every candidate, so a syntax
    error stops it; only then does `node --check` run, to say where the error is."""
    node, version = nodes.node_for(package_dir)[:2]
    modules = list(pairs.values())
    timeout = config.verify_timeout
    fixtures = fixtures_json(patch, patch.root / "fixtures", sandbox.work_dir.parent / "cache")
    with mirror(package_dir, modules, patch.checks_path, sandbox, extras_for(patch, config, pairs)) as place:
        job = harness_job("verify", patch, config, place, pairs)
        try:
            report = run_harness(node, place, job, timeout, cancel, fixtures)
        except (Cancelled, Passing):  # (out of time: no syntax error, which fails at once)
            raise
        except FatalError as failure:
            errors = [
                f"{module.real_path.name}: {problem}"
                for module in modules
                if module.candidate is not None
                and (
                    problem := finish_node_check(
                        start_node_check(node, place.placed[module.real_path][1], place.popen_kwargs()), timeout
                    )
                )
            ]
            if errors:
                return summarize({"node": version, "check_errors": errors})
            raise failure
        report["node"] = version
        return summarize(report)


def summarize(report: dict[str, Any]) -> VerifyReport:
    if report.get("check_errors"):
        failures = [Failure("-", "node-check", e) for e in report["check_errors"]]
        return VerifyReport(False, failures, 0, {}, report.get("node", ""))
    results = report.get("results", [])
    failures = [Failure(r["fixture"], r["check"], r["detail"]) for r in results if not r["ok"]]
    return VerifyReport(
        not failures and bool(results), failures, len(results), report.get("stats", {}), report.get("node", "")
    )


def fixtures_json(patch: Patch, folder: Path, cache_dir: Path | None = None) -> str:
    """The expanded fixtures as JSON text (a few MB), kept in `cache_dir` by a digest of the
    fixture files and of this expansion code: expanding and encoding them costs more than a replay's
    own checks."""
    sources = sorted(folder.glob("*.json"))
    digest = hashlib.sha256(patch.fixtures_format.encode() + b"\0")
    for code in FIXTURES_CODE:
        digest.update(reader.own_data(code))
    for path in sources:
        digest.update(path.name.encode() + b"\0" + reader.own_data(path) + b"\0")
    cached = cache_dir / f"fixtures-{digest.hexdigest()[:24]}.json" if cache_dir else None
    if cached is not None:
        with contextlib.suppress(OSError, UnicodeDecodeError, reader.Refused):
            return reader.read(cached, reader.STATE).decode("utf-8")
    text = json.dumps(patch.load_fixtures(folder))
    if cached is not None:
        with contextlib.suppress(FatalError):  # not keeping it only costs the next run the expansion
            for old in cache_dir.glob("fixtures-*.json"):
                old.unlink(missing_ok=True)
            write_private(cached, text.encode())
    return text
