"""Hostile trees: planted backups, untrusted folders, a planted .yarnrc, a real full tmpfs, odd
files and records, killed runs. Root over another user's files: test_hostile_root.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import (
    HANG_S,
    SHAPE_REL,
    hand_patched,
    harness_processes,
    rows_of,
    run_cli,
    run_console,
    tree_digest,
    wait_for,
)

from senpi_guard.demo import sample, sample_session
from senpi_guard.prove import sandbox

USER = "senpi-guard-test"
REL = SHAPE_REL[2]
PROVIDER = str(Path(REL).parent)


def one_error_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if "error" in ln.lower()]
    assert len(lines) == 1, text
    return lines[0]


# ---- 3. backups are trusted only when they fit -------------------------------------------------


def test_a_planted_self_consistent_backup_is_not_restored(npm_install, capsys, isolated_dirs):
    pkg = npm_install(2)
    target = pkg / REL
    original = target.read_bytes()
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    patched = target.read_bytes()
    (meta,) = (isolated_dirs / "xdg_data_home").rglob("*.json")
    record = json.loads(meta.read_text())
    evil = original.replace(b"USER:", b"EVIL:")
    import hashlib

    record["sha256"] = hashlib.sha256(evil).hexdigest()
    meta.with_name(f"{record['sha256']}.orig").write_bytes(evil)
    planted = meta.with_name(f"{record['sha256']}.json")
    record["saved"] = "9999-12-31T23:59:59+0000"  # newest: the one revert would pick
    planted.write_text(json.dumps(record))
    code, out, err = run_cli(capsys, "revert", "--root", pkg)
    assert code == 1 and "does not fit" in one_error_line(out + err)
    assert target.read_bytes() == patched
    assert run_cli(capsys, "revert", "--from-edit", "--root", pkg)[0] == 0
    assert target.read_bytes() == original


@pytest.mark.parametrize("damage", ["group-writable", "symlinked-backups", "not-mine"])
def test_an_untrustworthy_data_dir_is_refused(npm_install, capsys, isolated_dirs, tmp_path, damage):
    if damage == "not-mine" and os.geteuid() != 0:
        pytest.skip("giving a folder to another owner needs root")
    pkg = npm_install(2)
    data = isolated_dirs / "xdg_data_home" / "senpi-guard"
    data.mkdir(parents=True)
    if damage == "group-writable":
        data.chmod(0o775)
    elif damage == "symlinked-backups":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (data / "backups").symlink_to(elsewhere)
    else:
        os.chown(data, 4242, 4242)
    before = tree_digest(pkg)
    code, out, err = run_cli(capsys, "apply", "--root", pkg)
    assert code == 1 and "will not trust" in one_error_line(out + err)
    assert tree_digest(pkg) == before


# ---- 4. discovery does not depend on where the user stands ---------------------------------------


def test_a_planted_yarnrc_in_the_current_folder_is_ignored(env, npm_install, tmp_path, capsys, monkeypatch):
    """yarn reads .yarnrc from the folder it runs in: discovery asks it from HOME instead."""
    from conftest import add_path, tool

    add_path(monkeypatch, Path(tool("yarn")).parent)
    planted = tmp_path / "planted-yarn"
    shutil.copytree(npm_install(2), planted / "node_modules" / "@code-yeongyu" / "senpi", symlinks=True)
    here = tmp_path / "project"
    here.mkdir()
    (here / ".yarnrc").write_text(f'global-folder "{planted}"\n')
    monkeypatch.chdir(here)
    _code, out, err = run_cli(capsys, "status", "--json")
    assert str(planted) not in out + err
    # the check can fail: yarn itself, asked from this folder, does name the planted folder
    asked_here = subprocess.run([tool("yarn"), "global", "dir"], capture_output=True, text=True, cwd=here)
    assert str(planted) in asked_here.stdout


# ---- 5. every OS failure is one line, and the other installs go on -------------------------------


@pytest.fixture
def small_tmpfs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if result.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path) -> None:
    """Fill the file system under `folder` to the last byte."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 1 << 10, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        (folder / "probe").write_bytes(b"x")


def test_a_full_disk_is_one_line_and_the_next_install_is_patched(small_tmpfs, tarballs, npm_install, capsys):
    src = small_tmpfs / "src"
    sample.write_sample_package(src, 2, fillers=2)
    full_pkg = src
    other = npm_install(2)
    fill(small_tmpfs)
    before = tree_digest(full_pkg)
    code, out, err = run_cli(capsys, "apply", "--root", full_pkg, "--root", other)
    assert code == 1
    assert "no space left on the device" in one_error_line(out + err)
    assert "Traceback" not in out + err
    assert tree_digest(full_pkg) == before
    assert not [p for p in (full_pkg / PROVIDER).iterdir() if p.name.endswith(".senpi-guard")]
    assert json.loads(run_cli(capsys, "status", "--json", "--root", other)[1])["installs"][0]["state"] == "patched"


