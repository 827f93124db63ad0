"""The front door as a person meets it: help, version, JSON on error, next steps, colour only on a
terminal, paths relative to the package. Sample packages are written in place (no npm needed)."""

from __future__ import annotations

import itertools
import json
import os
import pty
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HANG_S, SHAPE_REL, field, rows_of, run_cli

from senpi_guard import __version__
from senpi_guard.cli import COMMANDS
from senpi_guard.demo import sample, sample_session

ESC = "\033["


@pytest.fixture
def pkg(tmp_path):
    """A senpi-shaped package (shape 2) written straight into a folder."""
    dest = tmp_path / "senpi"
    sample.write_sample_package(dest, 2, fillers=3)
    return dest


@pytest.fixture
def pkg3(tmp_path):
    dest = tmp_path / "senpi3"
    sample.write_sample_package(dest, 3, fillers=3)
    return dest


def test_bare_command_prints_help_with_paths(capsys):
    code, out, err = run_cli(capsys)
    assert code == 0 and err == ""
    assert "usage: senpi-guard" in out
    for name in ("apply", "status", "verify", "revert", "watch", "daemon", "audit", "demo", "paths"):
        assert re.search(rf"^\s+{name}\s+\S", out, re.MULTILINE), name
    assert "config.toml" in out and "senpi-guard paths" in out


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as info:
        run_cli(capsys, "-V")
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"senpi-guard {__version__}"


@pytest.mark.parametrize(
    "command",
    ["apply", "status", "verify", "revert", "watch", "daemon", "audit", "demo", "check", "paths", "completion"],
)
def test_every_subcommand_help_has_an_example_and_exit_codes(capsys, command):
    with pytest.raises(SystemExit):
        run_cli(capsys, command, "--help")
    out = capsys.readouterr().out
    assert re.search(rf"example:\n  senpi-guard {command}\b", out), out  # an example of this very command
    assert "exit codes:\n  0 " in out and "130" in out
    # every example line is a command this parser accepts
    from senpi_guard.cli import build_parser

    examples = out.split("example:\n", 1)[1].split("\n\n", 1)[0]
    for line in examples.splitlines():
        words = shlex.split(re.split(r"[#|>]", line, maxsplit=1)[0])  # (the command, not a comment, pipe or redirect)
        assert words[0] == "senpi-guard", line
        build_parser(words[1]).parse_args(words[1:])  # (a usage error would exit 2 here)
    if command == "daemon":
        assert all(word in out for word in ("install:", "uninstall:", "status:"))


def test_json_error_is_valid_json(capsys, tmp_path):
    code, out, err = run_cli(capsys, "status", "--json", "--root", tmp_path / "missing")
    assert code == 1
    assert json.loads(out) == {"installs": [], "error": err.strip().removeprefix("senpi-guard: error: ")}
    assert "no such directory" in err and len(err.splitlines()) == 1
    code, out, err = run_cli(capsys, "audit", "--json", str(tmp_path / "nope.jsonl"))
    assert code == 1 and json.loads(out)["sessions"] == [] and "does not exist" in json.loads(out)["error"]


@pytest.mark.parametrize(
    "argv",
    [
        ("apply", "--json", "--bogus"),
        ("status", "--bogus", "--json"),
        ("audit", "--json", "--nope"),
        ("--json", "nonsense"),
    ],
)
def test_a_usage_error_with_json_still_prints_json(capsys, argv):
    code, out, err = run_cli(capsys, *argv)
    doc = json.loads(out)
    assert code == 2 and ("unrecognized arguments" in doc["error"] or "invalid choice" in doc["error"])
    assert doc[("sessions" if argv[0] == "audit" else "installs")] == [] and len(err.splitlines()) == 1


