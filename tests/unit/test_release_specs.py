"""The specs `check` fetches, made explicit (issue 46, row 12): a registry name, alone or with a
version, a range or a dist-tag, and `npm:` aliases of those; every other form npm accepts (git,
GitHub shorthand with any committish, a URL, a file) is refused before npm is asked."""

from __future__ import annotations

import pytest

from senpi_guard.commands.release import spec_refusal

ACCEPTED = [
    "@code-yeongyu/senpi",
    "@code-yeongyu/senpi@2026.8.22-2",
    "@code-yeongyu/senpi@^2026.8",
    "@code-yeongyu/senpi@~2026.8.1",
    "@code-yeongyu/senpi@>=1.0.0 <2 || 3.x",
    "@code-yeongyu/senpi@latest",
    "senpi-fork@1.0.0",
    "x@npm:@code-yeongyu/senpi@2026.8.22-2",
]
REFUSED = [
    "owner/repo#semver:^1.0",  # (npm runs `git ls-remote` for it)
    "x@owner/repo#semver:^1.0",
    "owner/repo#main:sub",
    "x@npm:owner/repo#semver:^1",
    "https://example.invalid/senpi-1.0.0.tgz",
    "x@https://example.invalid/senpi-1.0.0.tgz",
    "x@senpi-1.0.0.tgz",
    "x@1.0.0#frag",
    "x@foo:bar",
    "npm:x@1",
]


@pytest.mark.parametrize("spec", ACCEPTED)
def test_a_registry_spec_is_fetched(spec):
    assert spec_refusal(spec) is None


@pytest.mark.parametrize("spec", REFUSED)
def test_any_other_spec_is_refused_in_one_line(spec):
    why = spec_refusal(spec)
    assert why is not None and why.startswith(f"{spec}: ") and "\n" not in why and "pass" in why
