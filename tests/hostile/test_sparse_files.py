"""Root over sparse files a second real user owns (issue 46, row 8): a session line, or a .js file in
their senpi's dist/, of several GB that take no disk (truncate). Root's `audit` and `apply` run under
a 1.5 GB address-space limit (RLIMIT_AS): each refuses the file in one line naming it and the setting
that raises the cap, instead of reading it whole (a MemoryError under the limit; the OOM killer
without one)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

from conftest import SHAPE_REL, patched, write_user_config

from senpi_guard.demo import sample_session

LIMIT = 1536 << 20  # 1.5 GB of address space for root's senpi-guard (and what it starts)
SPARSE = 6 << 30  # 6 GiB, on no disk
HANG = 300


def give(user, *paths: Path) -> None:
    for root in paths:
        for path in [root, *root.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)


def limited(*args: str | Path) -> tuple[int, str]:
    """senpi-guard as root under LIMIT."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

    done = subprocess.run(
        [sys.executable, "-m", "senpi_guard", *map(str, args)],
        capture_output=True,
        text=True,
        preexec_fn=cap,
        timeout=HANG,
    )
    return done.returncode, done.stdout + done.stderr


def test_a_sparse_session_line_is_refused_not_read_whole(attacker, users_dir):
    path = users_dir / "sessions" / "s.jsonl"
    path.parent.mkdir()
    sample_session.write_sample_session(path, turns=2, directive_bytes=300)
    with path.open("r+b") as out:
        out.truncate(path.stat().st_size + SPARSE)  # one last line of 6 GiB of NUL bytes
    give(attacker, users_dir)
    code, out = limited("audit", path, "--sample")
    assert "MemoryError" not in out and "unexpected" not in out, out
    assert code == 1 and f"could not audit {path}: {path}: line " in out, out
    assert "is longer than 134,217,728 bytes" in out and "session_line_max_bytes" in out, out


def test_a_sparse_js_in_a_users_dist_is_refused_not_read_whole(npm_install, attacker, open_dir):
    users = npm_install(2, prefix=open_dir / "user-prefix")
    sparse = users / Path(SHAPE_REL[2]).parent / "zz-sparse.js"
    with sparse.open("wb") as out:
        out.truncate(SPARSE)
    give(attacker, open_dir / "user-prefix")
    roots = npm_install(2)
    code, out = limited("apply", "--root", users, "--root", roots)
    assert "MemoryError" not in out and "unexpected" not in out, out
    named = [line for line in out.splitlines() if str(sparse) in line]
    assert code == 1 and named and "6,442,450,944 bytes" in named[0] and "dist_file_max_bytes" in named[0], out
    assert patched(roots / SHAPE_REL[2]) and not patched(users / SHAPE_REL[2]), out
    # (the agent dir both share still gets the extension, proven through root's install's runner)
    assert (Path(os.environ["SENPI_CODING_AGENT_DIR"]) / "extensions" / "senpi-guard-directive-dedupe.js").is_file()


def test_the_config_sets_both_caps(npm_install, isolated_dirs, tmp_path):
    """Lowered in the config (they are raised the same way), each cap is the one the refusal names."""
    write_user_config(isolated_dirs, "session_line_max_bytes = 2_000_000\ndist_file_max_bytes = 1_000_000\n")
    path = tmp_path / "s.jsonl"
    sample_session.write_sample_session(path, turns=2, directive_bytes=300)
    with path.open("ab") as out:
        out.write(b"x" * 3_000_000 + b"\n")
    code, out = limited("audit", path, "--sample")
    assert code == 1 and "is longer than 2,000,000 bytes" in out and "session_line_max_bytes" in out, out
    pkg = npm_install(2)
    (pkg / "dist" / "big.js").write_bytes(b"//" + b"x" * 1_500_000)
    code, out = limited("apply", "--root", pkg)
    assert code == 1 and "more than the 1,000,000 bytes" in out and "dist_file_max_bytes" in out, out
