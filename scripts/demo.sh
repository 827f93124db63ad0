#!/usr/bin/env bash
# Install senpi-guard into .venv from this checkout and run the demo (needs python3, node, npm).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet .
.venv/bin/senpi-guard demo "$@"