def test_status_says_what_to_do_next_and_shows_paths_relative(capsys, pkg):
    code, out, _ = run_cli(capsys, "status", "--root", pkg)
    assert code == 1
    assert "state     unpatched" in out
    assert "next      run `senpi-guard apply`" in out
    assert "saves     Claude: " in out and "target" not in out  # (the figure; where it patches: -v)
    code, out, _ = run_cli(capsys, "status", "-v", "--root", pkg)
    assert f"target    {pkg}/dist/core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js" in out
    assert "shape     senpi 2026.7.31-2 - 2026.8.4" in out


def test_dry_run_says_would_write(capsys, pkg):
    code, out, _ = run_cli(capsys, "apply", "--dry-run", "--root", pkg)
    assert code == 0
    assert field(out, "state").startswith("unpatched, would write dist/core/extensions/builtin/claude-sdk-oauth/")
    assert "-> unpatched" not in out
    code, out, _ = run_cli(capsys, "apply", "--dry-run", "--json", "--root", pkg)
    (row,) = rows_of(json.loads(out))
    assert row["changed"] == [] and row["would_write"] == [
        "dist/core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js"
    ]


def test_verify_does_not_pretend_a_change(capsys, pkg):
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    code, out, _ = run_cli(capsys, "verify", "--root", pkg)
    assert code == 0
    assert "patched -> patched" not in out
    assert field(out, "state").startswith("patched (ok,") and "nothing changed" in out


def test_verify_of_unpatched_names_the_next_step(capsys, pkg):
    code, out, _ = run_cli(capsys, "verify", "--root", pkg)
    assert code == 1 and "next     run `senpi-guard apply`" in out


def test_deferred_upstream_counts_as_success_in_status(capsys, pkg3, isolated_dirs, monkeypatch):
    config = isolated_dirs / "defer.toml"
    config.write_text('upstream_dedupe = "defer"\n')
    monkeypatch.setenv("SENPI_GUARD_CONFIG", str(config))
    assert run_cli(capsys, "apply", "--root", pkg3)[0] == 0
    code, out, _ = run_cli(capsys, "status", "--root", pkg3)
    assert code == 0 and "state     upstream" in out and "next" not in out


def test_audit_of_a_directory_says_so(capsys, tmp_path):
    code, _, err = run_cli(capsys, "audit", str(tmp_path))
    assert code == 1 and "is a directory" in err and len(err.splitlines()) == 1


def test_quiet_prints_only_failures(capsys, pkg):
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    code, out, err = run_cli(capsys, "-q", "status", "--root", pkg)
    assert code == 0 and out == ""
    code, out, err = run_cli(capsys, "apply", "-q", "--root", pkg)
    assert code == 0 and out == "" and err == ""