@pytest.mark.parametrize("shape", [2, 3])  # (3: senpi's own dedupe too, where the extension alone is a risk)
def test_a_full_backup_disk_changes_nothing(small_tmpfs, npm_install, capsys, monkeypatch, shape):
    pkg = npm_install(shape)
    monkeypatch.setenv("XDG_DATA_HOME", str(small_tmpfs / "data"))
    (small_tmpfs / "data").mkdir()
    fill(small_tmpfs)
    before = tree_digest(pkg)
    code, out, err = run_cli(capsys, "apply", "--root", pkg)
    # (with senpi's own dedupe there, the extension says it was left out: without the dist layer it is a risk)
    dist, *extension = [line for line in (out + err).splitlines() if "error" in line.lower()]
    assert code == 1 and "no space left" in dist, out + err
    assert [line.split(":", 2)[1].strip() for line in extension] == ["not written"] * (shape == 3), out
    assert tree_digest(pkg) == before
    # (the dist layer failed: apply left no extension that status calls a risk without it)
    code, out, _ = run_cli(capsys, "status", "--json", "--root", pkg)
    extensions = [sub["extension"] for row in json.loads(out)["installs"] for sub in row["patches"]]
    assert [e["risk"] for e in extensions if e and e["risk"]] == [], out


@pytest.mark.parametrize(
    "damage", ["state-dir-is-a-file", "lock-is-a-symlink", "deep-package-json", "long-version", "odd-state-fields"]
)
def test_odd_environments_are_one_line(npm_install, capsys, isolated_dirs, tmp_path, damage):
    pkg = npm_install(2)
    state = isolated_dirs / "xdg_state_home" / "senpi-guard"
    expect_ok = damage in ("long-version", "odd-state-fields")  # handled, not refused
    if damage == "state-dir-is-a-file":
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text("not a folder")
    elif damage == "lock-is-a-symlink":
        state.mkdir(parents=True)
        victim = tmp_path / "victim"
        victim.write_text("keep me")
        (state / "write.lock").symlink_to(victim)
    elif damage == "deep-package-json":
        (pkg / "package.json").write_text("[" * 100_000 + "]" * 100_000)
    elif damage == "long-version":
        manifest = json.loads((pkg / "package.json").read_text())
        manifest["version"] = "9" * 100_000
        (pkg / "package.json").write_text(json.dumps(manifest))
    else:
        state.mkdir(parents=True)
        (state / "state.json").write_text(
            json.dumps(
                {
                    "version": 2,
                    "installs": {str(pkg.resolve()): {"last_verify": ["odd"], "last_reconcile": 7, "backoff": "x"}},
                }
            )
        )
    code, out, err = run_cli(capsys, "apply", "--root", pkg)
    assert "Traceback" not in out + err and "unexpected error" not in out + err
    if expect_ok:
        assert code == 0, out + err
        assert run_cli(capsys, "status", "--root", pkg)[0] == 0
    else:
        expected = {
            "state-dir-is-a-file": "is not a folder",
            "lock-is-a-symlink": "not a plain file",
            "deep-package-json": "not a @code-yeongyu/senpi package",
        }[damage]
        assert code == 1 and expected in one_error_line(out + err)
    if damage == "lock-is-a-symlink":
        assert (tmp_path / "victim").read_text() == "keep me"


def test_deeply_nested_session_lines_are_skipped(tmp_path, capsys):
    path = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=3, directive_bytes=300)
    with path.open("a") as out:
        out.write('{"type":"message","id":"deep","parentId":null,"message":' + "[" * 100_000 + "]" * 100_000 + "}\n")
        out.write('{"type":5,"id":7,"parentId":["x"],"message":{"role":"user","content":9}}\n')
    code, out, err = run_cli(capsys, "audit", "--sample", path)
    assert code == 0 and "Traceback" not in out + err


# ---- 7. honest reports ----------------------------------------------------------------------------


def test_defer_on_a_hand_patched_install_says_what_happened(custom_package, capsys, isolated_dirs, monkeypatch):
    pkg = custom_package(hand_patched(sample.prompt_bridge_source(3)), shape=3, version="2026.8.6")
    config = isolated_dirs / "defer.toml"
    config.write_text('upstream_dedupe = "defer"\n')
    monkeypatch.setenv("SENPI_GUARD_CONFIG", str(config))
    before = tree_digest(pkg)
    code, out, err = run_cli(capsys, "apply", "--root", pkg)
    assert code == 1 and "hand-applied" in one_error_line(out + err)
    assert tree_digest(pkg) == before


