#!/usr/bin/env bash
# Shared set-up for the README's two commands: a venv in .venv with Fold and
# its test extras and the llm extra installed. Idempotent; safe to run on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test,llm]'
# Fold's own modules as bytecode: every foldctl process imports them, and where PYTHONDONTWRITEBYTECODE is
# set (it is on some CI machines) Python would otherwise compile them anew in each process.
.venv/bin/python -m compileall -q -j 0 fold_core adapters consumers agents host conformance >/dev/null
