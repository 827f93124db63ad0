"""Root writing into folders a second, real user controls (issue 46, item 3): `export`, the metrics
textfile, `uninstall`'s removal of empty folders and `audit --plot`. Each attack is what that user
can do from their own folder: a link, a FIFO, a held lock, a folder swapped at the moment root
makes it (woken by inotify)."""

from __future__ import annotations

import fcntl
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from hostile_support import IN_CREATE, Attacker, Inotify, exchange
from plugin import runs

from senpi_guard.demo import sample, sample_session


def _roots_only(open_dir: Path) -> Path:
    """A folder only root may enter, which no root write of the tests may touch."""
    folder = open_dir / "roots-only"
    folder.mkdir(mode=0o700)
    folder.chmod(0o700)
    return folder


def test_export_into_a_users_empty_folder_never_copies_its_setuid_or_setgid_bits(users_dir, attacker, capsys):
    dest = users_dir / "pkg"
    dest.mkdir()
    os.chown(dest, attacker.pw_uid, attacker.pw_gid)
    dest.chmod(0o6777)
    code, out, err = run_cli(capsys, "export", dest)
    assert code == 0, out + err
    mode = stat.S_IMODE(dest.stat().st_mode)
    assert mode & 0o7000 == 0 and mode == 0o777, oct(mode)
    assert (dest / "package.json").is_file()


def test_export_whose_temp_folder_a_user_swaps_for_a_link_writes_nothing_there(users_dir, attacker, open_dir, capsys):
    """The user, who can write the parent of DIR, swaps root's temp folder for a link to a root-only
    folder the moment root makes it (inotify, one atomic exchange). Root must write nothing there
    and leave its mode as it is."""
    target = _roots_only(open_dir)
    tally = []
    for attempt in range(runs(8)):
        dest = users_dir / f"pkg{attempt}"
        dest.mkdir()
        os.chown(dest, attacker.pw_uid, attacker.pw_gid)
        dest.chmod(0o6777)  # (what the user's folder mode would give the target, were it copied)
        bait = users_dir / f"bait{attempt}"

        def attack(ready, dest=dest, bait=bait) -> None:
            os.symlink(target, bait)
            watcher = Inotify()
            watcher.watch(users_dir, IN_CREATE)
            ready()
            while True:
                made = [n for n in watcher.events() if n.startswith(f".{dest.name}.")]
                if made:
                    exchange(users_dir / made[0], bait)
                    return

        with Attacker(attacker, attack):
            code, out, err = run_cli(capsys, "export", dest)
        tally.append((code, bait.is_symlink()))
        assert "Traceback" not in out + err
        if code != 0:
            assert len((out + err).strip().splitlines()) == 1 and "senpi-guard: error:" in err, out + err
        assert list(target.iterdir()) == [], f"attempt {attempt}: root wrote into the link's target"
        assert stat.S_IMODE(target.stat().st_mode) == 0o700, f"attempt {attempt}: {oct(target.stat().st_mode)}"
    print(f"export temp swap: (exit, bait left a link): {tally}")


# ---- the metrics textfile, in a folder its owner controls (row 9) -------------------------------


HANG = 90  # seconds: only a hang reaches it (status of one sample install takes about one)


