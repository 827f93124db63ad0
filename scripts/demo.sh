#!/usr/bin/env bash
# Install senpi-guard into .venv from this checkout and run the demo (needs python3, node, npm).
# The install is made again only when pyproject.toml, python or the package's files changed.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '==> %s\n' "$*"; }
stamp=$(
    {
        python3 -c 'import sys; print(sys.version)'
        find pyproject.toml src patches -type f ! -name '*.pyc' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
    } | sha256sum | cut -d' ' -f1
)
if [ -x .venv/bin/senpi-guard ] && [ "$(cat .venv/.senpi-guard-demo 2>/dev/null)" = "$stamp" ]; then
    step "senpi-guard in .venv is up to date (this checkout unchanged)"
else
    step "python venv in .venv"
    rm -f .venv/.senpi-guard-setup  # (scripts/test.sh's install is replaced: it sets itself up again)
    python3 -m venv .venv
    step "pip: install senpi-guard from this checkout"
    .venv/bin/python -m pip install --quiet .
    echo "$stamp" > .venv/.senpi-guard-demo
fi
step "senpi-guard demo (npm installs a sample senpi into a throw-away prefix)"
.venv/bin/senpi-guard demo "$@"
