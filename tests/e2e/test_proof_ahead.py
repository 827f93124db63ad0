"""An apply's extension proof runs beside the dist layer's (layers/extension_ahead): node replays
both at once, the extension's proof runs once, an apply with nothing to prove begins none, and a
stop (SIGTERM, ^C) while it runs leaves no node and no replay folder behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import harness_processes, run_cli, wait_for

from senpi_guard.demo.sample import SHAPE_DIRS
from senpi_guard.prove import sandbox

RUNNER = Path("dist/core/extensions/runner.js")  # loaded by the extension's proof alone
BRIDGE = Path("dist/core/extensions/builtin") / SHAPE_DIRS[2] / "prompt-bridge.js"  # by the dist layer's
WAIT_S = 40  # how long the dist layer's replay waits for the extension's to begin (a failure's cost)
STOPPED_WITHIN_S = 30  # from the stop to the exit, on a busy machine (the replay's timeout is 60 s)


def _plant(path: Path, code: str) -> None:
    path.write_text(code + path.read_text())


def _notes(folder: Path) -> Path:
    """A folder node can write to, whoever it runs as (root replays as the code's owner)."""
    folder.mkdir()
    folder.chmod(0o1777)
    return folder


def _runner_notes(pkg: Path, notes: Path, spin: bool = False) -> None:
    """senpi's runner notes each load of it (by the extension's proof), and may then spin."""
    spin_code = "{ const until = Date.now() + 120000; while (Date.now() < until); }\n" if spin else ""
    _plant(
        pkg / RUNNER,
        'import { appendFileSync as noteLoad } from "node:fs";\n'
        f"noteLoad({json.dumps(str(notes / 'runner'))}, `${{process.pid}}\\n`);\n" + spin_code,
    )


def test_the_extension_proof_runs_while_the_dist_layer_replays(npm_install, capsys, tmp_path):
    """The dist layer's replay waits (up to WAIT_S) for the extension's proof to have loaded senpi's
    runner: one after the other, it would wait the whole time (the extension's proof began after)."""
    pkg = npm_install(2)
    notes = _notes(tmp_path / "notes")
    _runner_notes(pkg, notes)
    _plant(
        pkg / BRIDGE,
        'import { existsSync as seen, appendFileSync as note } from "node:fs";\n'
        f"{{ const until = Date.now() + {WAIT_S * 1000};\n"
        f"  while (!seen({json.dumps(str(notes / 'runner'))}) && Date.now() < until);\n"
        f"  note({json.dumps(str(notes / 'bridge'))}, seen({json.dumps(str(notes / 'runner'))}) "
        '? "after the runner\\n" : "alone\\n"); }\n',
    )
    code, out, err = run_cli(capsys, "apply", "--root", pkg, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert [layer["state"] for layer in doc["extension"]] == ["installed"]
    loads = (notes / "bridge").read_text().splitlines()
    assert loads and set(loads) == {"after the runner"}, loads
    assert len((notes / "runner").read_text().splitlines()) == 1  # (its proof ran once, not again)


def test_an_apply_with_the_extension_in_place_begins_no_proof(npm_install, capsys, tmp_path):
    pkg = npm_install(2)
    notes = _notes(tmp_path / "notes")
    assert run_cli(capsys, "apply", "--root", pkg)[0] == 0
    _runner_notes(pkg, notes)  # (after the first apply: what a second one would load)
    code, _out, err = run_cli(capsys, "apply", "--root", pkg)
    assert code == 0, err
    assert not (notes / "runner").exists()


@pytest.mark.parametrize(("stop", "exit_code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stop_while_the_proof_runs_ahead_leaves_no_node_and_no_folder(npm_install, tmp_path, stop, exit_code):
    pkg = npm_install(2)
    notes = _notes(tmp_path / "notes")
    _runner_notes(pkg, notes, spin=True)  # (the extension's proof would run on for two minutes)
    scratch = _notes(tmp_path / "tmp")  # (the shared temp folder a replay as another user uses)
    env = {**os.environ, "TMPDIR": str(scratch)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "senpi_guard", "apply", "--root", str(pkg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        node = int(wait_for(lambda: (notes / "runner").exists() and (notes / "runner").read_text(), 60, "the proof"))
        proc.send_signal(stop)
        # (node is killed within ~0.1 s of the stop; left to run, the replay's own 60 s timeout ends it)
        _out, err = proc.communicate(timeout=STOPPED_WITHIN_S)
    finally:
        proc.kill()
    assert proc.returncode == exit_code and "Traceback" not in err, err
    assert not harness_processes(proc.pid)
    with pytest.raises(ProcessLookupError):
        os.kill(node, 0)
    state = Path(os.environ["XDG_STATE_HOME"]) / "senpi-guard" / "verify"
    left = [
        p for base in (scratch, state) if base.is_dir() for p in base.iterdir() if p.name.startswith(sandbox.PREFIX)
    ]
    assert left == []
