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
    return resources.files("senpi_guard").joinpath("samples", name).read_text("utf-8").rstrip("\n")


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


def write_sample_package(dest: Path, shape: int, version: str | None = None,
                         fillers: int = 120, bridge_source: str | None = None) -> Path:
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
    }
    (dest / "package.json").write_text(json.dumps(manifest, indent=2), "utf-8")
    dist = dest / "dist"
    _write_js(dist / "cli.js", sample_source("cli.js"))
    (dist / "cli.js").chmod(0o755)
    provider = dist / "core" / "extensions" / "builtin" / SHAPE_DIRS[shape]
    bridge = provider / "prompt-bridge.js"
    ts_note = ("// TypeScript source of buildPromptBlocks (not compiled JS)\n"
               "export function buildPromptBlocks(context: Context): Block[] { return []; }")
    _write_js(bridge, bridge_source if bridge_source is not None else prompt_bridge_source(shape),
              ts_note)
    _write_js(provider / "tools.js", sample_source("tools.js"))
    _write_js(provider / "stream.js", sample_source("stream-v3.js" if shape == 3 else "stream-v2.js"))
    if shape == 3:
        _write_js(provider / "prompt-directive-dedupe.js", sample_source("prompt-directive-dedupe.js"))
        session_stream = sample_source("stream-v3.js").replace("preparePrompt", "prepareSessionPrompt")
        _write_js(provider / "session-stream.js", session_stream.replace("stream.js.map",
                                                                         "session-stream.js.map"))
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
        [require_tool("npm"), "pack", "--json", "--pack-destination", str(out_dir.resolve()),
         str(package_dir.resolve())],
        capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        raise FatalError(f"npm pack {package_dir} failed: {result.stderr.strip()[-300:]}")
    filename = json.loads(result.stdout)[0]["filename"]
    return out_dir / Path(filename).name


def npm_install_global(tarball: Path, prefix: Path) -> Path:
    """Install `tarball` the way `senpi update` does with npm; return the package dir."""
    result = subprocess.run(
        [require_tool("npm"), "install", "-g", "--ignore-scripts", "--no-audit", "--no-fund",
         "--prefix", str(prefix.resolve()), str(tarball.resolve())],
        capture_output=True, text=True, check=False,
    )
    if result.returncode != 0:
        raise FatalError(f"npm install -g {tarball} failed: {result.stderr.strip()[-300:]}")
    return prefix / "lib" / "node_modules" / "@code-yeongyu" / "senpi"


class _SessionWriter:
    """Writes senpi session entries (JSONL), each chained to the previous one by parentId."""

    STAMP = "2026-11-20T10:00:00.000Z"

    def __init__(self, out, model: str) -> None:
        self.out = out
        self.model = model
        self.counter = iter(range(1, 10**9))
        self.parent: str | None = None

    def raw(self, line: str) -> None:
        self.out.write(line)

    def emit(self, entry: dict, chain: bool = True) -> str:
        entry = {"type": entry["type"], "id": f"{next(self.counter):08x}", "parentId": self.parent,
                 "timestamp": self.STAMP} | entry
        self.out.write(json.dumps(entry, separators=(",", ":")) + "\n")
        if chain:
            self.parent = entry["id"]
        return entry["id"]

    def message(self, message: dict) -> str:
        return self.emit({"type": "message", "message": message})

    def assistant(self, content: list, usage: dict) -> str:
        return self.message({"role": "assistant", "model": self.model, "content": content, "usage": usage})

    def step(self, turn: int, user_text: str, tool_text: str) -> list[str]:
        """One user message, a tool call, its result and the closing assistant message."""
        call = f"toolu_{turn:04d}"
        ids = [self.message({"role": "user", "content": [{"type": "text", "text": user_text}]})]
        ids.append(self.assistant(
            [{"type": "text", "text": f"Running the tests for step {turn}."},
             {"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": "pytest -q"}}],
            {"input": 900 + turn, "output": 120, "cacheRead": 6000 * turn, "cacheWrite": 7000,
             "totalTokens": 7000 + 6000 * turn}))
        ids.append(self.message({"role": "toolResult", "toolCallId": call, "toolName": "bash",
                                 "content": [{"type": "text", "text": tool_text}], "isError": False}))
        ids.append(self.assistant(
            [{"type": "text", "text": f"Step {turn} is green."}],
            {"input": 40, "output": 30, "cacheRead": 6000 * turn + 900, "cacheWrite": 300,
             "totalTokens": 6000 * turn + 1300}))
        return ids

    def other_entries(self, about: str) -> None:
        """A custom message, custom state, a label and a branch summary."""
        self.emit({"type": "custom_message", "customType": "omo", "display": True,
                   "content": "<omo-senpi-task>\nfinish the migration\n</omo-senpi-task>"})
        self.emit({"type": "custom", "customType": "ui-state", "data": {"collapsed": True}})
        self.emit({"type": "label", "targetId": about, "label": "checkpoint"})
        self.emit({"type": "branch_summary", "fromId": about, "summary": "Tried a rewrite; reverted."})

    def damage(self) -> None:
        """What a real file can hold: a broken line, an unknown entry, an orphan, a cut last line."""
        self.raw("{this line is not json}\n")
        self.emit({"type": "future_entry_kind"})
        self.emit({"type": "message", "parentId": "no-such-parent",
                   "message": {"role": "assistant", "content": [{"type": "text", "text": "orphan"}]}})
        self.raw('{"type":"message","id":"trunc')


def write_sample_session(path: Path, turns: int = 30, directive_bytes: int = 25_000,
                         compact_every: int = 0, model: str = "claude-opus-4-5",
                         extras: bool = True) -> Path:
    """A senpi-shaped session JSONL (version 3 header): an ultrawork directive re-injected into
    every user message, tool calls and results, a variant now and then, optional compactions,
    and (with extras) the entry types and damage a real file can hold."""
    from senpi_guard.patch.fixtures import directive_text

    path.parent.mkdir(parents=True, exist_ok=True)
    directive = directive_text("ultrawork-mode", directive_bytes, "session")
    variant = directive_text("ultrawork-mode", directive_bytes, "session-variant")
    reminder = directive_text("system-reminder", 600, "todo")
    with path.open("w", encoding="utf-8") as out:
        writer = _SessionWriter(out, model)
        writer.raw(json.dumps({"type": "session", "version": 3, "id": "s-0001",
                               "timestamp": writer.STAMP, "cwd": "/work/app"}, separators=(",", ":")) + "\n")
        writer.emit({"type": "model_change", "provider": "claude-sdk-oauth", "modelId": model})
        since_compaction: list[str] = []
        for turn in range(turns):
            text = variant if turn and turn % 7 == 0 else directive
            ids = writer.step(turn, f"{text}\n\nstep {turn}: continue the work", f"{reminder}\n{turn} passed")
            since_compaction += ids
            if extras and turn == 2:
                writer.other_entries(ids[0])
            if compact_every and turn and turn % compact_every == 0:
                writer.emit({"type": "compaction", "summary": f"Steps up to {turn} are done.",
                             "firstKeptEntryId": since_compaction[-4], "tokensBefore": 150000})
                since_compaction = since_compaction[-4:]
        if extras:
            writer.damage()
    return path
