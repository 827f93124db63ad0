import re

from conftest import run_console


def test_demo_runs_on_a_fresh_machine_and_cleans_up(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = run_console("demo", env={"TMPDIR": str(scratch)})
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "status: unpatched" in out and "status: patched" in out
    # one baseline: "as installed" is senpi with its own keep-last dedupe, which drops the variant
    rows = dict(re.findall(r"(incident-\d+)\s+([\d,]+)\s+[\d,]+\s+[+-][\d.]+%\s+1 -> 2 of 2", out))
    assert set(rows) == {"incident-3", "incident-21", "incident-70"}
    assert re.search(r"incident-70\s+42,632\s+68,645\s+\+61\.0%", out)
    assert "saved" not in out.split("5. status")[0].split("4. ")[1]  # no second meaning of "unpatched"
    prose = " ".join(out.split())  # long steps are wrapped to 100 columns
    assert max(len(line) for line in out.splitlines() if "/" not in line) <= 100
    assert re.search(r"\d+ full re-sends: [\d,]+ bytes as installed -> [\d,]+ patched", prose)
    assert re.search(r"\d+ delta calls: [\d,]+ bytes, unchanged by the dist patch", prose)
    assert re.search(r"dropped a distinct directive: [1-9]\d* as installed, 0 patched", prose)
    assert re.search(r"payloadBytes matched the audit on (\d+) of \1 recorded calls", prose)
    assert "restored from the backup" in prose
    assert list(scratch.iterdir()) == []  # the throw-away prefix is gone
