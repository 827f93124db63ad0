"""`audit --root` on each dist-only real build (its dependencies removed, so parts of senpi's code do
not import): sessions are audited with what imports, each part that does not says why, and the audit
is never lost whole (2026.8.1's delta serialiser imports a dependency that build lacks: the audit
ended with "Node.js v24.22.3", node's real error line lost past its stack)."""

from __future__ import annotations

import json

import pytest
from realsenpi import DIST_ONLY, senpi_guard

from senpi_guard.demo import sample_session

pytestmark = pytest.mark.real


@pytest.mark.parametrize("version", list(DIST_ONLY))
def test_every_dist_only_build_audits_a_session_with_what_imports(unpacked, version, tmp_path):
    session = sample_session.write_sample_session(tmp_path / "s.jsonl", turns=3, directive_bytes=300)
    done = senpi_guard("audit", "--root", unpacked[version], session, "--json")
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)["sessions"]
    assert "error" not in report and report["turns"], report
    assert "did not import" in done.stderr  # (why senpi's own code is not all used: said, never silent)
    if version == "2026.8.1":
        assert "senpi's delta serialiser did not import" in done.stderr, done.stderr
