"""Root writing into folders a second, real user controls (issue 46, item 3): `export`, the metrics
textfile, `uninstall`'s removal of empty folders and `audit --plot`. Each attack is what that user
can do from their own folder: a link, a FIFO, a held lock, a folder swapped at the moment root
makes it (woken by inotify)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from conftest import run_cli
from hostile_support import IN_CREATE, Attacker, Inotify, exchange
from plugin import runs


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
