"""The node harness client (prove/verify.run_script) reads the report after the job's reportTag:
what the code under test prints on stdout, before or after the report, is not taken for it."""

import shutil
from pathlib import Path

import pytest

from senpi_guard.errors import FatalError
from senpi_guard.prove import verify
from senpi_guard.prove.sandbox import Sandbox

READ_JOB = 'import { readFileSync } from "node:fs";\nconst job = JSON.parse(readFileSync(0, "utf8"));\n'


def run(tmp_path: Path, body: str) -> dict:
    node = shutil.which("node") or pytest.skip("node is not installed")
    script = tmp_path / "script.mjs"
    script.write_text(READ_JOB + body)
    return verify.run_script(node, script, {"x": 1}, 10, None, Sandbox(tmp_path), "the test harness")


def test_output_around_the_report_is_ignored(tmp_path):
    report = run(
        tmp_path,
        'process.stdout.write("no newline at import");\nconsole.log("{\\"a\\": 2}");\n'
        "const report = JSON.stringify({ results: [job.x] });\n"
        'process.stdout.write("\\n" + job.reportTag + report + "\\n");\n'
        'console.log("printed after the report");\n',
    )
    assert report == {"results": [1]}


def test_no_report_says_what_the_code_printed(tmp_path):
    with pytest.raises(FatalError) as caught:
        run(tmp_path, 'console.log("hello from the target");\nprocess.exit(0);\n')
    message = str(caught.value)
    assert "ended without its report (exit 0)" in message and "hello from the target" in message


def test_no_report_names_the_last_error_line(tmp_path):
    with pytest.raises(FatalError, match=r"ended without its report \(exit 1\): Error: boom"):
        run(tmp_path, 'throw new Error("boom");\n')
