#!/usr/bin/env bash
# The whole test suite (README "Run the tests"): set-up, pytest, conformance.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-packages.sh
bash scripts/bootstrap.sh
# mypy over the five packages (pyproject.toml [tool.mypy]): a type error fails the run like a test.
.venv/bin/python scripts/typecheck.py
# Two workers, each taking whole files (module fixtures such as a Dovecot or a
# PostgreSQL server start once per file): CI has two cores.
.venv/bin/python -m pytest -n "${FOLD_TEST_WORKERS:-2}" --dist loadfile
.venv/bin/python -m conformance
