#!/usr/bin/env bash
# Install senpi-guard into .venv from this checkout and run the demo (needs python3, node, npm).
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '==> %s\n' "$*"; }
step "python venv in .venv"
python3 -m venv .venv
step "pip: install senpi-guard from this checkout"
.venv/bin/python -m pip install --quiet .
step "senpi-guard demo (npm installs a sample senpi into a throw-away prefix)"
.venv/bin/senpi-guard demo "$@"
