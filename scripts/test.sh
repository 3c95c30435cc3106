#!/usr/bin/env bash
# The whole test suite (README "Run the tests"): set-up, pytest, conformance.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-packages.sh
bash scripts/bootstrap.sh
.venv/bin/python -m pytest
.venv/bin/python -m conformance
