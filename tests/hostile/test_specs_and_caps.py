"""`check` refuses every spec whose fetch could reach git or run code, before npm is asked
(issue 24, point 4), and stops an unpack that would pass its caps while it unpacks (point 5)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from conftest import HANG_S
from realsenpi import senpi_guard

from senpi_guard.demo import sample


@pytest.fixture
def logging_npm(attacker, open_dir) -> tuple[Path, dict[str, str]]:
    """The real npm, behind a shim first on PATH that notes every call."""
    real = shutil.which("npm")
    log = open_dir / "npm-calls"
    log.touch()
    log.chmod(0o666)
    shim = open_dir / "bin" / "npm"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    return log, {"PATH": f"{shim.parent}:{os.environ['PATH']}"}


@pytest.fixture
def git_repo(open_dir) -> Path:
    """A real git repository of a package whose `prepare` script leaves a mark."""
    repo = open_dir / "repo"
    repo.mkdir()
    (repo / "package.json").write_text(
        json.dumps({"name": "x", "version": "1.0.0", "scripts": {"prepare": f"touch {open_dir}/prepare-ran"}})
    )
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    return repo


def test_every_spec_that_could_reach_git_is_refused_before_npm_runs(logging_npm, git_repo, open_dir):
    log, env = logging_npm
    url = f"git+file://{git_repo}"
    specs = [
        url,
        f"x@{url}",
        f"@code-yeongyu/senpi@{url}",
        f"x@npm:@code-yeongyu/senpi@{url}",
        "code-yeongyu/senpi",
        "x@code-yeongyu/senpi#main",
        "github:code-yeongyu/senpi",
        "x@gitlab:someone/senpi",
        "x@git@github.com:code-yeongyu/senpi.git",
        "git@github.com:code-yeongyu/senpi.git",
        "x@https://github.com/code-yeongyu/senpi",
        "https://codeload.github.com/code-yeongyu/senpi/tar.gz/main",
        f"x@file:{git_repo}",
        f"x@{git_repo}",
        f"GIT+FILE://{git_repo}",  # (schemes and hosts in any case: npm and git read them so)
        f"x@GIT+FILE://{git_repo}",
        f"Git+file://{git_repo}",
        "GITHUB:foo/bar",
        "x@GitHub:foo/bar",
        "code-yeongyu/senpi#semver:^1.0",  # (issue 46 row 12: npm ran `git ls-remote` for it)
        "x@code-yeongyu/senpi#semver:^1.0",
        "https://example.invalid/senpi-1.0.0.tgz",  # (and no fetch from outside the registry)
    ]
    for spec in specs:
        done = senpi_guard("check", spec, env=env)
        errors = [line for line in done.stderr.splitlines() if line.startswith("senpi-guard:")]
        assert done.returncode == 1 and len(errors) == 1, (spec, done.stderr)
        assert any(why in errors[0] for why in ("a git spec", "pass the path itself", "not a registry spec")), (
            spec,
            errors[0],
        )
        assert "pass" in errors[0], errors[0]  # (what to do instead)
        assert log.read_text() == "", f"{spec}: npm was run ({log.read_text()!r})"
    assert not (open_dir / "prepare-ran").exists()
    print(f"specs: {len(specs)} refused before npm ran")


def _tarball(path: Path, sizes: list[int]) -> Path:
    """A package tarball whose members hold real bytes (zeros: they pack to almost nothing)."""
    with tarfile.open(path, "w:gz", compresslevel=1) as archive:
        data = json.dumps({"name": "@code-yeongyu/senpi", "version": "9.9.9"}).encode()
        info = tarfile.TarInfo("package/package.json")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
        for index, size in enumerate(sizes):
            info = tarfile.TarInfo(f"package/dist/blob{index}.bin")
            info.size, info.mtime = size, int(time.time())
            archive.addfile(info, io.BytesIO(bytes(size)))
    return path


@pytest.fixture
def own_tmp(open_dir) -> Path:
    """A temp folder for check's scratch that is this test's alone (root's, sticky, world-writable,
    as /tmp is): another run's cleanup or sweep of /tmp never reaches it, nor its sizes this one's."""
    tmp = open_dir / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    return tmp


def _scratches(tmp: Path, pid: int) -> list[Path]:
    """The scratch folders of the check run as `pid` (check names them with its pid)."""
    return list(tmp.glob(f"senpi-guard-check-{pid}-*"))


def _watch_peak(folder: Path, proc: subprocess.Popen) -> int:
    """The most bytes seen under `proc`'s scratch folders while it runs (sampled)."""
    peak = 0
    while proc.poll() is None:
        total = 0
        for scratch in _scratches(folder, proc.pid):
            # (os.walk passes over a folder that goes while it is walked: the check removes its
            # scratch as it stops, and rglob raised there, a flake seen twice on a busy machine)
            for here, _dirs, names in os.walk(scratch):
                for name in names:
                    with contextlib.suppress(OSError):
                        total += os.lstat(os.path.join(here, name)).st_size
        peak = max(peak, total)
        time.sleep(0.02)
    return peak


