"""The extension layer: one senpi extension file in <agent dir>/extensions/, rendered from the patch
(same tags, same marker), proven by replaying fixture sessions through it before it is written, and
found again by its header line (never by folder contents: every other file there is the user's).

States: `installed` (what this senpi-guard renders), `stale` (ours, from another version or
config), `modified` (ours, edited since: its content no longer matches the sha256 in its header),
`absent`, and `foreign` (a file of that name that is not ours: never touched)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from senpi_guard.core import jssyntax, locate
from senpi_guard.core.patch.definition import Patch
from senpi_guard.core.patch.fixtures import load_fixtures
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.io.write import os_error, private_dirs
from senpi_guard.prove import nodes, replays
from senpi_guard.prove.verify import Failure, VerifyReport

HARNESS = Path(str(resources.files("senpi_guard.prove").joinpath("js", "extension_harness.mjs")))
HEADER_RE = re.compile(r"^// senpi-guard: (?P<name>[\w.-]+) v(?P<version>\d+) layer=extension "
                       r"config-sha256=(?P<config>[0-9a-f]{16}) content-sha256=(?P<content>[0-9a-f]{64})\n")
RUNNER_CLASS = b"class ExtensionRunner"


@dataclass
class LayerStatus:
    state: str  # installed, stale, modified, absent, foreign
    path: Path
    detail: str = ""


@dataclass
class LayerOutcome:
    path: Path
    before: str
    after: str
    ok: bool
    detail: str
    report: VerifyReport | None = None
    kept: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"layer": "extension", "path": str(self.path), "state_before": self.before, "state": self.after,
                "ok": self.ok, "detail": self.detail, "kept": self.kept,
                "checks": self.report.checks_run if self.report else None}


def target_path(patch: Patch, agent_dir: Path) -> Path:
    return agent_dir / "extensions" / patch.extension.file_name


def inspect(patch: Patch, config: Config, agent_dir: Path) -> LayerStatus:
    path = target_path(patch, agent_dir)
    try:
        if path.is_symlink():
            return LayerStatus("foreign", path, "a symbolic link, not senpi-guard's file")
        data = path.read_bytes()
    except FileNotFoundError:
        return LayerStatus("absent", path)
    except OSError as exc:
        raise os_error(exc, "read", path, "fix the permissions of the extensions folder") from exc
    text = data.decode("utf-8", "replace")
    header = HEADER_RE.match(text)
    if header is None or header["name"] != patch.name:
        return LayerStatus("foreign", path, "it has no senpi-guard header: it is not senpi-guard's")
    body = text[header.end():]
    if hashlib.sha256(body.encode()).hexdigest() != header["content"]:
        return LayerStatus("modified", path, "edited since senpi-guard wrote it")
    if text != patch.render_extension(config):
        return LayerStatus("stale", path, f"written by {patch.name} v{header['version']} with config "
                           f"{header['config']}; apply renders v{patch.version} {patch.config_digest(config)}")
    return LayerStatus("installed", path)


def _defines_runner(path: Path) -> bool:
    """The file that defines and exports `class ExtensionRunner` (by syntax tree; a re-export, as
    senpi's index.js files hold, does not count)."""
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if RUNNER_CLASS not in data:
        return False
    try:
        root = jssyntax.parse(data).root_node
    except jssyntax.JsSyntaxError:
        return False
    for node in root.named_children:
        declaration = node.child_by_field_name("declaration") if node.type == "export_statement" else None
        name = declaration.child_by_field_name("name") if declaration is not None else None
        if declaration is not None and declaration.type == "class_declaration" and name is not None \
                and name.text == b"ExtensionRunner":
            return True
    return False


def _senpi_host(installs: list[Install], allow_foreign_root: bool) -> tuple[Install | None, dict | None]:
    """The installed senpi's own extension loader and runner, found by what its files export; None
    when there is none (or root would have to run another user's code)."""
    for install in installs:
        if install.unsupported:
            continue
        files = locate.js_files(install.package_dir / "dist")
        found = locate.find_exported_functions(files, ["loadExtensions", "createExtensionRuntime"])
        runners = [f for f in files if _defines_runner(Path(f))]
        if len(runners) != 1 or any(len({h.path for h in hits}) != 1 for hits in found.values()):
            continue
        if os.geteuid() == 0 and not allow_foreign_root and install.package_dir.stat().st_uid != 0:
            continue  # (root never runs another user's code)
        return install, {"loader": str(found["loadExtensions"][0].path), "runner": runners[0]}
    return None, None


def _replay_key(patch: Patch, rendered: str, install: Install | None, host: dict | None, node) -> str:
    """Everything the replay's result depends on: the rendered file, the checks, the fixtures, the
    harness, the node, and the host senpi's loader, runner and dist/ (as status stamps them)."""
    def sha(path: Path) -> str:
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return f"unreadable {time.time()}"  # never matches: the replay runs
    harness = HARNESS
    fixtures = sorted(p for p in patch.extension.fixtures.rglob("*") if p.is_file())
    parts = {"extension": hashlib.sha256(rendered.encode()).hexdigest(), "node": [node.path, node.version],
             "files": [sha(p) for p in (patch.extension.checks, patch.checks_path, harness, *fixtures)],
             "host": {k: [v, sha(Path(v))] for k, v in sorted((host or {}).items())},
             "dist": replays.package_stamp(install.package_dir) if install else None}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def replay(patch: Patch, config: Config, rendered: str, installs: list[Install], store: Store,
           allow_foreign_root: bool = False, reuse: bool = True) -> VerifyReport:
    """Run the fixture sessions through the rendered extension with node: directly and, when an
    installed senpi's own loader and runner import, through them. A passing replay is remembered by
    everything it depends on (`reuse`: trust one from an earlier run)."""
    install, host = _senpi_host(installs, allow_foreign_root)
    node = nodes.node_for(install.package_dir if install else None)
    memo = replays.ReplayMemo(store.state_dir / "replays.json")
    key = _replay_key(patch, rendered, install, host, node)
    known = memo.get(key, reuse)
    if known is not None:
        return known
    report = _run_replay(patch, config, rendered, store, host, node)
    memo.put(key, report)
    return report


def _run_replay(patch: Patch, config: Config, rendered: str, store: Store, host: dict | None,
                node) -> VerifyReport:
    work = store.state_dir / "verify"
    private_dirs(work)
    folder = work / f"senpi-guard-verify-{os.getpid()}-ext-{secrets.token_hex(4)}"
    folder.mkdir(mode=0o700)
    try:
        extension = folder / patch.extension.file_name
        extension.write_text(rendered, "utf-8")
        checks = folder / "extension-checks.mjs"
        shutil.copyfile(patch.extension.checks, checks)
        shutil.copyfile(patch.checks_path, folder / "checks.mjs")  # (it imports the span scan)
        harness = folder / "extension_harness.mjs"
        shutil.copyfile(HARNESS, harness)
        job = {"extension": str(extension), "checks": str(checks), "host": host, "cwd": str(folder),
               "tags": list(config.tags), "marker": patch.marker_template,
               "maxMarkerBytes": patch.max_marker_bytes, "fixtures": load_fixtures(patch.extension.fixtures)}
        try:
            result = subprocess.run([node.path, str(harness)], input=json.dumps(job), capture_output=True,
                                    text=True, timeout=config.verify_timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise FatalError(f"the extension's replay timed out after {config.verify_timeout:g}s; raise "
                             "verify_timeout in the config") from exc
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError as exc:
        tail = (result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1]
        raise FatalError(f"the extension's replay crashed in node: {tail}") from exc
    if "error" in report:
        raise FatalError(f"the extension could not be loaded for its replay: {report['error']}")
    failures = [Failure(r["fixture"], r["check"], r["detail"]) for r in report["results"] if not r["ok"]]
    return VerifyReport(not failures and bool(report["results"]), failures, len(report["results"]),
                        {"host": report["host"], "host_unavailable": report.get("hostUnavailable")},
                        node.version)


def _write_atomic(path: Path, data: bytes) -> None:
    """Temp file beside the target, then a rename relative to the folder opened (links not
    followed); the new file takes the folder's owner when root writes into another user's folder."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        raise os_error(exc, "open", folder, "create it or fix its permissions, then retry") from exc
    tmp = f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd)
        try:
            os.write(out, data)
            os.fsync(out)
            owner = os.fstat(fd)
            if os.geteuid() == 0 and owner.st_uid != 0:
                os.fchown(out, owner.st_uid, owner.st_gid)
        finally:
            os.close(out)
        os.replace(tmp, path.name, src_dir_fd=fd, dst_dir_fd=fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=fd)
        raise os_error(exc, "write", path, "free space or fix the folder's permissions, then retry") from exc
    finally:
        os.close(fd)


def _keep_aside(path: Path, store: Store) -> str:
    """Move an edited extension out of the extensions folder (where senpi would still load it)."""
    kept = store.data_dir / "extension-kept" / f"{time.strftime('%Y%m%d-%H%M%S')}-{path.name}"
    try:
        private_dirs(kept.parent)
        shutil.move(str(path), kept)
    except OSError as exc:
        raise os_error(exc, "move aside", path, "move it away by hand, then retry") from exc
    return str(kept)


def install(patch: Patch, config: Config, installs: list[Install], store: Store, agent_dir: Path,
            dry_run: bool = False, allow_foreign_root: bool = False) -> LayerOutcome:
    try:
        status = inspect(patch, config, agent_dir)
    except FatalError as exc:  # (an unreadable extensions folder: one line, the installs still done)
        return LayerOutcome(target_path(patch, agent_dir), "error", "error", False, str(exc))
    path = status.path
    if status.state == "foreign":
        return LayerOutcome(path, "foreign", "foreign", False, f"{path} is there and {status.detail}; "
                            "senpi-guard never changes it: rename it, then run apply again")
    if status.state == "installed":
        return LayerOutcome(path, "installed", "installed", True, "already installed")
    rendered = patch.render_extension(config)
    try:
        report = replay(patch, config, rendered, installs, store, allow_foreign_root)
    except FatalError as exc:
        return LayerOutcome(path, status.state, status.state, False, str(exc))
    if not report.ok:
        first = report.failures[0] if report.failures else "no checks ran"
        return LayerOutcome(path, status.state, status.state, False, f"verification failed, nothing was "
                            f"written: {first} ({len(report.failures)} failed of {report.checks_run})", report)
    if dry_run:
        return LayerOutcome(path, status.state, status.state, True,
                            f"dry run: verified ({report.checks_run} checks), would write {path}", report)
    try:
        kept = [_keep_aside(path, store)] if status.state == "modified" else []
        _write_atomic(path, rendered.encode("utf-8"))
    except FatalError as exc:
        return LayerOutcome(path, status.state, status.state, False, str(exc), report)
    host = "senpi's own extension runner" if report.stats.get("host") == "senpi" else "a minimal host"
    if report.stats.get("host_unavailable"):
        host += f" (senpi's own runner did not import: {report.stats['host_unavailable']})"
    if report.reused_from is not None:
        host += time.strftime("; the identical replay passed at %Y-%m-%d %H:%M", time.localtime(report.reused_from))
    return LayerOutcome(path, status.state, "installed", True, f"verified: {report.checks_run} checks "
                        f"passed through {host} (node {report.node_version})", report, kept)


def remove(patch: Patch, config: Config, store: Store, agent_dir: Path) -> LayerOutcome:
    try:
        status = inspect(patch, config, agent_dir)
    except FatalError as exc:
        return LayerOutcome(target_path(patch, agent_dir), "error", "error", False, str(exc))
    path = status.path
    if status.state in ("absent", "foreign"):
        note = "not installed" if status.state == "absent" else f"{status.detail}; left alone"
        return LayerOutcome(path, status.state, status.state, True, note)
    if status.state == "modified":
        try:
            kept = _keep_aside(path, store)
        except FatalError as exc:
            return LayerOutcome(path, "modified", "modified", False, str(exc))
        return LayerOutcome(path, "modified", "absent", True, f"removed; it had been edited, so it was "
                            f"kept at {kept}", kept=[kept])
    try:
        path.unlink()
    except OSError as exc:
        return LayerOutcome(path, status.state, status.state, False,
                            str(os_error(exc, "remove", path, "fix the folder's permissions, then retry")))
    return LayerOutcome(path, status.state, "absent", True, "removed")


def refuse(patch: Patch, config: Config, store: Store, agent_dir: Path, reason: str,
           ok: bool = False) -> LayerOutcome:
    """The extension must not be in this agent dir: not installed, and ours taken away if it is
    there. `ok`: the config asked for that (nothing failed)."""
    try:
        status = inspect(patch, config, agent_dir)
    except FatalError as exc:
        return LayerOutcome(target_path(patch, agent_dir), "error", "error", False, str(exc))
    if status.state not in ("installed", "stale", "modified"):
        return LayerOutcome(status.path, status.state, status.state, ok, reason)
    removed = remove(patch, config, store, agent_dir)
    detail = f"{reason}; senpi-guard's extension was taken out of it" if removed.ok else removed.detail
    return LayerOutcome(status.path, status.state, removed.after, ok and removed.ok, detail, kept=removed.kept)