def test_a_write_that_stops_half_way_reports_partial(npm_install, capsys, monkeypatch):
    from senpi_guard.io import write

    pkg = npm_install(3)
    real_replace = write.replace
    calls = []

    def second_write_fails(snapshot, data):
        calls.append(snapshot.path.name)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", str(snapshot.path))
        real_replace(snapshot, data)

    monkeypatch.setattr(write, "replace", second_write_fails)
    code, out, _ = run_cli(capsys, "apply", "--json", "--root", pkg)
    (row,) = rows_of(json.loads(out))
    assert (
        code == 1
        and row["state"] == "partial"
        and row["changed"] == ["dist/core/extensions/builtin/claude-sdk-oauth/prompt-directive-dedupe.js"]
    )
    assert "wrote" in row["detail"] and "nothing was written" not in row["detail"]
    monkeypatch.setattr(write, "replace", real_replace)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0  # and apply completes it


def test_dry_run_shows_control_characters_escaped(custom_package, capsys):
    source = sample.prompt_bridge_source(2).replace("    return blocks;", "    return blocks; // \x1b[2J\x07")
    pkg = custom_package(source, version="2026.8.7")
    code, out, _ = run_cli(capsys, "-v", "apply", "--dry-run", "--root", pkg)  # (-v: the whole diff)
    assert code == 0 and "\\x1b[2J\\x07" in out and "\x1b" not in out and "\x07" not in out


# ---- 8. no litter ---------------------------------------------------------------------------------

SLOW = """\
export function buildPromptBlocks(context) {
    const until = Date.now() + 30000;
    while (Date.now() < until) {
        // slow enough to be killed in the middle
    }
    return [];
}
//# sourceMappingURL=prompt-bridge.js.map"""


def test_a_killed_run_leaves_no_mirror_behind_for_long(custom_package, capsys, isolated_dirs, monkeypatch, tmp_path):
    own_tmp = tmp_path / "tmp"  # (root's, sticky, world-writable as /tmp: no other run sweeps it first)
    own_tmp.mkdir()
    own_tmp.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(own_tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    pkg = custom_package(SLOW, version="2026.9.2")
    verify_dir = isolated_dirs / "xdg_state_home" / "senpi-guard" / "verify"
    proc = subprocess.Popen(
        [sys.executable, "-m", "senpi_guard", "apply", "--root", str(pkg)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def mirrors() -> list[Path]:  # (its own: in the state dir, or as root replaying as nobody, in TMPDIR)
        return [
            *(verify_dir.glob(f"senpi-guard-verify-{proc.pid}-*") if verify_dir.is_dir() else ()),
            *sandbox.shared_temp().glob(f"senpi-guard-verify-{proc.pid}-*"),
        ]

    wait_for(mirrors, what="the mirror")
    replays = wait_for(lambda: harness_processes(proc.pid), what="node to be replaying")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for orphan in replays:  # its node child outlives it (the slow replay would run 30 s more)
        os.kill(orphan, signal.SIGKILL)
    assert mirrors()  # a kill -9 cannot clean up…
    other = custom_package(sample.prompt_bridge_source(2), version="2026.9.3")
    assert run_cli(capsys, "verify", "--root", other)[0] == 1  # (unpatched: verify says so)
    assert not mirrors()  # …the next run sweeps it


def test_nothing_is_left_in_the_system_temp_dir(npm_install, capsys, monkeypatch, tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", None)
    pkg = npm_install(2)
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    assert list(scratch.iterdir()) == []  # mirrors and the replay's job file live in the state dir


def test_a_log_dir_that_is_a_file_is_one_line(npm_install, isolated_dirs):
    pkg = npm_install(2)
    state = isolated_dirs / "xdg_state_home" / "senpi-guard"
    state.mkdir(parents=True)
    (state / "log").write_text("a file where the log folder should be")
    result = subprocess.run(
        [sys.executable, "-m", "senpi_guard", "watch", "--root", str(pkg)],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "cannot open the log" in result.stderr


def test_a_full_disk_under_the_cache_costs_only_what_it_would_keep(small_tmpfs, tmp_path):
    from senpi_guard.demo import sample

    pkg = tmp_path / "senpi"
    sample.write_sample_package(pkg, 2, fillers=3)
    env = {"XDG_CACHE_HOME": str(small_tmpfs / "cache")}
    assert run_console("apply", "--root", pkg, env=env).returncode == 0
    first = run_console("status", "--root", pkg, env=env)
    cache = small_tmpfs / "cache" / "senpi-guard"
    kept = sorted(p.name for p in cache.iterdir())
    assert first.returncode == 0
    fill(small_tmpfs)
    (cache / "probes.json").unlink(missing_ok=True)  # (what status would keep again: no room for it now)
    told = run_console("status", "--root", pkg, env=env)
    assert told.returncode == 0 and told.stdout == first.stdout and told.stderr == ""
    assert sorted(p.name for p in cache.iterdir()) == [name for name in kept if name != "probes.json"]  # no scratch
