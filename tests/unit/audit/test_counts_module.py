"""What `audit` counts in a text (directive spans, markers) is the patch's own module, named by
`audit_counts` in its patch.toml: the audit engine names no tag, marker or min_bytes."""

from __future__ import annotations

import re
from importlib import resources

import pytest
from conftest import HANG_S

from senpi_guard.errors import FatalError
from unit.core.test_schema import load_edited


def test_the_audit_engine_knows_nothing_of_directives():
    engine = resources.files("senpi_guard.audit").joinpath("audit.mjs").read_text("utf-8")
    for name in ("job.tags", "job.marker", "autoMinBytes", "<ultrawork-mode>", "{tag}"):
        assert name not in engine, f"audit.mjs names {name}"
    assert re.search(r"job\.counts \? await import", engine)  # (what it counts comes from the patch)


@pytest.mark.parametrize("name", ["../audit-counts.mjs", "audit-counts.js", "missing.mjs"])
def test_an_audit_counts_that_is_not_a_module_beside_the_checks_is_one_line(tmp_path, name):
    with pytest.raises(FatalError) as refused:
        load_edited(tmp_path, 'audit_counts = "audit-counts.mjs"', f'audit_counts = "{name}"')
    message = str(refused.value)
    assert "\n" not in message and "audit_counts" in message and name in message, message


def test_an_audit_node_that_ends_early_is_named_by_its_error_line_past_its_stack():
    """node prints its error line first, then up to ten stack lines and its version: the error line is
    what says why (it was lost past an eight-line tail: "ended early (exit 1, …): Node.js v24")."""
    import shutil

    from senpi_guard.audit.server import NodeServer

    node = shutil.which("node")
    assert node is not None
    deep = "const f = (n) => { if (n === 0) throw new Error('the real reason'); f(n - 1); }; f(30);"
    script = f"process.stdin.once('data', () => {{ {deep} }});"
    server = NodeServer([node, "-e", script], {}, timeout=HANG_S, where="here")
    try:
        with pytest.raises(FatalError) as ended:
            server.reply()  # (the job line reaches node, which throws from deep in a stack)
    finally:
        server.close(ok=False)
    assert "Error: the real reason" in str(ended.value) and "exit 1" in str(ended.value), ended.value
