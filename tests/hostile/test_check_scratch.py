"""`check` leaves no scratch behind (issue 24 follow-up, point 8): SIGTERM is a clean exit that
removes it, and the scratch of a check killed outright is swept by the next run (named by pid)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import HANG_S
from hostile_support import IN_CREATE, Inotify
from realsenpi import senpi_guard

from senpi_guard.demo import sample

FILLER_MB = 64  # zeros: the unpack takes long enough to be stopped in the middle


def _tarball(src: Path, out: Path) -> Path:
    sample.write_sample_package(src, 2, fillers=0)
    (src / "dist" / "filler.bin").write_bytes(bytes(FILLER_MB * 1024 * 1024))
    return sample.npm_pack(src, out)


def _started_check(tarball: Path, tmp: Path) -> tuple[subprocess.Popen, Path]:
    """A check running (its TMPDIR `tmp`), and its scratch folder the moment it is made (inotify)."""
    watcher = Inotify()
    watcher.watch(tmp, IN_CREATE)
    proc = subprocess.Popen(
        [sys.executable, "-m", "senpi_guard", "check", str(tarball)],
        env={**os.environ, "TMPDIR": str(tmp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while True:
        names = [n for n in watcher.events() if n.startswith(f"senpi-guard-check-{proc.pid}-")]
        if names:
            os.close(watcher.fd)
            return proc, tmp / names[0]


def test_sigterm_and_a_kill_leave_no_scratch(attacker, open_dir):
    tmp = open_dir / "tmp"  # (root's, sticky, world-writable as /tmp: no other run sweeps it first)
    tmp.mkdir()
    tmp.chmod(0o1777)
    tarball = _tarball(open_dir / "src", open_dir / "pack")
    proc, scratch = _started_check(tarball, tmp)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=HANG_S)
    print(f"SIGTERM: exit {proc.returncode}, scratch left: {scratch.exists()}, stderr: {err.strip()[-120:]!r}")
    assert proc.returncode == 143 and "terminated" in err and "Traceback" not in err, err
    assert not scratch.exists(), f"SIGTERM left {scratch}"

    proc, killed = _started_check(tarball, tmp)
    proc.kill()
    proc.communicate()
    assert killed.exists()  # (a SIGKILL cannot be cleaned up after: the next run sweeps it)
    small = sample.npm_pack(_small(open_dir / "small"), open_dir / "small-pack")
    done = senpi_guard("check", small, env={"TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stderr
    assert not killed.exists(), f"the next check did not sweep {killed}"


def _small(src: Path) -> Path:
    sample.write_sample_package(src, 2, fillers=0)
    return src
