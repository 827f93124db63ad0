import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import HANG_S, run_console, tree_entries


def test_demo_runs_on_a_fresh_machine_and_cleans_up(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = run_console("demo", env={"TMPDIR": str(scratch)})
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "status of 2026.8.1: unpatched; status of 2026.8.5: unpatched" in out
    assert "status of 2026.8.1: patched; status of 2026.8.5: patched" in out
    # where it saves: a senpi with no dedupe of its own re-sends every copy
    saved = dict(re.findall(r"2026\.8\.1\s+(incident-\d+)\s+[\d,]+\s+[\d,]+\s+(-[\d.]+)%\s+2 -> 2 of 2", out))
    assert set(saved) == {"incident-3", "incident-21", "incident-70"}
    assert re.search(r"2026\.8\.1\s+incident-70\s+1,789,022\s+68,645\s+-96\.2%", out)
    # beside upstream's keep-last no byte table: per call cache writes lead, then why, then the bytes
    assert not re.search(r"2026\.8\.5\s+incident-", out)
    prose = " ".join(out.split())  # long steps are wrapped to 100 columns
    keep_last = prose[prose.index("On 2026.8.5 (2026.8.4-2+)") :]
    writes = dict(re.findall(r"(incident-\d+) \(\d+ calls\): ([\d,]+ -> [\d,]+) cache-write tokens", keep_last))
    assert set(writes) == {"incident-3", "incident-21", "incident-70"}
    fewer = {
        name
        for name, pair in writes.items()
        if int(pair.split(" -> ")[1].replace(",", "")) * 4 < int(pair.split(" -> ")[0].replace(",", ""))
    }
    assert fewer == {"incident-21", "incident-70"}  # the long sessions write the cache a quarter as much or less
    assert "an estimate on a sample session of each shape" in keep_last
    assert keep_last.index("cache-write tokens") < re.search(r"\d{1,3}(,\d{3})+ bytes", keep_last).start()
    # the short session is cheaper with keep-last, and the demo says so
    assert re.search(
        r"incident-3 \(4 calls\): [^;]*upstream's keep-last is cheaper for this shape: set upstream_dedupe = \"defer\"",
        keep_last,
    )
    assert re.search(
        r"one full re-send of incident-3 is larger \([\d,]+ -> [\d,]+ bytes\) because every distinct directive is kept",
        keep_last,
    )
    assert max(len(line) for line in out.splitlines() if "/" not in line) <= 100
    assert re.search(r"\d+ full re-sends: [\d,]+ bytes as installed -> [\d,]+ patched \(-[\d.]+%\)", prose)
    assert re.search(
        r"\d+ delta calls: [\d,]+ bytes, unchanged by the dist patch; [\d,]+ with the extension "
        r"layer \(-[\d.]+%\)",
        prose,
    )
    assert re.search(r"payloadBytes matched the audit on (\d+) of \1 recorded calls", prose)
    assert prose.count("restored from the backup") >= 2
    assert out.splitlines()[-2].startswith("Next: `senpi-guard status`")  # it ends with the next step
    assert list(scratch.iterdir()) == []  # the throw-away prefix is gone


def test_demo_keep_prints_the_audit_of_what_it_kept_and_that_command_runs_clean(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = run_console("demo", "--keep", env={"TMPDIR": str(scratch)})
    assert result.returncode == 0, result.stdout + result.stderr
    (kept,) = scratch.iterdir()
    lines = result.stdout.splitlines()
    assert str(kept) in lines  # (the folder, on a line of its own)
    (command,) = [line for line in lines if line.startswith("senpi-guard audit ")]
    assert "--root" in command and str(kept / "session.jsonl") in command
    # the command as printed, in a shell whose senpi-guard is this one
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "senpi-guard").is_file()
    path = os.pathsep.join([str(bin_dir), os.environ["PATH"]])
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=HANG_S, env={**os.environ, "PATH": path}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MISMATCH" not in done.stdout + done.stderr and "warning" not in (done.stdout + done.stderr).lower()
    assert done.stderr == "" and done.stdout.splitlines()[0].startswith("60 calls: ")
    shutil.rmtree(kept)


def test_demo_leaves_every_folder_of_home_untouched(tmp_path):
    """HOME set and no XDG variables (as on a fresh login): senpi-guard's cache and npm's cache and
    logs would default to ~/.cache and ~/.npm; the demo writes neither."""
    home, scratch = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    scratch.mkdir()
    (home / ".config").mkdir()  # (a folder of the user's own, empty: it stays empty)
    unset = ("npm_config_cache", "NPM_CONFIG_CACHE")
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_") and k not in unset}
    before = tree_entries(home)
    result = subprocess.run(
        [sys.executable, "-m", "senpi_guard", "demo"],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        env={**env, "HOME": str(home), "TMPDIR": str(scratch)},
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert tree_entries(home) == before, sorted(set(tree_entries(home)) - set(before))
    assert list(scratch.iterdir()) == []