def test_an_unpack_past_a_cap_is_stopped_while_it_unpacks(attacker, open_dir, own_tmp, tmp_path):
    """Caps from the config (smaller than the defaults, to test quickly): bytes and entries."""
    config = tmp_path / "config.toml"
    config.write_text("check_max_bytes = 30_000_000\ncheck_max_entries = 500\n")
    big = _tarball(open_dir / "big.tgz", [12_000_000] * 5)  # 60 MB where 30 MB are allowed
    proc = subprocess.Popen(
        [sys.executable, "-m", "senpi_guard", "check", str(big)],
        env={**os.environ, "SENPI_GUARD_CONFIG": str(config), "TMPDIR": str(own_tmp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = _watch_peak(own_tmp, proc)
    _out, err = proc.communicate()
    errors = [line for line in err.splitlines() if line.startswith("senpi-guard:")]
    assert proc.returncode == 1 and len(errors) == 1 and "more than 0.03 GB" in errors[0], err
    assert "check_max_bytes" in errors[0] and peak <= 30_000_000, (peak, errors)
    many = _tarball(open_dir / "many.tgz", [1] * 800)
    done = senpi_guard("check", many, env={"SENPI_GUARD_CONFIG": str(config), "TMPDIR": str(own_tmp)})
    assert done.returncode == 1 and "more than 500 entries" in done.stderr, done.stderr
    print(f"caps: 60 MB refused at a peak of {peak / 1e6:.1f} MB unpacked; 800 entries refused at 500")


def test_the_default_cap_is_1_gb(attacker, open_dir, own_tmp):
    """1.1 GB of real zeros (about 1 MB packed): refused at 1 GB, long before the disk fills. (Its
    scratch in a temp folder of its own: another run's cleanup of /tmp could take it mid-unpack.)"""
    bomb = _tarball(open_dir / "bomb.tgz", [100_000_000, 1_000_000_000])
    started = time.monotonic()
    done = senpi_guard("check", bomb, env={"TMPDIR": str(own_tmp)})
    took = time.monotonic() - started
    assert done.returncode == 1 and "more than 1 GB" in done.stderr, done.stderr
    assert not list(own_tmp.iterdir()), "check left its scratch"
    print(f"default cap: a {bomb.stat().st_size / 1e6:.1f} MB tarball of 1.1 GB refused in {took:.1f}s")


def test_a_folder_owned_by_a_user_is_copied_as_them_and_checked(attacker, open_dir, own_tmp):
    """`check DIR` as root over a user's folder: copied as the user, never read in place by root (a
    link out of it refused); the patches still check."""
    folder = open_dir / "users-package"
    sample.write_sample_package(folder, 2, fillers=0)
    (folder / "dist" / "secret").symlink_to("/etc/shadow")  # (the user cannot read it: not copied)
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, attacker.pw_uid, attacker.pw_gid, follow_symlinks=False)
    done = senpi_guard("check", folder, env={"TMPDIR": str(own_tmp)})
    assert done.returncode == 1 and "a link out of the folder" in done.stderr, done.stderr
    assert "root:" not in done.stdout
    (folder / "dist" / "secret").unlink()
    done = senpi_guard("check", folder, env={"TMPDIR": str(own_tmp)})
    assert done.returncode == 0 and "patchable" in done.stdout, done.stdout + done.stderr


def _size(scratch: Path) -> int:
    """The bytes under a scratch folder now (0 for what is removed while it is walked: check removes
    its scratch when it ends, which this races with)."""
    total = 0
    for folder, _dirs, files in os.walk(scratch):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


@pytest.mark.parametrize("endless", ["link to /dev/zero", "fifo"])
def test_a_users_folder_with_an_endless_file_is_refused_within_the_cap(attacker, open_dir, own_tmp, tmp_path, endless):
    """The user's folder holds a link to /dev/zero (or a FIFO): the copy must not follow it past the
    cap (it used to copy forever, filling the disk), and the scratch must not stay behind."""
    config = tmp_path / "config.toml"
    config.write_text("check_max_bytes = 30_000_000\n")
    folder = open_dir / "users-package"
    sample.write_sample_package(folder, 2, fillers=0)
    if endless == "fifo":
        os.mkfifo(folder / "dist" / "endless")
    else:
        (folder / "dist" / "endless").symlink_to("/dev/zero")
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, attacker.pw_uid, attacker.pw_gid, follow_symlinks=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "senpi_guard", "check", str(folder)],
        env={**os.environ, "SENPI_GUARD_CONFIG": str(config), "TMPDIR": str(own_tmp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak, deadline = 0, time.monotonic() + HANG_S
    while proc.poll() is None and peak < 200_000_000 and time.monotonic() < deadline:
        peak = max(peak, sum(_size(s) for s in _scratches(own_tmp, proc.pid)))
        time.sleep(0.02)
    if proc.poll() is None:
        proc.kill()
    _out, err = proc.communicate()
    left = _scratches(own_tmp, proc.pid)  # (this check's own: never another run's)
    for scratch in left:
        shutil.rmtree(scratch, ignore_errors=True)
    errors = [line for line in err.splitlines() if line.startswith("senpi-guard:")]
    print(f"{endless}: exit {proc.returncode}, peak {peak / 1e6:.1f} MB copied, scratch left: {len(left)}")
    assert proc.returncode == 1 and len(errors) == 1 and "endless" in errors[0], (peak, err[-500:])
    assert peak <= 30_000_000 and not left, (peak, left)
