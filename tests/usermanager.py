"""A machine with a user service manager, for the tests of `daemon install`: a real `systemd --user`
that the test's process reaches through XDG_RUNTIME_DIR (this container was not booted with
systemd, and its own `systemctl --user` reaches none)."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import HANG_S, wait_for

SYSTEMD = Path("/lib/systemd/systemd")


@contextlib.contextmanager
def user_manager(monkeypatch, config_home: Path, work: Path) -> Iterator[Path]:
    """A real `systemd --user` that this process reaches through XDG_RUNTIME_DIR, reading units from
    `config_home`: a machine with a user service manager. It runs in a private mount namespace where
    /run/systemd/system exists (this container was not booted with systemd); stopping it at the end
    stops every service it started."""
    if os.geteuid() != 0 or shutil.which("unshare") is None or not SYSTEMD.exists():
        pytest.skip("a private user manager needs root, unshare and /lib/systemd/systemd")
    # (0700, as systemd wants it; short: its socket's path must fit a unix socket's 108 bytes, which
    # a test's folder under an xdist worker's does not)
    runtime = Path(tempfile.mkdtemp(prefix="sg-mgr-"))
    env = [f"XDG_RUNTIME_DIR={runtime}", f"XDG_CONFIG_HOME={config_home}", f"HOME={work}"]
    script = (
        "mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system || exit 90\n"
        f"exec env -i {' '.join(map(shlex.quote, env))} {SYSTEMD} --user"
    )
    log = work / "user-manager.log"
    with log.open("w") as out:
        manager = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        socket = runtime / "systemd" / "private"
        wait_for(lambda: socket.is_socket() or manager.poll() is not None, what="the user manager's socket")
        if manager.poll() == 90:
            pytest.skip(f"no private mount namespace here: {log.read_text()}")
        assert manager.poll() is None, f"the user manager exited {manager.poll()}: {log.read_text()}"
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
        yield runtime
    finally:
        manager.terminate()
        manager.wait(timeout=HANG_S)
        shutil.rmtree(runtime, ignore_errors=True)
