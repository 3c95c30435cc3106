#!/usr/bin/env bash
# The whole test suite (README "Run the tests"): set-up, pytest, conformance (both always run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-packages.sh
bash scripts/bootstrap.sh
# mypy over the five packages (pyproject.toml [tool.mypy]): a type error fails the run like a test.
.venv/bin/python scripts/typecheck.py
# Two workers, each taking whole files (module fixtures such as a Dovecot or a
# PostgreSQL server start once per file): CI has two cores.
# Conformance runs even when pytest failed, so one run reports both; the exit
# status is non-zero when either failed.
# Arguments, if any, go to pytest (a selection, for a quick run: scripts/test-loop.sh passes them on).
.venv/bin/python -m pytest -n "${FOLD_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@" && pytest_status=0 || pytest_status=$?
.venv/bin/python -m conformance && conformance_status=0 || conformance_status=$?
verdict() { if [ "$1" -eq 0 ]; then echo "ok"; else echo "failed (exit $1)"; fi; }
echo "pytest: $(verdict "$pytest_status"); conformance: $(verdict "$conformance_status")"
[ "$pytest_status" -eq 0 ] && [ "$conformance_status" -eq 0 ]
