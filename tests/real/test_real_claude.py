"""senpi's claude-sdk-oauth provider, for real (senpi 2026.8.22-2 and its bundled Claude Agent SDK),
driving a stand-in `claude` executable (tests/real/support/claude_standin.py: the model and Claude
Code are the only mocked parts). One session over several processes, as a user restarts senpi:
bootstrap, delta, restarts that resume, a compaction of Claude Code's own session, resume off. In
each configuration (as installed, dist patch, extension alone, both layers) we compare what the
stand-in received per call with senpi's own records and with `senpi-guard audit`."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest
from conftest import write_user_config
from realsenpi import RealSenpi, senpi_guard

pytestmark = pytest.mark.real

MODEL = "claude-sdk-oauth/claude-sonnet-4-5"
COMPACT = "[compact-now]"
# (extra environment, prompts) per senpi process; each process after the first is a restart
STEPS = (
    ({}, ("ulw one", "ulw two")),
    ({}, ("ulw three",)),
    ({}, ("ulw four",)),
    ({}, (f"ulw five {COMPACT}", "ulw six")),
    ({}, ("ulw seven",)),
    ({}, ("ulw eight",)),
    ({"SENPI_CLAUDE_SDK_OAUTH_RESUME": "off"}, ("ulw nine",)),
)
FULL = {"bootstrap", "flatten", "disabled"}


def directive() -> str:
    lines = [f"rule {i:03d}: work until the task is verified end to end; report evidence." for i in range(400)]
    return "<ultrawork-mode>\n" + "\n".join(lines) + "\n</ultrawork-mode>"


DIRECTIVE = directive()


def run(full_senpi, root: Path) -> RealSenpi:
    user = RealSenpi(
        full_senpi,
        root,
        Path(os.environ["SENPI_CODING_AGENT_DIR"]),
        root.parent / "work",
        extra_env={"STANDIN_CLAUDE_COMPACT": COMPACT},
    )
    for env, prompts in STEPS:
        user.extra_env = {"STANDIN_CLAUDE_COMPACT": COMPACT, **env}
        user.prompt(*prompts, model=MODEL, plugins=("directive_prepend.js",))
    return user


def received(user: RealSenpi) -> list[dict]:
    """What the stand-in got, one entry per call (the text of the user line senpi sent)."""
    return [e for e in user.claude_log() if e["kind"] == "user"]


def first_copy_kept(texts: list[str]) -> bool:
    """Each full re-send with history begins with what the previous one began with, up to and
    including the first full copy of the directive (what a prompt cache reuses). (The bootstrap call
    holds one message and no history block: it is left out.)"""
    texts = [t for t in texts if t.startswith("<conversation_history>")]
    assert len(texts) >= 3
    for before, after in itertools.pairwise(texts):
        end = before.find(DIRECTIVE)
        if end == -1 or not after.startswith(before[: end + len(DIRECTIVE)]):
            return False
    return True


@pytest.fixture
def configure(full_senpi, isolated_dirs, monkeypatch):
    """Put one configuration of senpi-guard's layers on the shared real install."""
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    pkg = full_senpi.package_dir
    agent = Path(os.environ["SENPI_CODING_AGENT_DIR"])
    ours = agent / "extensions" / "senpi-guard-directive-dedupe.js"

    def layers(name: str) -> None:
        assert senpi_guard("revert", "--root", pkg).returncode == 0
        if name == "installed":
            return
        write_user_config(isolated_dirs, 'layers = ["dist"]\n' if name == "dist" else "")
        result = senpi_guard("apply", "--root", pkg, "--json")
        assert result.returncode == 0, result.stdout + result.stderr
        if name == "extension":  # the extension without the dist layer: the window after `senpi update`
            kept = ours.read_bytes()
            assert senpi_guard("revert", "--root", pkg).returncode == 0
            ours.write_bytes(kept)

    yield layers
    assert senpi_guard("revert", "--root", pkg).returncode == 0


def audit(full_senpi, user: RealSenpi) -> list[dict]:
    result = senpi_guard("audit", "--root", full_senpi.package_dir, "--json", user.session_file())
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)["sessions"]
    assert report["reconstruction"] == "senpi"
    return report["turns"]


CONFIGS = ("installed", "dist", "extension", "both")


def test_lanes_resumes_and_audit_in_four_configurations(full_senpi, configure, tmp_path):
    runs = {}
    for name in CONFIGS:
        configure(name)
        runs[name] = run(full_senpi, tmp_path / name)
        if name == "extension":  # status says what the window costs while it lasts
            status = senpi_guard("status", "--root", full_senpi.package_dir, "--json")
            row = json.loads(status.stdout)["installs"][0]
            assert row["extension"]["state"] == "installed" and row["state"] == "held"  # (reverted)
            assert "restart" in row["extension"]["risk"] and "first copy" in row["extension"]["risk"]
    kinds = {name: [f"{c['kind']}:{c['reason']}" for c in user.continuity()] for name, user in runs.items()}
    sent = {name: received(user) for name, user in runs.items()}

    # every lane is exercised, and with our layers every call goes out on the lane it took unpatched
    assert {k.split(":")[0] for k in kinds["installed"]} >= {"bootstrap", "delta", "fork", "flatten", "disabled"}
    assert kinds["dist"] == kinds["installed"] and kinds["both"] == kinds["installed"]
    # the extension alone turns a restart that resumed into a full re-send (what the binding patch fixes)
    assert "flatten:sent_stream_diverged" in kinds["extension"]
    assert "flatten:sent_stream_diverged" not in kinds["installed"]

    for name, user in runs.items():
        rows = audit(full_senpi, user)
        assert len(rows) == len(sent[name]) == len(kinds[name])
        for row, call, kind in zip(rows, sent[name], kinds[name], strict=True):
            assert row["sent"] == ("full" if kind.split(":")[0] in FULL else "delta"), (row, kind)
            assert abs(row["bytes"][name] - call["bytes"]) <= call["bytes"] / 100, (name, row["bytes"], call["bytes"])
            if row["recorded_payload_bytes"] is not None:  # senpi's own record names this configuration
                assert name in row["recorded_matches"] and row["recorded_as"] in (name, "unknown"), row

    full = {
        name: ["".join(c["texts"]) for c, k in zip(sent[name], kinds[name], strict=True) if k.split(":")[0] in FULL]
        for name in CONFIGS
    }
    assert first_copy_kept(full["dist"]) and first_copy_kept(full["both"])
    assert not first_copy_kept(full["installed"])  # upstream's keep-last moves the kept copy
    assert not first_copy_kept(full["extension"])  # and, the extension alone, drops the first one
    total = {name: sum(c["bytes"] for c in calls) for name, calls in sent.items()}
    assert total["both"] < 0.6 * total["installed"]
    print({name: total[name] for name in CONFIGS})
