import re

from conftest import run_console


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
    # where it costs bytes, and why: upstream's keep-last keeps one copy and drops the variant
    kept = set(re.findall(r"2026\.8\.5\s+(incident-\d+)\s+[\d,]+\s+[\d,]+\s+\+[\d.]+%\s+1 -> 2 of 2", out))
    assert set(kept) == {"incident-3", "incident-21", "incident-70"}
    prose = " ".join(out.split())  # long steps are wrapped to 100 columns
    assert "senpi-guard sends a little more" in prose and "prompt cache keeps hitting" in prose
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
