#!/usr/bin/env bash
# Fold's main job (README "Run Fold"): set-up, then the full pipeline — adapters,
# host cycles, editor, kernel, store, consumers, overview — over the bundled
# sample channels (python -m fold_host.demo; --out DIR to choose where).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-packages.sh
bash scripts/bootstrap.sh
exec .venv/bin/python -m fold_host.demo "$@"
