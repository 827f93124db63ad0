"""Write senpi-shaped sample packages (three shapes), pack them and install them with real npm.

Used by `senpi-guard demo`, the tests and the benchmarks. The JavaScript under samples/ is
senpi-guard's own code, shaped like the compiled senpi files described in the project facts.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from senpi_guard.errors import FatalError

PACKAGE_NAME = "@code-yeongyu/senpi"
SHAPE_DIRS = {1: "claude-agent-sdk", 2: "claude-sdk-oauth", 3: "claude-sdk-oauth"}
SHAPE_VERSIONS = {1: "2026.7.30", 2: "2026.8.1", 3: "2026.8.5"}


def sample_source(name: str) -> str:
    return resources.files("senpi_guard.demo").joinpath("samples", name).read_text("utf-8").rstrip("\n")


def _write_js(path: Path, code: str, ts_source: str | None = None) -> None:
    """Write a compiled-looking .js (no trailing newline) and its .js.map embedding a TS source."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(code.encode("utf-8"))
    source_map = {
        "version": 3,
        "file": path.name,
        "sourceRoot": "",
        "sources": [f"../src/{path.stem}.ts"],
        "sourcesContent": [ts_source if ts_source is not None else code],
        "names": [],
        "mappings": "AAAA",
    }
    path.with_name(path.name + ".map").write_text(json.dumps(source_map), "utf-8")
    path.with_name(path.stem + ".d.ts").write_text(
        "export {};\n//# sourceMappingURL=" + path.stem + ".d.ts.map", "utf-8"
    )


def prompt_bridge_source(shape: int) -> str:
    return sample_source("prompt-bridge-v1.js" if shape == 1 else "prompt-bridge-v2.js")


def write_sample_package(
    dest: Path, shape: int, version: str | None = None, fillers: int = 120, bridge_source: str | None = None
) -> Path:
    """Create a senpi-shaped package in `dest`; return the prompt-bridge.js path."""
    if shape not in SHAPE_DIRS:
        raise ValueError(f"shape must be 1, 2 or 3, not {shape}")
    version = version or SHAPE_VERSIONS[shape]
    dest.mkdir(parents=True, exist_ok=True)
    manifest = {
        "name": PACKAGE_NAME,
        "version": version,
        "type": "module",
        "bin": {"senpi": "dist/cli.js"},
        "engines": {"node": ">=18"},
        "files": ["dist"],
        "piConfig": {"name": "senpi", "configDir": ".senpi"},
    }
    (dest / "package.json").write_text(json.dumps(manifest, indent=2), "utf-8")
    dist = dest / "dist"
    _write_js(dist / "cli.js", sample_source("cli.js"))
    _write_js(dist / "config.js", sample_source("config.js"))
    (dist / "cli.js").chmod(0o755)
    provider = dist / "core" / "extensions" / "builtin" / SHAPE_DIRS[shape]
    bridge = provider / "prompt-bridge.js"
    ts_note = (
        "// TypeScript source of buildPromptBlocks (not compiled JS)\n"
        "export function buildPromptBlocks(context: Context): Block[] { return []; }"
    )
    _write_js(bridge, bridge_source if bridge_source is not None else prompt_bridge_source(shape), ts_note)
    _write_js(provider / "tools.js", sample_source("tools.js"))
    _write_js(provider / "stream.js", sample_source("stream-v3.js" if shape == 3 else "stream-v2.js"))
    _write_js(dist / "core" / "session-manager.js", sample_source("session-manager.js"))
    _write_js(dist / "core" / "messages.js", sample_source("messages.js"))
    _write_js(dist / "core" / "extensions" / "loader.js", sample_source("loader.js"))
    _write_js(dist / "core" / "extensions" / "runner.js", sample_source("runner.js"))
    if shape > 1:  # the resident session's delta lane came with the claude-sdk-oauth provider
        _write_js(provider / "session-sync.js", sample_source("session-sync.js"))
    if shape == 3:
        _write_js(provider / "prompt-directive-dedupe.js", sample_source("prompt-directive-dedupe.js"))
        session_stream = sample_source("stream-v3.js").replace("preparePrompt", "prepareSessionPrompt")
        _write_js(provider / "session-stream.js", session_stream.replace("stream.js.map", "session-stream.js.map"))
    for index in range(fillers):
        area = ("agent", "tui", "tools", "providers", "session")[index % 5]
        code = (
            f"export function helper{index}(value) {{\n"
            f"    // mentions buildPromptBlocks only in a comment\n"
            f"    return `{area}:{index}:${{value}}`;\n}}\n"
            f"//# sourceMappingURL=module{index}.js.map"
        )
        _write_js(dist / "core" / area / f"module{index}.js", code)
    return bridge


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise FatalError(f"`{name}` was not found on PATH; install Node.js (with npm) and retry")
    return path


def npm_pack(package_dir: Path, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [
            require_tool("npm"),
            "pack",
            "--json",
            "--pack-destination",
            str(out_dir.resolve()),
            str(package_dir.resolve()),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise FatalError(f"npm pack {package_dir} failed: {result.stderr.strip()[-300:]}")
    filename = json.loads(result.stdout)[0]["filename"]
    return out_dir / Path(filename).name


def npm_install_global(tarball: Path, prefix: Path) -> Path:
    """Install `tarball` the way `senpi update` does with npm; return the package dir."""
    result = subprocess.run(
        [
            require_tool("npm"),
            "install",
            "-g",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(prefix.resolve()),
            str(tarball.resolve()),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise FatalError(f"npm install -g {tarball} failed: {result.stderr.strip()[-300:]}")
    return npm_package_dir(prefix)


def npm_package_dir(prefix: Path) -> Path:
    """Where `npm install -g --prefix PREFIX` puts the sample senpi."""
    return prefix / "lib" / "node_modules" / "@code-yeongyu" / "senpi"
