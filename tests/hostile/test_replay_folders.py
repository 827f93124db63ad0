"""The replay folders of `check` as root over a user's real senpi release (issue 24 follow-up,
point 1): the user owns the folder node runs in, so the moment they can, they swap its `pkg` for a
link to a folder of root's, and its files for links to root's files. Root must never chown (or
write) through what they put there: the folders are made and filled by the user's own process."""

from __future__ import annotations

import io
import os
import tarfile
import time
from pathlib import Path

import pytest
from hostile_support import Inotify, spin
from plugin import runs
from realsenpi import DIST_ONLY, real_dir, senpi_guard

from senpi_guard.prove import sandbox

IN_ATTRIB = 0x4
IN_CREATE = 0x100
EXTRA_FILES = 30_000  # empty top-level files: the mirror's link tree takes long enough to race
PREFIX = "senpi-guard-verify-"


@pytest.fixture(scope="module")
def crowded_tarball(tmp_path_factory) -> Path:
    """The dist-only 2026.8.9 release, with many empty files and one `secret` in package/."""
    out = tmp_path_factory.mktemp("crowded") / "crowded.tgz"
    with (
        tarfile.open(real_dir() / DIST_ONLY["2026.8.9"], "r:gz") as source,
        tarfile.open(out, "w:gz", compresslevel=1) as archive,
    ):
        for member in source:
            archive.addfile(member, source.extractfile(member) if member.isreg() else None)
        for index in range(EXTRA_FILES):
            info = tarfile.TarInfo(f"package/empty{index:05d}")
            info.mode, info.mtime = 0o644, int(time.time())
            archive.addfile(info, io.BytesIO(b""))
        info = tarfile.TarInfo("package/secret")
        info.mode, info.mtime = 0o644, int(time.time())
        archive.addfile(info, io.BytesIO(b""))
    return out


def _attack(tmp: Path, victim_dir: Path, victim_file: Path, landed: Path):
    """As the user: for each replay folder, swap `pkg` for a link to root's folder (a dist mirror)
    or every file for a link to root's file (the extension's), as soon as the folder lets them."""

    def swap_pkg(folder: Path) -> bool:
        try:
            os.rename(folder / "pkg", folder / "pkg.x")
        except OSError:
            return False
        os.symlink(victim_dir, folder / "pkg")
        return True

    def swap_files(folder: Path) -> bool:
        try:
            names = [n for n in os.listdir(folder) if not os.path.islink(folder / n)]
        except OSError:
            return False
        for name in names:
            os.symlink(victim_file, folder / f".{name}.link")
            os.rename(folder / f".{name}.link", folder / name)
        return bool(names)

    def attack(ready) -> None:
        watcher = Inotify()
        watcher.watch(tmp, IN_CREATE | IN_ATTRIB)
        ready()
        done: set[str] = set()
        while True:
            for name in watcher.events():
                if not name.startswith(PREFIX) or name in done:
                    continue
                done.add(name)
                swap = swap_files if "-ext-" in name else swap_pkg
                hit: list[bool] = []

                def step(swap=swap, folder=tmp / name, hit=hit) -> bool:
                    hit.append(swap(folder))
                    return hit[-1]

                spin(time.monotonic() + 30, step)
                if hit and hit[-1]:
                    with open(landed, "a") as log:
                        log.write(("ext" if "-ext-" in name else "dist") + "\n")

    return attack


def test_the_user_cannot_redirect_roots_hands_through_a_replay_folder(attacker, users_dir, crowded_tarball, tmp_path):
    from hostile_support import Attacker

    tarball = users_dir / "evil.tgz"
    tarball.write_bytes(crowded_tarball.read_bytes())
    os.chown(tarball, attacker.pw_uid, attacker.pw_gid)
    victim_dir = tmp_path / "victimdir"  # (root's, in root's 0700 pytest folder)
    victim_dir.mkdir()
    (victim_dir / "secret").write_bytes(b"root's")
    victim_file = tmp_path / "victim-file"
    victim_file.write_bytes(b"root's")
    landed = users_dir / "landed"
    tmp = sandbox.shared_temp()  # (where root's replay folders for another user go)
    tally = []
    for attempt in range(5 * runs(1)):  # (a busy machine may let one run's race go by: run again)
        if attempt >= runs(1) and any(dist > 0 for dist, _, _, _ in tally):
            break
        landed.write_text("")
        os.chown(landed, attacker.pw_uid, attacker.pw_gid)
        with Attacker(attacker, _attack(tmp, victim_dir, victim_file, landed)):
            done = senpi_guard("check", tarball, env={"TMPDIR": str(tmp)})
        given = [p for p in (victim_dir, victim_dir / "secret", victim_file) if p.stat().st_uid != 0]
        hits = landed.read_text().split()
        tally.append((hits.count("dist"), hits.count("ext"), len(given), done.returncode))
        for path in given:
            os.chown(path, 0, 0)
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
    print(f"replay-folder attacks: (dist swaps landed, ext swaps landed, root's files given away, exit): {tally}")
    assert all(given == 0 for _, _, given, _ in tally), f"root's files were given to the user: {tally}"
    assert any(dist > 0 for dist, _, _, _ in tally), f"the attack never landed (the test proves nothing): {tally}"
