"""The service files: what daemon install records, written and read back."""

from __future__ import annotations

import os
import plistlib
import re
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from senpi_guard.errors import FatalError
from senpi_guard.keep import service
from senpi_guard.prove import nodes

# Anything an environment value or an argument can hold (no NUL, no lone surrogate): control
# characters and line breaks of every kind included.
text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1, max_size=30)
tricky = st.one_of(
    text,
    st.sampled_from(
        [
            "a%b",
            "x$y",
            'q"uote',
            "back\\slash",
            "sp ace",
            '%i$HOME"\\',
            "cr\rx",
            "nl\nx",
            "$$",
            "${HOME}",
            "\\x41",
            "end\\",
        ]
    ),
)
# What systemd accepts as a program path: absolute, no quote, backslash or control character.
program = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\"'\\\x7f"), max_size=20).map(
    lambda name: "/opt/" + name
)
ENV_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(
    head=st.one_of(program, st.sampled_from(["/a$b/senpi-guard", "/100%/x", "/sp ace/$$/${X}"])),
    args=st.lists(tricky, max_size=4),
    env=st.dictionaries(ENV_NAME, tricky, max_size=4),
)
def test_systemd_unit_reads_back_exactly(head, args, env):
    unit = service.systemd_unit(service.ServiceSpec("d%escription", [head, *args], env))
    assert service.read_systemd_unit(unit) == ([head, *args], env)
    assert len(systemd_lines(unit)) == len(
        systemd_lines(
            service.systemd_unit(service.ServiceSpec("d", ["/x", *(["a"] * len(args))], dict.fromkeys(env, "v")))
        )
    )


def systemd_lines(unit: str) -> list[str]:
    """The unit's lines as systemd splits them (at \\n, \\r and \\r\\n)."""
    return re.split(r"\r\n|\r|\n", unit)


def test_a_line_break_in_a_value_adds_no_line_to_the_unit():
    hostile = {
        "NVM_DIR": "/n\r[Service]\rExecStartPre=/bin/false",
        "HOME": "/h\nEnvironment=X=1",
        "PNPM_HOME": "/p\r\nExecStart=/bin/false",
        "VOLTA_HOME": "/v\x85\u2028x",
    }
    unit = service.systemd_unit(service.ServiceSpec("d", ["/bin/senpi-guard", "watch"], hostile))
    keys = [line.partition("=")[0] for line in systemd_lines(unit)]
    assert keys.count("Environment") == 4 and keys.count("ExecStart") == 1
    assert "ExecStartPre" not in keys and "X" not in keys
    assert service.read_systemd_unit(unit)[1] == hostile


def test_a_dollar_in_the_program_path_is_not_doubled():
    """systemd expands `$` in argv[0] but not in the program path: `@` spells each its own way."""
    unit = service.systemd_unit(service.ServiceSpec("d", ["/o$pt/100%/senpi-guard", "a$b"], {}))
    (line,) = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    assert line == 'ExecStart=@"/o$pt/100%%/senpi-guard" "/o$$pt/100%%/senpi-guard" "a$$b"'


@pytest.mark.parametrize(
    ("argv", "env", "named"),
    [
        (['/opt/q"uote/senpi-guard'], {}, 'q"uote'),
        (["/opt/it's/senpi-guard"], {}, "it's"),
        (["/opt/back\\slash/senpi-guard"], {}, "back"),
        (["/opt/new\nline/senpi-guard"], {}, "new\\nline"),
        (["/opt/tab\tx/senpi-guard"], {}, "tab"),
        (["relative/senpi-guard"], {}, "relative/senpi-guard"),
        (["/opt/bytes\udcff/senpi-guard"], {}, "bytes"),
        (["/bin/senpi-guard"], {"NVM_DIR": "/x\udcff"}, "$NVM_DIR"),
        (["/bin/senpi-guard"], {"MY-BRAND_CODING_AGENT_DIR": "/x"}, "MY-BRAND_CODING_AGENT_DIR"),
        (["/bin/senpi-guard"], {"1X": "/x"}, "1X"),
    ],
)
def test_what_systemd_cannot_carry_is_refused_by_name(argv, env, named):
    with pytest.raises(FatalError) as caught:
        service.systemd_unit(service.ServiceSpec("d", argv, env))
    message = str(caught.value)
    assert named in message and "\n" not in message and ("then run" in message or "env -u" in message)


def test_the_folder_of_senpi_on_path_is_recorded_in_path_order(monkeypatch, tmp_path):
    """Discovery follows `senpi` on PATH: its folder must be on the recorded PATH, ahead of any later
    folder with another senpi, or the service finds another install (or none)."""
    first, later = tmp_path / "prefix" / "bin", tmp_path / "later"
    for folder in (first, later):
        folder.mkdir(parents=True)
        (folder / "senpi").write_text("#!/bin/sh\n")
        (folder / "senpi").chmod(0o755)
    node_dir = os.path.dirname(os.path.abspath(shutil.which("node")))
    monkeypatch.setenv("PATH", os.pathsep.join([str(first), node_dir, str(later), "/bin"]))
    monkeypatch.setenv("npm_config_prefix", str(tmp_path / "npm"))
    monkeypatch.setenv("PREFIX_YARN", str(tmp_path / "yarn"))
    monkeypatch.delenv("SENPI_GUARD_NODE", raising=False)
    env = service.spec(service.SYSTEMD_PATH).environment
    recorded = env["PATH"].split(":")
    assert recorded.index(str(first)) < recorded.index(node_dir) and str(later) not in recorded
    assert shutil.which("senpi", path=env["PATH"]) == str(first / "senpi")
    assert env["npm_config_prefix"] == str(tmp_path / "npm")  # npm root -g depends on it
    assert env["PREFIX_YARN"] == str(tmp_path / "yarn")  # yarn global dir depends on it


def test_unit_with_odd_characters_passes_systemd_analyze(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    spec = service.ServiceSpec(
        "odd", ["/usr/bin/env", "a%b", "$HOME", 'say "hi"'], {"PATH": "/opt/100%/bin:/usr/bin", "X": 'a "b" \\c $d'}
    )
    unit = tmp_path / "odd.service"
    unit.write_text(service.systemd_unit(spec))
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    result = subprocess.run(
        ["systemd-analyze", "verify", "--user", str(unit)],
        capture_output=True,
        text=True,
        env={"XDG_RUNTIME_DIR": str(run), "PATH": "/usr/bin:/bin"},
    )
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
    assert nodes.node_for(pkg) == (str(prefix / "bin" / "node"), nodes.version_of(real), "the install's own prefix")
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
    with pytest.raises(FatalError, match=r"old/bin/node \(the install's own prefix\) is v16.20.0"):
        nodes.node_for(pkg)
