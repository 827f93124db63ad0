#!/usr/bin/env bash
# Everything the tests need, from this checkout alone, then the tests.
# Needs python3 (>= 3.11), node (>= 18) and npm; installs the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet ".[test]"    # a real (non-editable) install
# Real package managers for the discovery and update tests (from the npm registry).
if [ ! -x .ci/tools/node_modules/.bin/pnpm ] || [ ! -x .ci/tools/node_modules/.bin/bun ] \
   || [ ! -x .ci/tools/node_modules/.bin/yarn ]; then
    npm install --prefix .ci/tools --no-audit --no-fund --loglevel=error pnpm@12 bun@1 yarn@1
fi
.venv/bin/ruff check src tests bench
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