def _status_textfile(folder: Path, pkg: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Root's `status --textfile` (a fresh process, its memory held to 1 GiB: a read without bound
    ends in MemoryError there, not in the machine's OOM killer)."""

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run(
        [sys.executable, "-m", "senpi_guard", "status", "--root", str(pkg), "--textfile", str(folder)],
        capture_output=True,
        text=True,
        timeout=HANG,
        env={**os.environ, **env},
        preexec_fn=limited,
        check=False,
    )


def _sample(open_dir: Path) -> Path:
    pkg = open_dir / "pkg"
    sample.write_sample_package(pkg, 2, fillers=0)
    return pkg


def _written(done: subprocess.CompletedProcess[str], target: Path) -> None:
    assert done.returncode == 1 and done.stdout == f"metrics written to {target}\n", done.stdout + done.stderr
    assert not target.is_symlink() and stat.S_ISREG(target.lstat().st_mode)
    assert "senpi_guard_install_info" in target.read_text()


def test_a_fifo_in_place_of_the_textfile_does_not_hang_root(users_dir, attacker, open_dir):
    target = users_dir / "senpi_guard.prom"
    os.mkfifo(target)
    os.chown(target, attacker.pw_uid, attacker.pw_gid)
    _written(_status_textfile(users_dir, _sample(open_dir)), target)


def test_a_link_to_dev_zero_in_place_of_the_textfile_is_never_read(users_dir, attacker, open_dir):
    target = users_dir / "senpi_guard.prom"
    target.symlink_to("/dev/zero")
    os.lchown(target, attacker.pw_uid, attacker.pw_gid)
    _written(_status_textfile(users_dir, _sample(open_dir)), target)


def test_a_lock_the_folders_owner_holds_ends_roots_wait_with_one_line(users_dir, attacker, open_dir):
    pkg = _sample(open_dir)

    def hold(ready) -> None:
        fd = os.open(users_dir, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(fd, fcntl.LOCK_EX)
        ready()
        signal.pause()  # (held until the block ends: the attacker is killed then)

    with Attacker(attacker, hold):
        done = _status_textfile(users_dir, pkg, SENPI_GUARD_LOCK_TIMEOUT="1")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and "is locked by another process for over 1s" in lines[0], done
    assert list(users_dir.iterdir()) == []


# ---- uninstall's removal of the empty folders it made (row 10) -----------------------------------

IN_DELETE = 0x200


def test_uninstall_removes_no_empty_folder_where_a_users_swapped_link_points(
    users_dir, attacker, open_dir, capsys, monkeypatch
):
    """Root's apply made ~/.senpi/agent/extensions in the user's home (owned by the user, recorded);
    the moment root's uninstall takes the extension out, the user swaps ~/.senpi for a link to a
    root-only folder holding empty agent/extensions folders. Root must remove none of them."""
    home = users_dir
    monkeypatch.setenv("SENPI_CODING_AGENT_DIR", str(home / ".senpi" / "agent"))
    pkg = _sample(open_dir)
    code, out, err = run_cli(capsys, "apply", "--root", pkg)
    extensions = home / ".senpi" / "agent" / "extensions"
    assert code == 0 and (extensions / "senpi-guard-directive-dedupe.js").is_file(), out + err
    assert extensions.stat().st_uid == attacker.pw_uid
    decoy = _roots_only(open_dir)
    (decoy / "agent" / "extensions").mkdir(parents=True)
    bait = home / "bait"

    def attack(ready) -> None:
        os.symlink(decoy, bait)
        watcher = Inotify()
        watcher.watch(extensions, IN_DELETE)
        ready()
        watcher.events()  # (root took the extension out)
        exchange(home / ".senpi", bait)

    with Attacker(attacker, attack):
        code, out, err = run_cli(capsys, "uninstall")
    assert (home / ".senpi").is_symlink(), f"the attacker did not swap ~/.senpi: {out}{err}"
    assert (decoy / "agent" / "extensions").is_dir(), out + err
    assert code == 0 and f"left      {extensions} (" in out and "symbolic link owned by uid" in out, out + err


# ---- audit --plot FILE as root, in a folder another user controls -------------------------------


def _plot(capsys, open_dir: Path, image: Path) -> tuple[int, str, str]:
    session = sample_session.write_sample_session(open_dir / "s.jsonl", turns=6, directive_bytes=2_000)
    return run_cli(capsys, "audit", session, "--plot", image, "--root", _sample(open_dir))


def test_audit_plot_replaces_a_users_link_in_its_place_and_never_writes_through_it(
    users_dir, attacker, open_dir, capsys
):
    pytest.importorskip("matplotlib")
    roots_file = _roots_only(open_dir) / "secret.png"
    roots_file.write_bytes(b"root's own")
    image = users_dir / "bytes.png"
    image.symlink_to(roots_file)
    os.lchown(image, attacker.pw_uid, attacker.pw_gid)
    code, out, err = _plot(capsys, open_dir, image)
    assert code == 0, out + err
    assert roots_file.read_bytes() == b"root's own"
    assert not image.is_symlink() and image.read_bytes().startswith(b"\x89PNG")
    assert stat.S_IMODE(image.stat().st_mode) & 0o7000 == 0


def test_audit_plot_into_a_users_link_to_a_folder_is_refused_in_one_line(users_dir, attacker, open_dir, capsys):
    pytest.importorskip("matplotlib")
    roots = _roots_only(open_dir)
    plots = users_dir / "plots"
    plots.symlink_to(roots)
    os.lchown(plots, attacker.pw_uid, attacker.pw_gid)
    code, out, err = _plot(capsys, open_dir, plots / "bytes.svg")
    assert code == 1 and list(roots.iterdir()) == [], out + err
    said = [line for line in err.splitlines() if "could not audit" in line]
    assert len(said) == 1 and f"{plots} is a symbolic link owned by uid {attacker.pw_uid}" in said[0], err


# ---- a user's piConfig.configDir as root resolves it (row 4) -------------------------------------

EXTENSION = "senpi-guard-directive-dedupe.js"


@pytest.fixture
def attackers_home(attacker):
    """The user's own home, as the user database names it (made for the test when missing)."""
    home = Path(attacker.pw_dir)
    made = not home.exists()
    if made:
        home.mkdir(parents=True)
        os.chown(home, attacker.pw_uid, attacker.pw_gid)
    yield home
    if made:
        shutil.rmtree(home, ignore_errors=True)
    else:
        shutil.rmtree(home / ".senpi", ignore_errors=True)


def _senpi(pkg: Path, config_dir: str, owner=None) -> Path:
    """A senpi install whose package.json names `config_dir` as its piConfig.configDir (the user's
    own, folder and all, when `owner` is given)."""
    sample.write_sample_package(pkg, 2, fillers=0)
    manifest = json.loads((pkg / "package.json").read_text())
    manifest["piConfig"]["configDir"] = config_dir
    (pkg / "package.json").write_text(json.dumps(manifest))
    for path in [pkg.parent, pkg, *pkg.rglob("*")] if owner is not None else []:
        os.chown(path, owner.pw_uid, owner.pw_gid, follow_symlinks=False)
    return pkg


@pytest.mark.parametrize("aim", ["a root-only folder", "root's own agent dir"])
def test_a_users_config_dir_leading_out_of_their_home_is_refused_for_that_install_alone(
    attacker, attackers_home, open_dir, capsys, monkeypatch, aim
):
    roots_home = open_dir / "roots-home"
    roots_home.mkdir(mode=0o700)
    target = _roots_only(open_dir) if aim == "a root-only folder" else roots_home / ".senpi"
    monkeypatch.setenv("HOME", str(roots_home))
    monkeypatch.delenv("SENPI_CODING_AGENT_DIR")  # (senpi's default: <home>/<configDir>/agent)
    users = _senpi(open_dir / "users-prefix" / "senpi", os.path.relpath(target, attackers_home), attacker)
    roots = _senpi(open_dir / "roots-prefix" / "senpi", ".roots-senpi")  # (root's own: root's agent dir)
    code, out, err = run_cli(capsys, "apply", "--root", users, "--root", roots)
    assert not target.exists() or list(target.iterdir()) == [], f"root wrote in {aim}: {list(target.rglob('*'))}"
    assert not (attackers_home / ".senpi").exists()
    assert (roots_home / ".roots-senpi" / "agent" / "extensions" / EXTENSION).is_file(), out + err  # (processed)
    refused = [line for line in (out + err).splitlines() if "piConfig.configDir" in line]
    assert code == 1 and len(refused) == 1 and str(users) in refused[0], out + err
    assert f"{target / 'agent'}" in refused[0] and "outside the home folder" in refused[0], refused
