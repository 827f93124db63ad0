"""The extension layer's proof: its fixture sessions replayed with node through the rendered file,
directly and, when an installed senpi has them, through senpi's own extension loader and runner; in
a prove/sandbox folder, as the owner prove/owners judges (as root, never another user's code as
root), remembered by everything the result depends on."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path

from senpi_guard.core import jssyntax, locate
from senpi_guard.core.patch.definition import Patch
from senpi_guard.discover import Install
from senpi_guard.errors import FatalError
from senpi_guard.io import memo, reader
from senpi_guard.io.config import Config
from senpi_guard.io.store import Store
from senpi_guard.layers import extension_proofs as proofs
from senpi_guard.prove import nodes, replays, sandbox
from senpi_guard.prove import verify as verify_mod
from senpi_guard.prove.sandbox import Sandbox
from senpi_guard.prove.verify import VerifyReport

HARNESS = "extension_harness.mjs"
RUNNER_CLASS = b"class ExtensionRunner"
LOADER_EXPORTS = ["loadExtensions", "createExtensionRuntime"]
HOST_MEMO = "senpi-host"
HOST_BY_RELEASE = "senpi-host-by-release"  # (by locate.listing_key: a reinstall of the same release)


def _defines_runner(path: Path) -> bool:
    """The file that defines and exports `class ExtensionRunner` (by syntax tree; a re-export, as
    senpi's index.js files hold, does not count)."""
    try:
        data = reader.read(path, reader.DIST)
    except (OSError, reader.Refused):
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
        if (
            declaration is not None
            and declaration.type == "class_declaration"
            and name is not None
            and name.text == b"ExtensionRunner"
        ):
            return True
    return False


def senpi_host(installs: list[Install], allow_foreign_root: bool = False) -> tuple[Install | None, dict | None]:
    """The installed senpi's own extension loader and runner, found by what its files export; None
    when there is none (or root would have to run another user's code)."""
    refused: FatalError | None = None
    for install in installs:
        if install.unsupported:
            continue
        try:
            host = _remembered_host(install.package_dir) or _find_host(install.package_dir)
        except FatalError as exc:  # (a dist/ file refused, a sparse giant say: the next install's host)
            refused = refused or exc
            continue
        if host is not None:
            return install, host
    if refused is not None:
        raise refused
    return None, None


def _find_host(package_dir: Path) -> dict | None:
    """One walk of dist/: the one file exporting the loader's functions, the one defining the runner
    (where they were in a release with the same package.json and .js files, while they still are;
    else each .js file is read)."""
    dist = package_dir / "dist"
    files = locate.js_files(dist)
    key = locate.listing_key(package_dir, dist, files)
    same = memo.recall(HOST_BY_RELEASE, key)
    if isinstance(same, dict) and all(isinstance(same.get(k), str) for k in ("loader", "runner")):
        host = _still_hosts({k: str(dist / same[k]) for k in ("loader", "runner")})
        if host is not None:
            memo.remember(HOST_MEMO, _host_key(package_dir), host)
            return host
    mentions = locate.mentioning(files, [RUNNER_CLASS, *(name.encode() for name in LOADER_EXPORTS)])
    runners = [f for f in mentions.pop(RUNNER_CLASS) if _defines_runner(Path(f))]
    found = locate.find_exported_functions(sorted({f for where in mentions.values() for f in where}), LOADER_EXPORTS)
    if len(runners) != 1 or any(len({h.path for h in hits}) != 1 for hits in found.values()):
        return None
    host = {"loader": str(found[LOADER_EXPORTS[0]][0].path), "runner": str(runners[0])}
    memo.remember(HOST_MEMO, _host_key(package_dir), host)
    memo.remember(HOST_BY_RELEASE, key, {k: str(Path(v).relative_to(dist)) for k, v in host.items()})
    return host


def _host_key(package_dir: Path) -> str | None:
    stamp = replays.package_stamp(package_dir)
    return None if stamp is None else json.dumps([str(package_dir), stamp])


def _remembered_host(package_dir: Path) -> dict | None:
    """Where the walk found them, while package.json and dist/ look as they did then (an update
    changes both) and those files still export and define them (two files parsed, not dist/'s
    thousands)."""
    host = memo.recall(HOST_MEMO, _host_key(package_dir))
    if not isinstance(host, dict) or not all(isinstance(host.get(k), str) for k in ("loader", "runner")):
        return None
    return _still_hosts(host)


def _still_hosts(host: dict) -> dict | None:
    """These files, while they still export the loader's functions and define the runner."""
    loader = Path(host["loader"])
    try:
        found = locate.find_exported_functions([loader], LOADER_EXPORTS)
    except FatalError:
        return None
    if all(found[name] for name in LOADER_EXPORTS) and _defines_runner(Path(host["runner"])):
        return {"loader": host["loader"], "runner": host["runner"]}
    return None


def _replay_parts(patch: Patch, rendered: str, install: Install | None, host: dict | None, node) -> dict:
    """Everything the replay's result depends on: the rendered file, the checks, the fixtures, the
    harness, the node, and the host senpi's loader, runner and dist/ (as status stamps them)."""

    def sha(path: Path) -> str:
        try:
            return reader.sha256(path, reader.DIST)
        except (OSError, reader.Refused):
            return f"unreadable {time.time()}"  # never matches: the replay runs

    fixtures = sorted(p for p in patch.extension.fixtures.rglob("*") if p.is_file())
    return {
        "extension": hashlib.sha256(rendered.encode()).hexdigest(),
        "node": [node.path, node.version],
        "harness": hashlib.sha256(sandbox.harness_bytes(HARNESS)).hexdigest(),
        "files": [sha(p) for p in (patch.extension.checks, *patch.scripts(), *fixtures)],
        "host": {k: [v, sha(Path(v))] for k, v in sorted((host or {}).items())},
        "dist": replays.package_stamp(install.package_dir) if install else None,
    }


def _keys(parts: dict) -> tuple[str, str]:
    """The key by identity (dist/'s stamp, node's path) and the key by content (node's version; the
    files node loaded are checked beside it: extension_proofs)."""
    by_content = {**parts, "dist": None, "node": parts["node"][1]}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest(), proofs.content_key(by_content)


def replay(
    patch: Patch,
    config: Config,
    rendered: str,
    installs: list[Install],
    store: Store,
    allow_foreign_root: bool = False,
    reuse: bool = True,
    cancel: threading.Event | None = None,
) -> VerifyReport:
    """Run the fixture sessions through the rendered extension with node: directly and, when an
    installed senpi's own loader and runner import, through them. A passing replay is remembered by
    everything it depends on (`reuse`: trust one from an earlier run)."""
    install, host = senpi_host(installs, allow_foreign_root)
    node = nodes.node_for(install.package_dir if install else None)
    memo = replays.ReplayMemo(store.state_dir / "replays.json")
    key, by_content = _keys(_replay_parts(patch, rendered, install, host, node))
    known = memo.get(key, reuse)
    if known is not None:
        return known
    content = proofs.ContentProofs(store.state_dir / "extension-proofs.json")
    known = content.get(by_content) if reuse and host else None
    if known is not None:  # (the same bytes loaded as when it passed: a reinstall, a new inode)
        memo.put(key, known)
        return known
    # as root: node and the host's code never run as root over code anyone else could write
    package_dir = install.package_dir if install else None
    place = Sandbox.judged(store.state_dir / "verify", package_dir, node.path, allow_foreign_root)
    looked = any(not i.unsupported for i in installs)  # (a senpi whose dist/ was searched for its runner)
    report = content.put(by_content, _run_replay(patch, config, rendered, place, host, node, cancel, looked))
    memo.put(key, report)
    return report


def _run_replay(
    patch: Patch,
    config: Config,
    rendered: str,
    place: Sandbox,
    host: dict | None,
    node,
    cancel: threading.Event | None = None,
    looked: bool = False,
    measure: list[dict] | None = None,
) -> VerifyReport:
    files = {
        **{script.name: reader.own_data(script) for script in patch.scripts()},  # (the checks import the span scan)
        "extension-checks.mjs": reader.own_data(patch.extension.checks),
        patch.extension.file_name: rendered.encode("utf-8"),
    }
    with place.folder("-ext", HARNESS, files) as folder:
        job = {
            "extension": str(folder / patch.extension.file_name),
            "checks": str(folder / "extension-checks.mjs"),
            "host": host,
            "cwd": str(folder),
            **patch.job_settings(config),
            "fixtures": patch.load_fixtures(patch.extension.fixtures),
            "measure": measure or [],
        }
        report = verify_mod.run_script(
            node.path, folder / HARNESS, job, config.verify_timeout, cancel, place, "the extension's replay"
        )
    stats = {
        "host": report["host"],
        "host_unavailable": report.get("hostUnavailable"),
        "host_missing": looked and host is None,  # (searched for, not found: said, never silent)
        proofs.IMPORTED: report.get("imported"),
        "sizes": report.get("sizes") or {},
    }
    return verify_mod.summarize({"results": report["results"], "stats": stats, "node": node.version})


def measure(patch: Patch, config: Config, store: Store, fixtures: list[dict]) -> VerifyReport:
    """The extension's replay through the minimal host (its output does not depend on senpi's
    runner, which hands the messages over as they are) with `fixtures` measured too: the text
    bytes of each before and after (stats["sizes"]). Never remembered: a figure, not a proof."""
    node = nodes.node_for(None)
    place = Sandbox.judged(store.state_dir / "verify", None, node.path, False)
    return _run_replay(patch, config, patch.render_extension(config), place, None, node, measure=fixtures)
