"""The replay folders of `check` as root over a user's real senpi release (issue 24 follow-up,
point 1): the user owns the folder node runs in, so they swap its `pkg` for a link to a folder of
root's, and its files for links to a file of root's. Root must never chown (or write) through what
they put there, and never run their code as root: the folders are made, filled and removed by the
user's own process, and node runs as the user.

Each attack is timed from the event it races with, so one run is enough and none can miss:
- the dist replay: the release's own code, which node loads in the replay folder, attacks that
  folder itself the moment it runs (as whoever node runs as), before root is done with it;
- the extension's replay (no code of the user's runs in it: a dist-only release's own runner does
  not import): a process of the user's attacks its folder from its IN_CREATE, as soon as its files
  exist (reported: the folder may be gone first).

Those two attack after root has filled the folder. The last test races root while it would still be
making it: a process of the user's swaps the dist folder's `pkg` from its IN_CREATE, the moment the
user may (with a folder made as root and chowned, that is while root walks it: 2 of 3 checks gave
root's files away), repeated runs(3) times."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import time
from pathlib import Path

import pytest
from hostile_support import Attacker, Inotify, spin
from plugin import runs
from realsenpi import DIST_ONLY, real_dir, senpi_guard

from senpi_guard.demo import sample
from senpi_guard.prove import sandbox

IN_CREATE = 0x100
IMPORTED = "package/dist/core/extensions/builtin/claude-sdk-oauth/tools.js"  # (the dist target imports it)
# what the user adds to that module: note who runs it, then swap the replay folder it runs in (where
# to log and which of root's files to aim at: in the test's WHERE file, its path written in the code,
# as root's environment does not reach the code a replay runs)
ATTACK = """\
import * as sgFs from "node:fs";
const sgWhere = (() => { try { return JSON.parse(sgFs.readFileSync(WHERE, "utf8")); } catch { return null; } })();
if (sgWhere) {
    const sgLog = (name, line) => sgFs.appendFileSync(`${sgWhere.attackDir}/${name}`, line + "\\n");
    const sgFolder = process.argv[1].split("/").slice(0, -1).join("/");
    const sgName = sgFolder.split("/").at(-1);
    sgLog("ran", `${process.getuid()} ${sgName}`);
    try {
        sgFs.renameSync(`${sgFolder}/pkg`, `${sgFolder}/pkg.x`);
        sgFs.symlinkSync(sgWhere.victimDir, `${sgFolder}/pkg`);
        for (const name of sgFs.readdirSync(sgFolder)) {
            if (sgFs.lstatSync(`${sgFolder}/${name}`).isFile()) {
                sgFs.symlinkSync(sgWhere.victimFile, `${sgFolder}/.${name}.link`);
                sgFs.renameSync(`${sgFolder}/.${name}.link`, `${sgFolder}/${name}`);
            }
        }
        sgLog("attacks", `landed ${sgName}`);
    } catch (error) {
        sgLog("attacks", `missed ${sgName} ${error.code}`);
    }
}
"""


@pytest.fixture(scope="module")
def attacking_tarball(tmp_path_factory) -> Path:
    """The dist-only 2026.8.9 release, its prompt-bridge's tools.js attacking the replay folder
    (told where by `where(tarball)`, once a test writes it)."""
    out = tmp_path_factory.mktemp("attacking") / "attacking.tgz"
    attack = ATTACK.replace("WHERE", json.dumps(str(where(out))), 1)
    with (
        tarfile.open(real_dir() / DIST_ONLY["2026.8.9"], "r:gz") as source,
        tarfile.open(out, "w:gz", compresslevel=1) as archive,
    ):
        for member in source:
            data = source.extractfile(member) if member.isreg() else None
            if member.name == IMPORTED:
                code = attack.encode() + data.read()
                member.size, data = len(code), io.BytesIO(code)
            archive.addfile(member, data)
    return out


def where(tarball: Path) -> Path:
    return tarball.with_name("where.json")


def _swap_files(folder: Path, victim_file: Path) -> bool:
    try:
        names = [n for n in os.listdir(folder) if os.path.isfile(folder / n) and not os.path.islink(folder / n)]
    except OSError:
        return False
    for name in names:
        os.symlink(victim_file, folder / f".{name}.link")
        os.rename(folder / f".{name}.link", folder / name)
    return bool(names)


def _as_soon_as_there(folder: Path, victim_file: Path) -> bool:
    """Swap the folder's files the moment there are any (until it is gone, or 30 s)."""
    hit: list[bool] = []

    def step() -> bool:
        hit.append(_swap_files(folder, victim_file))
        return hit[-1] or not folder.exists()

    spin(time.monotonic() + 30, step)
    return bool(hit) and hit[-1]


def _attack(tmp: Path, attacks: Path, victim_file: Path):
    """As the user: each extension replay folder attacked as soon as its files are there."""

    def attack(ready) -> None:
        watcher = Inotify()
        watcher.watch(tmp, IN_CREATE)
        ready()
        while True:
            for name in watcher.events():
                if name.startswith(sandbox.PREFIX) and "-ext-" in name:
                    landed = _as_soon_as_there(tmp / name, victim_file)
                    with open(attacks, "a") as log:
                        log.write(f"{'ext-landed' if landed else 'ext-missed'} {name}\n")

    return attack


