"""`check` as root against a user racing it: the tarball swapped for a link to root's own after root
opened it (issue 24, point 1), and the unpacked tree's folders swapped for links into root's files
while root would have handed it over (point 2). Each attack is a real process of the second user,
woken by inotify."""

from __future__ import annotations

import io
import json
import os
import tarfile
import time
from pathlib import Path

from hostile_support import IN_CREATE, IN_OPEN, Attacker, Inotify, exchange, planted, shared_log, spin, uids_in
from plugin import runs
from realsenpi import senpi_guard

from senpi_guard.demo import sample

PROVIDER = "dist/core/extensions/builtin/claude-sdk-oauth"
FILLER_MB = 64  # zeros (they pack to almost nothing): the unpack takes long enough to race


def _senpi_tarball(src: Path, out: Path, log: Path | None) -> Path:
    """A release whose tools.js notes its uid in `log` (None: unplanted)."""
    sample.write_sample_package(src, 2, fillers=0)
    if log is not None:
        tools = src / PROVIDER / "tools.js"
        tools.write_text(planted(log) + tools.read_text())
    (src / "dist" / "filler.bin").write_bytes(bytes(FILLER_MB * 1024 * 1024))
    return sample.npm_pack(src, out)


def test_a_tarball_swapped_after_the_open_is_still_unpacked_and_run_as_its_owner(attacker, users_dir, open_dir):
    """The user's tarball (with code that notes its uid) is replaced, the moment root opens it, by a
    link to root's own tarball. Root must take the owner from what it opened: the user's code runs
    as the user, never as uid 0."""
    log = shared_log(open_dir, "who-ran-it")
    roots = _senpi_tarball(open_dir / "roots-src", open_dir / "roots", log=None)
    users = _senpi_tarball(open_dir / "users-src", open_dir / "users-pack", log=log)
    tarball = users_dir / "senpi.tgz"
    tally = []
    for attempt in range(runs(3)):
        tarball.write_bytes(users.read_bytes())
        os.chown(tarball, attacker.pw_uid, attacker.pw_gid)
        link = users_dir / f"swap{attempt}"
        log.write_text("")

        def attack(ready, link=link) -> None:
            os.symlink(roots, link)
            watcher = Inotify()
            watcher.watch(tarball, IN_OPEN)
            ready()
            watcher.events()  # (root opened it)
            os.rename(link, tarball)

        with Attacker(attacker, attack):
            done = senpi_guard("check", tarball)
        swapped = tarball.is_symlink()
        ran_as = uids_in(log)
        tally.append((swapped, sorted(ran_as), done.returncode))
        assert "Traceback" not in done.stdout + done.stderr
        if swapped:
            tarball.unlink()
    print(f"tarball swap: {len(tally)} attempts, (swapped, uids the user's code ran as, exit): {tally}")
    assert not [t for t in tally if 0 in t[1]], f"the user's code ran as root: {tally}"
    assert all(code == 0 and uids == [attacker.pw_uid] for _, uids, code in tally), tally


def _victim_tarball(out: Path, files: int) -> Path:
    """A package whose folder `victim` holds many files named as root's are."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(f"package/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            archive.addfile(info, io.BytesIO(data))

        add("package.json", json.dumps({"name": "not-senpi", "version": "1.0.0"}).encode())
        for index in range(files):
            add(f"victim/f{index:05d}", b"x")
    out.write_bytes(buffer.getvalue())
    return out


def test_no_folder_of_the_unpacked_tree_can_redirect_roots_hands(attacker, users_dir, tmp_path):
    """The user waits for check's scratch folder, then tries to reach the unpacked tree in it
    (`<scratch>/<random>/unpacked/package/victim`) to swap `victim` for a link to a folder of
    root's. The scratch lists to no one, so the attempt must be seen to fail there (not pass
    unnoticed); none of root's files may change owner. (The replay folders, which the user does
    own, are attacked with a real release in test_replay_folders.py, where the swap lands.)"""
    files = 3000
    roots_dir = tmp_path / "roots-files"
    roots_dir.mkdir()
    for index in range(files):
        (roots_dir / f"f{index:05d}").write_bytes(b"root's")
    tarball = _victim_tarball(users_dir / "victim.tgz", files)
    os.chown(tarball, attacker.pw_uid, attacker.pw_gid)
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    outcome = users_dir / "outcome"
    tally: list[tuple[int, bool, str]] = []
    wanted, attempt = runs(3), 0
    # (on a busy machine the check can end before the attacker is scheduled: such an attempt is
    # counted, never passed off as one the attack reached, and another is run, up to 4x as many)
    while sum(what in ("scratch unlisted", "swapped") for _, _, what in tally) < wanted and attempt < 4 * wanted:
        attempt += 1
        outcome.write_text("")
        os.chown(outcome, attacker.pw_uid, attacker.pw_gid)

        def attack(ready, link=users_dir / f"link{attempt}") -> None:
            watcher = Inotify()
            watcher.watch(tmp, IN_CREATE)
            ready()
            while True:
                names = [n for n in watcher.events() if n.startswith("senpi-guard-check-")]
                if names:
                    break
            link.symlink_to(roots_dir)
            result: list[str] = []

            def swap() -> bool:
                try:
                    places = os.listdir(tmp / names[0])
                except PermissionError:
                    result.append("scratch unlisted")
                    return True
                except OSError:
                    return False
                for place in places:
                    try:
                        exchange(link, tmp / names[0] / place / "unpacked" / "package" / "victim")
                    except OSError:
                        continue
                    result.append("swapped")
                    return True
                return False

            spin(time.monotonic() + 60, swap)
            outcome.write_text(result[-1] if result else "nothing reached")

        with Attacker(attacker, attack):
            done = senpi_guard("check", tarball)
        given = [p for p in roots_dir.iterdir() if p.stat().st_uid != 0]
        refused = done.returncode == 1 and "not a @code-yeongyu/senpi package" in done.stderr
        tally.append((len(given), refused, outcome.read_text()))
        for path in given:
            os.chown(path, 0, 0)
    print(f"unpack-tree race: {len(tally)} attempts, (root's files given away, refused as not senpi, attack): {tally}")
    assert all(given == 0 for given, _, _ in tally), tally
    assert all(refused for _, refused, _ in tally), tally
    reached = sum(what in ("scratch unlisted", "swapped") for _, _, what in tally)
    assert reached == wanted, f"the attack reached the scratch in {reached} of {len(tally)} attempts: {tally}"
