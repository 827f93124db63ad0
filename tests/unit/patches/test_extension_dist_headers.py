"""The extension reads which patches a dist file carries (for /senpi-guard, and for the `dist` flag
of its per-call entry) exactly as the engine does, in both header formats: the composed one that
apply writes now, and the per-patch lines of files patched before composition."""

from __future__ import annotations

import json
import subprocess

from conftest import HANG_S

from senpi_guard.core.patch import definition
from senpi_guard.core.patch.apply import FileHeader, Header, read_file_header
from senpi_guard.io.config import Config

SHA = "ab" * 32


def _js_read(tmp_path, texts: list[str]) -> list[list[dict]]:
    path = tmp_path / "ext.js"
    path.write_text(definition.load("directive-dedupe").render_extension(Config()), "utf-8")
    script = (
        f"const {{ __senpiGuardDistPatches }} = await import({json.dumps(path.as_uri())});"
        f"console.log(JSON.stringify({json.dumps(texts)}.map(__senpiGuardDistPatches)));"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=HANG_S, check=True
    )
    return json.loads(out.stdout)


def _file(header_lines: list[str]) -> str:
    return "export function f() {\n    return 1;\n}\n" + "\n".join(header_lines) + "\n//# sourceMappingURL=f.js.map"


def test_the_extension_reads_both_header_formats_as_the_engine_does(tmp_path):
    dedupe = Header("directive-dedupe", 12, "prompt", SHA, "0123456789abcdef")
    other = Header("prompt-text", 1, "bridge", SHA, "fedcba9876543210")
    texts = [
        _file([FileHeader((dedupe, other), SHA).line()]),  # composed: two patches, one header
        _file([FileHeader((other,), SHA).line()]),  # composed, without directive-dedupe
        _file([dedupe.line(), other.line()]),  # before composition: one line per patch
        _file(["// senpi-guard: directive-dedupe is mentioned in a comment only"]),
        _file([]),
    ]
    engine = []
    for text in texts:
        header = read_file_header(text.encode())
        engine.append([] if header is None else [[e.name, e.version, e.role] for e in header.entries])
    seen = [[[e["name"], e["version"], e["role"]] for e in found] for found in _js_read(tmp_path, texts)]
    assert seen == engine
    assert [any(e[0] == "directive-dedupe" for e in found) for found in seen] == [True, False, True, False, False]
