"""Where things are in a release is remembered by its listing (core/locate.listing_key): a reinstall
of the same release, here or elsewhere (new inodes, the same bytes), reads only the files that held
them before; a file added or resized walks again. One patch's walk never fails over a file that
only another patch's target is mentioned in."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import run_cli

from senpi_guard.core import locate
from senpi_guard.demo import sample
from senpi_guard.layers import extension_replay

LOADER = b"export async function loadExtensions(paths) { return paths; }\n"
LOADER += b"export function createExtensionRuntime() { return {}; }\n"
RUNNER = b"export class ExtensionRunner {\n  run() { return 1; }\n}\n"


def host_package(root: Path) -> Path:
    (root / "dist" / "core" / "extensions").mkdir(parents=True)
    (root / "package.json").write_text('{"name": "@code-yeongyu/senpi", "version": "2026.8.22-2"}')
    (root / "dist" / "core" / "extensions" / "loader.js").write_bytes(LOADER)
    (root / "dist" / "core" / "extensions" / "runner.js").write_bytes(RUNNER)
    for n in range(20):
        (root / "dist" / f"filler{n}.js").write_text(f"export const n{n} = {n}; // loadExtensions is elsewhere\n")
    return root


def test_senpis_extension_host_is_found_again_in_a_reinstall_without_reading_dist(tmp_path, monkeypatch):
    reads: list[int] = []
    real = locate.mentioning
    monkeypatch.setattr(locate, "mentioning", lambda files, needles: reads.append(len(files)) or real(files, needles))
    first = extension_replay._find_host(host_package(tmp_path / "one"))
    assert first is not None and first["loader"].endswith("core/extensions/loader.js") and reads == [22]
    again = tmp_path / "again"
    shutil.copytree(tmp_path / "one", again)
    reads.clear()
    found = extension_replay._find_host(again)
    assert found == {k: str(again / Path(v).relative_to(tmp_path / "one")) for k, v in first.items()}
    assert reads == []  # (only the two files parsed: they still export and define what they did)
    (again / "dist" / "filler3.js").write_text("export class ExtensionRunner {}\n")  # resized: a second runner
    reads.clear()
    assert extension_replay._find_host(again) is None and reads == [22]  # (walked again, and refused)


def test_a_file_only_another_patch_mentions_does_not_stop_this_one(tmp_path, capsys):
    """The walk looks for every patch's targets; a file it cannot parse that mentions only another
    patch's is that patch's error, found by its own walk, not this one's."""
    pkg = tmp_path / "pkg"
    sample.write_sample_package(pkg, 2, fillers=0)
    (pkg / "dist" / "vendor.js").write_bytes(b'const f = "buildClaudeAgentSdkQueryOptions"; // \xff\xfe\n')
    code, out, err = run_cli(capsys, "apply", "--root", pkg, "--json")
    states = {row["patch"]: (row["state"], row["detail"]) for row in json.loads(out)["installs"]}
    assert states["directive-dedupe"][0] == "patched", out + err
    assert states["hand-fix-hooks"][0] == "error" and "vendor.js" in states["hand-fix-hooks"][1], out
    assert code == 1
    code, out, err = run_cli(capsys, "revert", "--root", pkg, "--patch", "directive-dedupe")
    assert code == 0, out + err
