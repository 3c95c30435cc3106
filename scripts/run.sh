#!/usr/bin/env bash
# Fold's main job (README "Run Fold"). Until the host exists, it plays the
# US-03 story of seed 000 §3 through the kernel and prints the state document.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python -m fold_core.story examples/us03 "$@"