def test_the_user_cannot_redirect_roots_hands_through_a_replay_folder(
    attacker, users_dir, open_dir, attacking_tarball, tmp_path
):
    tarball = users_dir / "evil.tgz"
    tarball.write_bytes(attacking_tarball.read_bytes())
    os.chown(tarball, attacker.pw_uid, attacker.pw_gid)
    victim_dir = tmp_path / "victimdir"  # (root's, in root's 0700 pytest folder)
    victim_dir.mkdir()
    (victim_dir / "secret").write_bytes(b"root's")
    victim_file = tmp_path / "victim-file"
    victim_file.write_bytes(b"root's")
    attack_dir = users_dir / "attack"
    attack_dir.mkdir()
    for name in ("ran", "attacks"):
        (attack_dir / name).touch()
    for path in (attack_dir, *attack_dir.iterdir()):
        os.chown(path, attacker.pw_uid, attacker.pw_gid)
    tmp = open_dir / "tmp"  # (root's, sticky, world-writable as /tmp, and this test's alone)
    tmp.mkdir()
    tmp.chmod(0o1777)
    env = {"TMPDIR": str(tmp)}
    aim = {"attackDir": str(attack_dir), "victimDir": str(victim_dir), "victimFile": str(victim_file)}
    where(attacking_tarball).write_text(json.dumps(aim))
    with Attacker(attacker, _attack(tmp, attack_dir / "attacks", victim_file)):
        done = senpi_guard("check", tarball, env=env)
    ran = [line.split() for line in (attack_dir / "ran").read_text().splitlines()]
    attacks = (attack_dir / "attacks").read_text().split("\n")
    given = [p for p in (victim_dir, victim_dir / "secret", victim_file) if p.stat().st_uid != 0]
    print(f"replay folders: the release's code ran in (uid, folder) {ran}; attacks {attacks}; exit {done.returncode}")
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    assert not given, f"root's files were given to the user: {given}"
    assert (victim_dir / "secret").read_bytes() == victim_file.read_bytes() == b"root's"
    assert {p.name for p in tmp.iterdir()} == set(), "a replay folder was left behind"
    assert ran, f"no dist replay ran the release's code (nothing was attacked): {done.stdout}{done.stderr}"
    assert {int(uid) for uid, _ in ran} == {attacker.pw_uid}, f"the user's code ran as uids {ran}"
    assert all(f"landed {folder}" in attacks for _, folder in ran), f"a replay folder was not attacked: {attacks}"


LINKED = 3000


def _swap_pkg(folder: Path, victim_dir: Path) -> str | None:
    """(As the user.) `folder/pkg` renamed away and a link to root's folder put in its place: what
    happened, None while the user cannot yet (the folder is not theirs to change)."""
    try:
        os.rename(folder / "pkg", folder / "pkg.x")
    except PermissionError:
        return None
    except FileNotFoundError:
        return None if folder.exists() else "gone"
    os.symlink(victim_dir, folder / "pkg")
    return "swapped"


def test_no_replay_folder_is_walked_by_root_once_the_user_can_change_it(attacker, users_dir, open_dir, tmp_path):
    """The dist replay of a user's release, attacked by a process of the user's from the folder's
    IN_CREATE: it renames the folder's `pkg` away the moment it may, and puts a link to a folder of
    root's laid out as the package is. Root must do nothing by path inside the folder (nothing is
    chowned there) once the user can change it: none of root's files may change owner."""
    src = tmp_path / "src"
    sample.write_sample_package(src, 2, fillers=0)
    provider = src / "dist/core/extensions/builtin/claude-sdk-oauth"  # (a real folder of the mirror)
    for index in range(LINKED):  # (each a link in the mirror: a walk over it takes a while)
        (provider / f"extra-{index:05d}.txt").write_text("x")
    tarball = users_dir / "release.tgz"
    tarball.write_bytes(sample.npm_pack(src, tmp_path / "pack").read_bytes())
    os.chown(tarball, attacker.pw_uid, attacker.pw_gid)
    victim_dir = tmp_path / "victim"  # (root's, in root's 0700 pytest folder: the names the mirror has)
    shutil.copytree(src, victim_dir, symlinks=True)
    tmp = open_dir / "tmp"  # (root's, sticky, world-writable as /tmp, and this test's alone)
    tmp.mkdir()
    tmp.chmod(0o1777)
    outcome = users_dir / "outcome"
    tally = []
    for _attempt in range(runs(3)):
        outcome.write_text("")
        os.chown(outcome, attacker.pw_uid, attacker.pw_gid)

        def attack(ready) -> None:
            watcher = Inotify()
            watcher.watch(tmp, IN_CREATE)
            ready()
            while True:
                for name in watcher.events():
                    if name.startswith(sandbox.PREFIX) and "-ext-" not in name:
                        happened: list[str | None] = [None]

                        def step(folder=tmp / name, happened=happened) -> bool:
                            happened[0] = _swap_pkg(folder, victim_dir)
                            return happened[0] is not None

                        spin(time.monotonic() + 30, step)
                        with open(outcome, "a") as log:
                            log.write(f"{happened[0] or 'never reached'}\n")

        with Attacker(attacker, attack):
            done = senpi_guard("check", tarball, env={"TMPDIR": str(tmp)})
        given = [p for p in [victim_dir, *victim_dir.rglob("*")] if p.lstat().st_uid != 0]
        attacks = outcome.read_text().split()
        tally.append((len(given), done.returncode, attacks))
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        for path in given:
            os.chown(path, 0, 0, follow_symlinks=False)
    print(f"replay-folder walk: {len(tally)} checks, (root's entries given away, exit, attacks): {tally}")
    assert all(given == 0 for given, _, _ in tally), tally
    assert all("swapped" in attacks for _, _, attacks in tally), f"the attack never landed: {tally}"