def _run_on_tty(*args: str, env: dict[str, str]) -> str:
    """Run senpi-guard with stdout on a pseudo-terminal; return what the terminal got."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "senpi_guard", *args],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # EIO: the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=HANG_S)
    os.close(leader)
    return b"".join(chunks).decode()


def test_colour_only_on_a_terminal_and_never_with_no_color(capsys, pkg):
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm"
    coloured = _run_on_tty("status", "--root", str(pkg), env=env)
    assert f"{ESC}33munpatched{ESC}0m" in coloured
    plain = _run_on_tty("status", "--root", str(pkg), env={**env, "NO_COLOR": "1"})
    assert "unpatched" in plain and ESC not in plain
    _, piped, _ = run_cli(capsys, "status", "--root", pkg)
    assert "unpatched" in piped and ESC not in piped


def test_paths_shows_effective_config_and_paths(capsys, isolated_dirs, monkeypatch):
    config = isolated_dirs / "c.toml"
    config.write_text('tags = ["ultrawork-mode"]\n')
    monkeypatch.setenv("SENPI_GUARD_CONFIG", str(config))
    code, out, _ = run_cli(capsys, "paths", "--json")
    found = json.loads(out)
    assert code == 0 and found["config_file"] == str(config)
    assert found["config"]["patches"]["directive-dedupe"]["tags"] == ["ultrawork-mode"]
    assert found["backups"].startswith(str(isolated_dirs)) and found["records"].endswith("state.json")
    code, out, _ = run_cli(capsys, "paths")
    assert f"config file        {config}" in out and "ultrawork-mode" in out
    # every setting: its name, at least two spaces, its value as the config spells it (no Python reprs)
    settings = [line.split() for line in out.splitlines() if line.startswith("  ")]
    assert ["directive-dedupe.tags", "ultrawork-mode"] in settings and ["layers", "dist,", "extension"] in settings
    assert all(re.match(r"  \S+ {2,}\S", line) for line in out.splitlines() if line.startswith("  "))
    assert not any(c in out for c in "()[]'")


def test_the_version_is_set_in_one_place():
    from importlib.metadata import version

    import senpi_guard

    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and "\nversion =" not in pyproject
    assert version("senpi-guard") == senpi_guard.__version__


def test_output_into_a_closed_pipe_is_quiet(tmp_path):
    # far more rows than a pipe buffers, so writes really hit the closed pipe
    session_file = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=500, directive_bytes=200)
    shell = f"{sys.executable} -m senpi_guard audit --sample {session_file} | head -n 3"
    proc = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=HANG_S)
    assert len(proc.stdout.splitlines()) == 3
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


def test_unexpected_error_exits_3_with_a_log(capsys, pkg, monkeypatch, isolated_dirs):
    from senpi_guard.commands import status

    def boom(args):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(status, "run", boom)
    code, _out, err = run_cli(capsys, "status", "--root", pkg)
    assert code == 3 and len(err.splitlines()) == 1 and "simulated bug" in err
    log = re.search(r"traceback is in (\S+);", err)[1]
    assert "ZeroDivisionError" in Path(log).read_text()


def test_audit_fits_80_columns_and_its_table_is_verboses(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # (not a terminal: 80 columns)
    session_file = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=8, directive_bytes=2000)
    code, out, _ = run_cli(capsys, "audit", "--sample", session_file)
    assert code == 0
    lines = [ln for ln in out.splitlines() if ln != str(session_file)]
    assert max(len(ln) for ln in lines) <= 80
    assert "ultrawork-mode×1" not in out  # no per-call table…
    _, wide, _ = run_cli(capsys, "-v", "audit", "--sample", session_file)
    assert "ultrawork-mode×1" in wide  # …but with -v, its collapsed lists whole


def test_status_imports_neither_watchdog_nor_filelock(pkg):
    code = (
        "import sys; from senpi_guard.cli import main; main(['status', '--root', sys.argv[1]]); "
        "print(sorted(m for m in ('watchdog', 'filelock', 'logging.handlers', 'matplotlib') "
        "if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(pkg)], capture_output=True, text=True, timeout=HANG_S)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout + proc.stderr


def test_status_looks_where_the_target_was_and_walks_again_after_an_update(capsys, pkg, monkeypatch):
    from senpi_guard.core import locate

    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    walks = []
    real_walk = locate.js_files
    monkeypatch.setattr(locate, "js_files", lambda dist: walks.append(dist) or real_walk(dist))
    assert run_cli(capsys, "status", "--root", pkg)[0] == 0
    assert walks == []  # the remembered file was read, dist/ was not walked
    manifest = pkg / "package.json"
    manifest.write_text(manifest.read_text() + "\n")  # what an update does to package.json
    assert run_cli(capsys, "status", "--root", pkg)[0] == 0
    from senpi_guard.core.patch import definition

    assert len(walks) == len(definition.load_all())  # each patch looks again, once


def test_a_mistyped_command_gets_the_nearest_and_an_unknown_option_the_commands_help(capsys):
    code, _, err = run_cli(capsys, "staus")
    assert code == 2 and "did you mean `status`?" in err and len(err.splitlines()) == 1
    assert "did you mean" not in run_cli(capsys, "zzzzzz")[2]
    code, _, err = run_cli(capsys, "apply", "--bogus")
    assert code == 2 and "see `senpi-guard apply --help`" in err


def test_audit_quiet_prints_the_headline_and_the_session(capsys, tmp_path):
    session_file = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=4, directive_bytes=2000)
    _, full, _ = run_cli(capsys, "audit", "--sample", session_file)
    for flag in ("-q", "--quiet"):
        code, out, _ = run_cli(capsys, flag, "audit", "--sample", session_file)
        assert code == 0 and len(out.splitlines()) < len(full.splitlines())
        assert out.splitlines()[0] == full.splitlines()[0]  # (the headline, as without -q)
        assert out.splitlines()[-1] == str(session_file)


@pytest.mark.parametrize("flag", ["-q", "--quiet"])
def test_watch_q_and_quiet_mean_the_same_the_log_file_only(pkg, flag, isolated_dirs):
    """`watch --quiet` is what installed units run: it keeps logging to the file only; `-q` now means it too."""
    log = isolated_dirs / "xdg_state_home" / "senpi-guard" / "log" / "watch.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "senpi_guard", "watch", flag, "--root", str(pkg), "--rescan-interval", "300"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        from conftest import wait_for

        # (from a fresh clone nothing is remembered: the startup reconcile proves both layers with node)
        wait_for(
            lambda: log.is_file() and "after=patched" in log.read_text(),
            timeout=HANG_S,
            what="the startup reconcile logged",
        )
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=HANG_S)
    assert out == "" and "reconcile" not in err, err


def test_config_flag_before_or_after_the_command_names_the_file(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("SENPI_GUARD_CONFIG", raising=False)
    config = tmp_path / "mine.toml"
    config.write_text("verify_timeout = 7\n")
    for argv in (("--config", config, "paths", "--json"), ("paths", "--json", "--config", config)):
        code, out, _ = run_cli(capsys, *argv)
        found = json.loads(out)
        assert code == 0 and found["config_file"] == str(config) and found["config"]["verify_timeout"] == 7
        monkeypatch.delenv("SENPI_GUARD_CONFIG", raising=False)
    code, _, err = run_cli(capsys, "--config", tmp_path / "nope.toml", "paths")
    assert code == 1 and "--config" in err and "does not exist" in err


@pytest.mark.parametrize(
    "argv, env, painted",
    [
        (("--color", "always"), {}, True),
        (("--color", "never"), {"FORCE_COLOR": "1"}, False),
        ((), {"FORCE_COLOR": "1"}, True),
        ((), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        ((), {}, False),
    ],
)
def test_color_flag_and_force_color(capsys, pkg, monkeypatch, argv, env, painted):
    for key in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    _, out, _ = run_cli(capsys, *argv, "status", "--root", pkg)
    assert (ESC in out) == painted


@pytest.mark.parametrize("columns", [80, 100])
@pytest.mark.parametrize(
    "command",
    [None, "apply", "status", "verify", "revert", "watch", "daemon", "audit", "demo", "check", "paths", "completion"],
)
def test_help_is_wrapped_to_the_terminal(command, columns):
    env = {**os.environ, "COLUMNS": str(columns)}
    done = subprocess.run(
        [sys.executable, "-m", "senpi_guard", *([command] if command else []), "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_S,
    )
    assert done.returncode == 0
    too_wide = [
        line
        for line in done.stdout.splitlines()
        if len(line) > columns and not any(len(word) > columns // 2 for word in line.split())
    ]
    assert not too_wide, too_wide  # (a path too long to break is the one exception)


def test_start_here_names_the_safe_first_steps(capsys):
    _, out, _ = run_cli(capsys)
    start = out[out.index("start here:") : out.index("files:")]
    assert [line.split()[1] for line in start.splitlines()[1:] if line.strip()] == ["demo", "status", "apply", "daemon"]


def test_a_config_file_named_like_a_command_is_a_value_not_the_command(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("check", "audit"):
        (tmp_path / name).write_text("verify_timeout = 9\n")
        code, out, err = run_cli(capsys, "--config", name, "paths", "--json")
        assert code == 0 and json.loads(out)["config"]["verify_timeout"] == 9, err
        monkeypatch.delenv("SENPI_GUARD_CONFIG", raising=False)


def test_check_says_breaks_whenever_the_dist_replay_failed():
    from senpi_guard.commands.check import _line

    row = {
        "patch": "directive-dedupe",
        "ok": False,
        "dist_ok": False,
        "checks": 39,
        "shape": "x",
        "state": "unpatched",
        "would_write": ["a"],
        "detail": "3 of 39 checks failed",
        "extension": {"ok": False, "checks": 0, "failures": ["host runner threw"]},
    }
    assert "BREAKS: 3 of 39 checks failed" in _line("2026.9.1", row)
    row.update(dist_ok=True, detail="")
    assert "patchable, 39 checks passed; the extension FAILS: host runner threw" in _line("2026.9.1", row)


def test_check_of_a_folder_leaves_a_writers_temp_file_alone(capsys, pkg):
    """check runs without the write lock: the temp file of an apply writing right now is not its to sweep."""
    temp = pkg / "dist/core/extensions/builtin/claude-sdk-oauth/.prompt-bridge.js.abc123.senpi-guard"
    temp.write_text("in flight\n")
    assert run_cli(capsys, "check", pkg)[0] == 0
    assert temp.read_text() == "in flight\n"


@pytest.mark.parametrize("layers", ['["dist", "extension"]', '["extension"]'])
def test_check_of_a_release_it_cannot_use_fails_whatever_the_layers(capsys, pkg, isolated_dirs, layers):
    """A release whose code cannot be found breaks the pre-flight, with the extension layer alone too
    (nothing was proven: it must never say the release is fine)."""
    from conftest import write_user_config

    write_user_config(isolated_dirs, f"layers = {layers}\n")
    (pkg / "dist/core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js").unlink()
    code, out, _ = run_cli(capsys, "check", pkg, "--json")
    doc = json.loads(out)
    row = next(r for r in doc["patches"] if r["patch"] == "directive-dedupe")
    assert code == 1 and not doc["ok"] and not row["ok"], out
    assert "buildPromptBlocks" in json.dumps(row), row


def test_v_clips_very_long_compiled_lines_and_vv_shows_them_whole(capsys, pkg):
    code, clipped, _ = run_cli(capsys, "apply", "--dry-run", "-v", "--root", pkg)
    assert code == 0 and "…" in clipped
    code, whole, _ = run_cli(capsys, "apply", "--dry-run", "-vv", "--root", pkg)
    changed = [line for line in whole.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert code == 0 and changed and "…" not in whole
    source = (pkg / SHAPE_REL[2]).read_text()
    assert all(line[1:] in source.splitlines() for line in changed if line.startswith("-"))
    assert max(map(len, changed)) > max(map(len, clipped.splitlines()))


def test_did_you_mean_for_a_sub_action_and_an_option(capsys):
    code, _, err = run_cli(capsys, "daemon", "instal")
    assert code == 2 and "did you mean `install`?" in err and len(err.splitlines()) == 1
    code, _, err = run_cli(capsys, "status", "--jsn")
    assert code == 2 and "did you mean `--json`?" in err and "see `senpi-guard status --help`" in err
    code, _, err = run_cli(capsys, "apply", "--dry-rn=1")
    assert code == 2 and "did you mean `--dry-run`?" in err
    code, _, err = run_cli(capsys, "completion", "bsh")
    assert code == 2 and "did you mean `bash`?" in err
    assert "did you mean" not in run_cli(capsys, "daemon", "zzzzzz")[2] + run_cli(capsys, "status", "--zzzzzz")[2]
    code, _, err = run_cli(capsys, "uninstall", "--root", "/opt/senpi")  # (not "did you mean `--color`")
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "`uninstall` takes no --root (it is an option of apply, status, verify, revert, watch" in err, err
    code, _, err = run_cli(capsys, "uninstall", "--roo", "/opt/senpi")  # (a typo of it: not `--color` either)
    assert code == 2 and "did you mean --root? `uninstall` takes none (it is an option of apply, status" in err, err


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_wraps_at_words_on_a_narrow_terminal(command):
    """The description is filled as a paragraph: no line ends where the next line's first word would
    still have fitted (a sentence broken where the source text broke it, as `audit --help` was)."""
    done = subprocess.run(
        [sys.executable, "-m", "senpi_guard", *([command] if command else []), "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "60"},
        timeout=HANG_S,
    )
    width = 60 - 2  # (argparse's, from COLUMNS)
    blocks = done.stdout.split("\n\n")
    description = blocks[1].splitlines()  # (after the usage)
    assert done.returncode == 0 and description and description[0] not in ("options:", "positional arguments:")
    short = [
        (line, after)
        for line, after in itertools.pairwise(description)
        if not line.endswith((".", ":")) and len(line) + 1 + len(after.split()[0]) <= width
    ]
    assert not short, short
    assert all(len(line) <= width for line in description)


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("install", "apply"), ("instal", "apply"), ("setup", "apply"), ("patch", "apply"), ("show", "status")],
)
def test_a_word_that_names_a_command_by_meaning_gets_that_command(capsys, typed, meant):
    """`install`, the natural first guess, is spelled like `uninstall` but means `apply`."""
    code, _, err = run_cli(capsys, typed)
    assert code == 2 and f"did you mean `{meant}`?" in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("typed", ["install", "instal", "unpatch", "remove", "undo", "restore", "reverting"])
def test_a_destructive_command_is_offered_only_for_a_near_typo_of_its_name(capsys, typed):
    code, _, err = run_cli(capsys, typed)
    assert code == 2 and "`uninstall`?" not in err and "`revert`?" not in err, err
    if typed in ("unpatch", "remove"):  # (a word for undoing is never offered the opposite either)
        assert "did you mean" not in err, err


@pytest.mark.parametrize(
    ("typed", "name"), [("uninstal", "uninstall"), ("unisntall", "uninstall"), ("revrt", "revert")]
)
def test_a_near_typo_of_a_destructive_command_still_gets_it(capsys, typed, name):
    code, _, err = run_cli(capsys, typed)
    assert code == 2 and f"did you mean `{name}`?" in err, err


@pytest.mark.parametrize(
    ("argv", "told"),
    [
        (
            ["--dry-run", "apply"],
            "`--dry-run` is an option of apply: put it after the command: senpi-guard apply --dry-run",
        ),
        (
            ["--fresh", "verify"],
            "`--fresh` is an option of verify: put it after the command: senpi-guard verify --fresh",
        ),
        (["--keep", "demo"], "`--keep` is an option of demo: put it after the command: senpi-guard demo --keep"),
        (
            ["-v", "--root", "/opt/my senpi", "status", "--json"],
            "`--root` is an option of status: put it after the command: "
            "senpi-guard -v status --root '/opt/my senpi' --json",
        ),
        (
            ["--config", "c.toml", "--json", "--root=/x", "status"],
            "`--json`, `--root` are options of status: put them after the command: "
            "senpi-guard --config c.toml status --json --root=/x",
        ),
    ],
)
def test_a_commands_option_before_the_command_says_where_it_goes(capsys, argv, told):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and err.splitlines() == [f"senpi-guard: {told}"], err
    assert "did you mean" not in err
    if "--json" in argv:  # (--json promises JSON, a usage error included)
        assert json.loads(out)["error"] == told
