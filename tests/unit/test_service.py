"""The service files: what daemon install records, written and read back."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from senpi_guard.keep import service
from senpi_guard.prove import nodes

text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30)
tricky = st.one_of(text, st.sampled_from(['a%b', 'x$y', 'q"uote', 'back\\slash', 'sp ace', '%i$HOME"\\']))


@settings(max_examples=200, deadline=None)
@given(argv=st.lists(tricky, min_size=1, max_size=5),
       env=st.dictionaries(st.from_regex(r"[A-Z][A-Z0-9_]{0,10}", fullmatch=True), tricky, max_size=4))
def test_systemd_unit_reads_back_exactly(argv, env):
    unit = service.systemd_unit(service.ServiceSpec("d%escription", argv, env))
    assert service.read_systemd_unit(unit) == (argv, env)


def test_unit_with_odd_characters_passes_systemd_analyze(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    spec = service.ServiceSpec("odd", ["/usr/bin/env", "a%b", "$HOME", 'say "hi"'],
                               {"PATH": "/opt/100%/bin:/usr/bin", "X": 'a "b" \\c $d'})
    unit = tmp_path / "odd.service"
    unit.write_text(service.systemd_unit(spec))
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    result = subprocess.run(["systemd-analyze", "verify", "--user", str(unit)], capture_output=True,
                            text=True, env={"XDG_RUNTIME_DIR": str(run), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr


def test_environment_records_node_and_tools_first_on_path(monkeypatch, tmp_path):
    bin_dir = tmp_path / ".nvm" / "versions" / "node" / "v24.1.0" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("node", "npm"):
        (bin_dir / tool).write_text("#!/bin/sh\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("NVM_DIR", str(tmp_path / ".nvm"))
    monkeypatch.delenv("SENPI_GUARD_NODE", raising=False)
    env = service.spec(service.SYSTEMD_PATH).environment
    assert env[nodes.RECORDED] == str(bin_dir / "node")
    assert env["PATH"].split(":")[0] == str(bin_dir)
    assert set(service.SYSTEMD_PATH.split(":")) <= set(env["PATH"].split(":"))
    assert env["NVM_DIR"] == str(tmp_path / ".nvm")
    plist = plistlib.loads(service.launchd_plist(service.spec(service.LAUNCHD_PATH), tmp_path))
    assert plist["EnvironmentVariables"][nodes.RECORDED] == str(bin_dir / "node")
    assert set(service.LAUNCHD_PATH.split(":")) <= set(plist["EnvironmentVariables"]["PATH"].split(":"))


def test_node_choice_order(monkeypatch, tmp_path):
    prefix = tmp_path / "prefix"
    pkg = prefix / "lib" / "node_modules" / "@code-yeongyu" / "senpi"
    pkg.mkdir(parents=True)
    real = shutil.which("node")
    monkeypatch.delenv("SENPI_GUARD_NODE", raising=False)
    monkeypatch.delenv(nodes.RECORDED, raising=False)
    assert nodes.node_for(pkg).source == "PATH"
    monkeypatch.setenv(nodes.RECORDED, real)
    assert nodes.node_for(pkg).source == "recorded by `daemon install`"
    (prefix / "bin").mkdir()
    os.symlink(real, prefix / "bin" / "node")
    assert nodes.node_for(pkg) == (str(prefix / "bin" / "node"), nodes.version_of(real),
                                   "the install's own prefix")
    monkeypatch.setenv("SENPI_GUARD_NODE", real)
    assert nodes.node_for(pkg).source == "$SENPI_GUARD_NODE"


def test_an_install_whose_own_node_is_too_old_is_named(monkeypatch, tmp_path):
    prefix = tmp_path / "old"
    pkg = prefix / "lib" / "node_modules" / "@code-yeongyu" / "senpi"
    pkg.mkdir(parents=True)
    (prefix / "bin").mkdir()
    (prefix / "bin" / "node").write_text("#!/bin/sh\necho v16.20.0\n")
    (prefix / "bin" / "node").chmod(0o755)
    monkeypatch.delenv("SENPI_GUARD_NODE", raising=False)
    from senpi_guard.errors import FatalError
    with pytest.raises(FatalError, match=r"old/bin/node \(the install's own prefix\) is v16.20.0"):
        nodes.node_for(pkg)
