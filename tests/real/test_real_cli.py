"""The real senpi 2026.8.22-2 end to end, in print mode, with a provider that is not Claude (a
recording test provider: such a provider gets the whole context on every call) and a directive
plugin written like omo-senpi's (the directive prepended to the user's text, or a hidden custom
message). One session of several prompts per configuration: what the provider received (bytes,
full copies, whether earlier messages stayed byte-identical), what the session file keeps, and that
`senpi-guard audit` on that real session says exactly what the provider received."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest
from conftest import write_user_config
from realsenpi import RealSenpi, senpi_guard

pytestmark = pytest.mark.real

PROMPTS = ("ulw step 0", "ulw step 1", "what changed?", "ulw step 3", "ulw step 4", "ulw step 5")
ULW = sum(p.startswith("ulw") for p in PROMPTS)
MARKER = "[ultrawork-mode: unchanged, see the earlier copy; it still applies]"


def directive() -> str:
    lines = [f"rule {i:03d}: work until the task is verified end to end; report evidence." for i in range(400)]
    return "<ultrawork-mode>\n" + "\n".join(lines) + "\n</ultrawork-mode>"


DIRECTIVE = directive()  # the text tests/real/support/directive_common.js stamps


def text_bytes(call: dict) -> int:
    return sum(len(t.encode()) for m in call["messages"] for t in m["texts"])


def copies(call: dict) -> int:
    return sum(t.count(DIRECTIVE) for m in call["messages"] for t in m["texts"])


def earlier_messages_kept(calls: list[dict]) -> bool:
    """Every call re-sends the previous call's messages byte for byte (what a provider's prompt
    cache and senpi's continuity hashes rely on)."""
    return all(
        after["messages"][: len(before["messages"])] == before["messages"]
        for before, after in itertools.pairwise(calls)
    )


@pytest.fixture
def layers(full_senpi, isolated_dirs, monkeypatch):
    """Put senpi-guard's layers on the shared real install (and take them off again after)."""
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    pkg = full_senpi.package_dir

    def install(which: tuple[str, ...]) -> None:
        write_user_config(isolated_dirs, f"layers = {json.dumps(list(which))}\n")
        result = senpi_guard("apply", "--root", pkg, "--json")
        assert result.returncode == 0, result.stdout + result.stderr

    yield install
    result = senpi_guard("revert", "--root", pkg, "--json")
    assert result.returncode == 0, result.stdout + result.stderr


def run_session(full_senpi, tmp_path: Path, plugin: str, name: str) -> RealSenpi:
    user = RealSenpi(full_senpi, tmp_path / name, Path(os.environ["SENPI_CODING_AGENT_DIR"]), tmp_path / "work")
    for prompt in PROMPTS:
        user.prompt(prompt, plugins=(plugin,))
    return user


def audit_rows(full_senpi, session: Path) -> list[dict]:
    result = senpi_guard("audit", "--root", full_senpi.package_dir, "--json", session)
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)["sessions"]
    # senpi's own buildSessionContext + convertToLlm (else the report says why not)
    assert report["reconstruction"] == "senpi", report["fallback"]
    return report["turns"]


def within_one_percent(audited: int, received: int) -> bool:
    return abs(audited - received) <= received / 100


@pytest.mark.parametrize("plugin", ["directive_prepend.js", "directive_custom.js"])
def test_other_provider_receives_one_copy_and_audit_agrees(full_senpi, layers, tmp_path, plugin):
    plain = run_session(full_senpi, tmp_path, plugin, "installed")
    layers(("dist",))
    dist = run_session(full_senpi, tmp_path, plugin, "dist")
    layers(("dist", "extension"))
    both = run_session(full_senpi, tmp_path, plugin, "both")

    received = {name: user.recorded_calls() for name, user in (("installed", plain), ("dist", dist), ("both", both))}
    assert all(len(calls) == len(PROMPTS) for calls in received.values())
    # as installed: every ulw prompt adds one full copy, re-sent by every later call
    assert [copies(c) for c in received["installed"]] == [1, 2, 2, 3, 4, 5]
    # the dist patch does not act on another provider's calls: byte for byte the same bytes
    assert [text_bytes(c) for c in received["dist"]] == [text_bytes(c) for c in received["installed"]]
    # the extension: one full copy per call, markers for the rest, earlier messages never change
    assert [copies(c) for c in received["both"]] == [1] * len(PROMPTS)
    assert sum(t.count(MARKER) for m in received["both"][-1]["messages"] for t in m["texts"]) == ULW - 1
    assert earlier_messages_kept(received["both"]) and earlier_messages_kept(received["installed"])
    total = {name: sum(map(text_bytes, calls)) for name, calls in received.items()}
    assert total["both"] < 0.45 * total["installed"]

    # the session file keeps the full prompts: the extension only changes what is sent
    for user in (plain, both):
        assert user.session_file().read_text("utf-8").count(json.dumps(DIRECTIVE)[1:-1]) == ULW

    # the audit of each real session says what its provider received, per call, within 1%
    for user, config in ((plain, "installed"), (both, "both")):
        rows = audit_rows(full_senpi, user.session_file())
        assert [r["sent"] for r in rows] == ["context"] * len(PROMPTS)
        assert all(r["provider"] == "rec" for r in rows)
        for row, call in zip(rows, user.recorded_calls(), strict=True):
            assert within_one_percent(row["bytes"][config], text_bytes(call)), (row["bytes"], text_bytes(call))
    # and, before anything is installed, it predicts what the extension will send
    predicted = audit_rows(full_senpi, plain.session_file())
    for row, call in zip(predicted, received["both"], strict=True):
        assert within_one_percent(row["bytes"]["extension"], text_bytes(call))
        assert row["bytes"]["dist"] == row["bytes"]["installed"]
