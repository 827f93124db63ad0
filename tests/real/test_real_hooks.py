"""The second patch, hand-fix-hooks, on the real builds: a second `hooks` in the Claude Agent SDK
query options, written from the bug report's description (the hunk's exact text is not known), is
reported by status, removed by apply (only it: senpi's own stays), proven by calling senpi's own
options function where it imports (the full install) and by syntax where it does not, and put back
byte for byte by revert. Without such a hooks property the patch finds nothing to repair."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from realsenpi import senpi_guard

from senpi_guard.core import jssyntax
from senpi_guard.core.patch import definition
from senpi_guard.discover import describe
from senpi_guard.io.config import Config
from senpi_guard.layers.dist import Reconciler

pytestmark = pytest.mark.real

OPTIONS = {
    "2026.7.30": "dist/core/extensions/builtin/claude-agent-sdk/options.js",
    "2026.8.9": "dist/core/extensions/builtin/claude-sdk-oauth/options.js",
    "2026.8.22-2": "dist/core/extensions/builtin/claude-sdk-oauth/options.js",
}
SENPIS = b"        hooks: HOST_TOOL_DENIAL_HOOKS,\n"
HAND = (
    b"        hooks: {\n"
    b'            PreToolUse: [{ matcher: "Bash|Write|Edit", hooks: [async () => ({ decision: "approve" })] }],\n'
    b"        },\n"
)


def hand_fix(path: Path) -> bytes:
    """Add the second `hooks` after senpi's own (so it shadows it), as a hand hot-fix would."""
    data = path.read_bytes()
    assert data.count(SENPIS) == 1
    fixed = data.replace(SENPIS, SENPIS + HAND)
    path.write_bytes(fixed)
    return fixed


def hooks_values(source: bytes) -> list[bytes]:
    """The values of every `hooks` property of the query options object literal."""
    found = []

    def walk(node):
        key = node.child_by_field_name("key") if node.type == "pair" else None
        if (
            key is not None
            and key.text == b"hooks"
            and any(
                c.type == "pair" and c.child_by_field_name("key").text == b"permissionMode"
                for c in node.parent.named_children
            )
        ):
            found.append(node.child_by_field_name("value").text)
        for child in node.children:
            walk(child)

    walk(jssyntax.parse(source).root_node)
    return found


def hooks_rows(doc: dict) -> list[dict]:
    return [r for r in doc["installs"] if r["patch"] == "hand-fix-hooks"]


def check_the_repair(pkg: Path, version: str, node: str, monkeypatch) -> dict:
    monkeypatch.setenv("SENPI_GUARD_NODE", node)
    options = pkg / OPTIONS[version]
    pristine = options.read_bytes()
    status = json.loads(senpi_guard("status", "--root", pkg, "--json").stdout)["installs"][0]
    (clean,) = [p for p in status["patches"] if p["patch"] == "hand-fix-hooks"]
    assert clean["state"] == "clean", clean  # senpi as shipped has nothing to repair
    fixed = hand_fix(options)
    assert len(hooks_values(fixed)) == 2
    status = json.loads(senpi_guard("status", "--root", pkg, "--json").stdout)["installs"][0]
    (finding,) = [p for p in status["patches"] if p["patch"] == "hand-fix-hooks"]
    assert finding["state"] == "unpatched" and "a second `hooks`" in finding["detail"], finding
    applied = senpi_guard("apply", "--root", pkg, "--json")
    (row,) = hooks_rows(json.loads(applied.stdout))
    assert applied.returncode == 0, applied.stdout
    assert row["state"] == "patched" and row["verification"]["ok"], row
    repaired = options.read_bytes()
    assert hooks_values(repaired) == [b"HOST_TOOL_DENIAL_HOOKS"]  # senpi's own, and only it
    code = repaired[: repaired.index(b"// senpi-guard: patched by hand-fix-hooks")]
    assert code.count(b"\n") == fixed[: fixed.index(b"//# sourceMappingURL")].count(b"\n")  # line numbers kept
    subprocess.run([node, "--check", str(options)], check=True, capture_output=True)
    outcome = Reconciler(definition.load("hand-fix-hooks"), Config(), reuse_stored_replays=False).verify(
        describe(pkg, "npm")
    )
    assert outcome.ok, outcome.detail
    reverted = senpi_guard("revert", "--root", pkg, "--json")
    assert reverted.returncode == 0 and options.read_bytes() == fixed  # what the user had, exactly
    options.write_bytes(pristine)
    return outcome.report.stats


@pytest.mark.parametrize("version", ["2026.7.30", "2026.8.9"])
def test_a_hand_added_hooks_on_a_dist_only_build_is_proven_by_syntax(dist_only, version, node24, monkeypatch):
    stats = check_the_repair(dist_only(version), version, str(node24 / "node"), monkeypatch)
    assert {s["proof"] for s in stats.values()} == {"syntax"}  # (options.js does not import there)


def test_a_hand_added_hooks_on_the_full_install_is_proven_by_calling_senpis_own_code(full_senpi, monkeypatch):
    stats = check_the_repair(full_senpi.package_dir, "2026.8.22-2", str(full_senpi.node_bin / "node"), monkeypatch)
    assert {s["proof"] for s in stats.values()} == {"call"}
