"""The extension layer as a senpi package on the real 2026.8.22-2, offline: `senpi install <local
path>` loads it (its calls carry the very bytes the extension file gives), `senpi list` shows it,
senpi-guard's status sees it as the agent dir's extension layer, apply installs no second copy and
revert leaves it, `senpi remove` takes it out. On the Claude provider without the dist layer (senpi
has its own keep-last dedupe) the package stands aside, says so once per process, and senpi sends
what it sends with no extension at all; after `senpi-guard apply` it collapses there too."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import HANG_S
from realsenpi import RealSenpi, senpi_guard

from senpi_guard.core.patch import definition
from senpi_guard.layers import package as package_layer

pytestmark = pytest.mark.real

NAME = definition.load("directive-dedupe").extension.file_name
MARKER = "[ultrawork-mode: unchanged, see the earlier copy; it still applies]"
CLAUDE = "claude-sdk-oauth/claude-sonnet-4-5"
OFF = "senpi-guard: off for claude-sdk-oauth"
PROMPTS = (("ulw one", "ulw two"), ("ulw three",), ("ulw four", "ulw five"))


@pytest.fixture
def package(tmp_path, full_senpi, monkeypatch) -> Path:
    monkeypatch.setenv("SENPI_GUARD_NODE", str(full_senpi.node_bin / "node"))
    folder = tmp_path / "senpi-guard-package"
    result = senpi_guard("export", folder)
    assert result.returncode == 0, result.stderr
    yield folder
    assert senpi_guard("revert", "--root", full_senpi.package_dir).returncode == 0


def user(full_senpi, root: Path) -> RealSenpi:
    return RealSenpi(full_senpi, root, root / "agent", root / "work")


def senpi(who: RealSenpi, *args: str) -> str:
    """`senpi install|list|remove …` as that user runs it."""
    who.home.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [str(who.install.senpi), *args], env=who.env(), capture_output=True, text=True, timeout=HANG_S, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def run(who: RealSenpi, model: str = "rec/rec-1") -> list[str]:
    """The prompts, one process per group; each process's stderr."""
    return [who.prompt(*texts, model=model, plugins=("directive_prepend.js",)).stderr for texts in PROMPTS]


def sent(who: RealSenpi) -> list[list[tuple[str, tuple[str, ...]]]]:
    """What the recording provider received, per call: each message's role and texts."""
    return [[(m["role"], tuple(m["texts"])) for m in call["messages"]] for call in who.recorded_calls()]


