"""`check` as root given root's own folder through a path the user controls (issue 24 follow-up,
point 2): the user keeps swapping a link between root's 077 copy of the package and their own copy
(whose code notes its uid). Whatever the link pointed at when root opened it, the user's code must
never run as root: root's folder is used by its real path, taken from the descriptor."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from hostile_support import Attacker, exchange, planted, shared_log, uids_in
from plugin import runs
from realsenpi import senpi_guard

from senpi_guard.demo import sample

PROVIDER = "dist/core/extensions/builtin/claude-sdk-oauth"


def _packages(tmp_path: Path, users_dir: Path, attacker, log: Path) -> tuple[Path, Path]:
    src = tmp_path / "src"
    sample.write_sample_package(src, 2, fillers=0)
    roots = tmp_path / "r1pkg"
    shutil.copytree(src, roots)
    subprocess.run(["chmod", "-R", "go-rwx", str(roots)], check=True)  # (a 077 copy)
    users = users_dir / "pkg"
    shutil.copytree(src, users)
    for script in (users / "dist").rglob("*.js"):
        script.write_text(planted(log) + script.read_text())
    subprocess.run(["chown", "-R", f"{attacker.pw_uid}:{attacker.pw_gid}", str(users)], check=True)
    return roots, users


def test_a_link_swapped_between_roots_folder_and_the_users_never_runs_the_users_code_as_root(
    attacker, users_dir, open_dir, tmp_path
):
    log = shared_log(open_dir, "who-ran-it")
    roots, users = _packages(tmp_path, users_dir, attacker, log)
    link, other = users_dir / "link", users_dir / "other"
    link.symlink_to(roots)
    other.symlink_to(users)
    os.chown(link, attacker.pw_uid, attacker.pw_gid, follow_symlinks=False)

    def attack(ready) -> None:
        ready()
        while True:  # (as fast as it goes, for as long as root runs check)
            exchange(link, other)

    tally = []
    for _attempt in range(runs(10)):
        log.write_text("")
        with Attacker(attacker, attack):
            done = senpi_guard("check", link)
        tally.append((sorted(uids_in(log)), done.returncode, done.stderr.strip().splitlines()[-1:]))
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
    print(f"link swap: {len(tally)} checks, (uids the user's code ran as, exit, last line): {tally}")
    assert not [t for t in tally if 0 in t[0]], f"the user's code ran as root: {tally}"
