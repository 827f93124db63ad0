"""A user's `<prefix>/bin/node` link swapped between root's check of whose node it is and the run
(hostile review of issue 46, finding 1): the file run is the file judged (io/runas.pin), so the
user's own script never runs as root, neither for `node --version` (prove/nodes.version_of) nor
for a replay (prove/sandbox.Sandbox.judged)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hostile_support import Attacker, exchange
from plugin import runs

from senpi_guard.prove import nodes
from senpi_guard.prove.sandbox import Sandbox

# the attacker's "node": says who ran it, as a version line
EVIL = '#!/bin/sh\necho "v24.0.0-uid$(id -u)"\n'


def _attacker_links(users_dir: Path, uid: int, gid: int, root_file: str) -> tuple[Path, Path, Path]:
    """In the attacker's prefix: bin/node -> root_file, bin/.other -> the attacker's script."""
    evil = users_dir / "evil.sh"
    evil.write_text(EVIL)
    evil.chmod(0o755)
    bin_dir = users_dir / "p" / "bin"
    bin_dir.mkdir(parents=True)
    link, other = bin_dir / "node", bin_dir / ".other"
    link.symlink_to(root_file)
    other.symlink_to(evil)
    for path in (evil, users_dir / "p", bin_dir, link, other):
        os.chown(path, uid, gid, follow_symlinks=False)
    return link, other, evil


def test_node_version_never_runs_a_swapped_in_script_as_root(attacker, users_dir):
    link, other, _ = _attacker_links(users_dir, attacker.pw_uid, attacker.pw_gid, "/bin/true")

    def attack(ready) -> None:
        ready()
        while True:  # (killed when the block ends)
            exchange(link, other)

    seen: list[str] = []
    with Attacker(attacker, attack):
        for _ in range(runs(400)):
            seen.append(nodes.version_of.__wrapped__(str(link)))  # (uncached: each call checks and runs)
            if "v24.0.0-uid0" in seen:
                break
    assert "v24.0.0-uid0" not in seen, "the attacker's script ran as root"
    assert f"v24.0.0-uid{attacker.pw_uid}" in seen, "the attacker's script never ran: the race was not exercised"


def test_a_replay_runs_the_node_judged_not_the_one_linked_later(attacker, users_dir, tmp_path):
    # a node only root can read: the replay runs it as root (nobody cannot), as judged
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    root_node = private / "node"
    root_node.write_text('#!/bin/sh\necho "judged-$(id -u)"\n')
    root_node.chmod(0o700)
    link, other, _ = _attacker_links(users_dir, attacker.pw_uid, attacker.pw_gid, str(root_node))
    box = Sandbox.judged(tmp_path / "verify", None, str(link), allow_foreign_root=False)
    assert box.owner is None  # (root: as judged, over root's file alone)
    exchange(link, other)  # the attacker's swap, after the judgement, before node runs
    done = subprocess.run(
        [str(link)], capture_output=True, text=True, timeout=30, check=False, **box.popen_kwargs(tmp_path)
    )
    assert done.stdout.strip() == "judged-0", f"ran {done.stdout.strip()!r}: not the node judged"