def test_senpi_install_gives_the_same_bytes_per_call_as_the_extension_file(full_senpi, package, tmp_path):
    as_file = user(full_senpi, tmp_path / "file")
    (as_file.agent_dir / "extensions").mkdir(parents=True)
    (as_file.agent_dir / "extensions" / NAME).write_bytes((package / NAME).read_bytes())
    as_package = user(full_senpi, tmp_path / "package")
    assert "Installed" in senpi(as_package, "install", str(package))
    assert str(package) in senpi(as_package, "list")
    run(as_file)
    run(as_package)
    calls = sent(as_package)
    assert len(calls) == 5 and calls == sent(as_file)
    per_call = [sum(len(t.encode()) for _, texts in call for t in texts) for call in calls]
    print("text bytes per call, package = file:", per_call)
    assert sum(MARKER in t for _, texts in calls[-1] for t in texts) == 4  # five copies: the first kept
    # senpi-guard sees it as that agent dir's extension layer, installs none beside it, leaves it on revert
    env = {"SENPI_CODING_AGENT_DIR": str(as_package.agent_dir), "HOME": str(as_package.home)}
    status = senpi_guard("status", "--root", full_senpi.package_dir, "--json", env=env)
    (row,) = json.loads(status.stdout)["installs"]
    assert row["layers"]["extension"] == "package" and row["extension"]["agent_dir"] == str(as_package.agent_dir)
    applied = senpi_guard("apply", "--root", full_senpi.package_dir, "--json", env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert [e["state"] for e in json.loads(applied.stdout)["extension"]] == ["package"]
    assert not (as_package.agent_dir / "extensions" / NAME).exists()
    reverted = senpi_guard("revert", "--root", full_senpi.package_dir, "--json", env=env)
    (layer,) = json.loads(reverted.stdout)["extension"]
    assert reverted.returncode == 0 and "left alone" in layer["detail"]
    assert str(package) in senpi(as_package, "list")
    # senpi remove takes it out: a new session sends every copy in full
    senpi(as_package, "remove", str(package))
    assert str(package) not in senpi(as_package, "list")
    fresh = RealSenpi(full_senpi, tmp_path / "removed", as_package.agent_dir, tmp_path / "removed" / "work")
    fresh.prompt("ulw one", "ulw two", plugins=("directive_prepend.js",))
    assert not [t for m in fresh.recorded_calls()[-1]["messages"] for t in m["texts"] if MARKER in t]


def claude_texts(who: RealSenpi) -> list[str]:
    return [t for e in who.claude_log() if e["kind"] == "user" for t in e["texts"]]


def test_on_the_claude_provider_without_the_dist_layer_it_stands_aside(full_senpi, package, tmp_path):
    bare = user(full_senpi, tmp_path / "bare")
    run(bare, CLAUDE)
    with_package = user(full_senpi, tmp_path / "package")
    senpi(with_package, "install", str(package))
    errors = run(with_package, CLAUDE)
    assert claude_texts(with_package) == claude_texts(bare)  # as senpi sends it with no extension
    assert [e.count(OFF) for e in errors] == [1, 1, 1], errors  # once per process
    assert package_layer.FIX in errors[0]
    # /senpi-guard says what it costs and the fix
    shown = with_package.prompt("/senpi-guard")
    report = shown.stdout + shown.stderr
    assert "off for claude-sdk-oauth" in report and "restart that would resume re-sends" in report
    # the one command that fixes it: with the dist layer the package collapses there too
    env = {"SENPI_CODING_AGENT_DIR": str(with_package.agent_dir), "HOME": str(with_package.home)}
    applied = senpi_guard("apply", "--root", full_senpi.package_dir, "--json", env=env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    fixed = RealSenpi(full_senpi, tmp_path / "fixed", with_package.agent_dir, tmp_path / "fixed" / "work")
    errors = [fixed.prompt(*texts, model=CLAUDE, plugins=("directive_prepend.js",)).stderr for texts in PROMPTS[:1]]
    assert OFF not in errors[0]
    assert any(MARKER in t for t in claude_texts(fixed))


def test_a_package_switched_off_in_its_settings_entry_is_not_the_layer(full_senpi, package, tmp_path):
    """`senpi config`, unticking the package's item, writes `"extensions": ["-index.js"]` into its
    settings entry (dist/modes/interactive/components/config-selector.js): senpi then loads none of
    it, so senpi-guard's own file is that agent dir's layer: status says it is missing, apply
    installs it, and the next calls carry the markers (hostile passes: status said "package",
    exit 0; then apply took out the one file senpi still loaded)."""
    who = user(full_senpi, tmp_path / "off")
    senpi(who, "install", str(package))
    settings = who.agent_dir / "settings.json"
    data = json.loads(settings.read_text())
    (source,) = data["packages"]
    data["packages"] = [{"source": source, "extensions": ["-index.js"]}]
    settings.write_text(json.dumps(data, indent=2))
    who.prompt("ulw one", "ulw two", plugins=("directive_prepend.js",))
    assert not [t for m in who.recorded_calls()[-1]["messages"] for t in m["texts"] if MARKER in t]
    env = {"SENPI_CODING_AGENT_DIR": str(who.agent_dir), "HOME": str(who.home)}
    status = senpi_guard("status", "--root", full_senpi.package_dir, "--json", env=env)
    (row,) = json.loads(status.stdout)["installs"]
    (sub,) = [p for p in row["patches"] if p["patch"] == "directive-dedupe"]
    assert status.returncode == 1 and sub["extension"]["state"] == "absent", status.stdout
    assert "switches its index.js off, so senpi loads none of it" in sub["extension"]["detail"]
    assert senpi_guard("apply", "--root", full_senpi.package_dir, env=env).returncode == 0
    assert (who.agent_dir / "extensions" / NAME).is_file()
    again = RealSenpi(full_senpi, tmp_path / "off-again", who.agent_dir, tmp_path / "off-again" / "work")
    again.prompt("ulw one", "ulw two", plugins=("directive_prepend.js",))
    assert [t for m in again.recorded_calls()[-1]["messages"] for t in m["texts"] if MARKER in t]
    assert senpi_guard("status", "--root", full_senpi.package_dir, env=env).returncode == 0
