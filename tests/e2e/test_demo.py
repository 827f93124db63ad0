import re

from conftest import run_console


def test_demo_runs_on_a_fresh_machine_and_cleans_up(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = run_console("demo", env={"TMPDIR": str(scratch)})
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "status: unpatched" in out and "status: patched" in out
    rows = dict(re.findall(r"(incident-\d+)\s+([\d,]+)\s+[\d,]+", out))
    assert set(rows) == {"incident-3", "incident-21", "incident-70"}
    assert int(rows["incident-70"].replace(",", "")) > 1_700_000
    assert re.search(r"incident-70\s+1,789,022\s+68,645\s+96\.2%", out)
    prose = " ".join(out.split())  # long steps are wrapped to 100 columns
    assert max(len(line) for line in out.splitlines() if "/" not in line) <= 100
    assert re.search(r"audit of a sample 30-step session \(60 assistant turns", prose)
    assert re.search(r"lost a distinct directive: [1-9]\d* without the patch .*, 0 with it", prose)
    assert "restored from the backup" in prose
    assert list(scratch.iterdir()) == []  # the throw-away prefix is gone
