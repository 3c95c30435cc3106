#!/usr/bin/env bash
# The whole test suite (README "Run the tests"): set-up, then mypy, pytest and conformance side by side (all three always run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-packages.sh
bash scripts/bootstrap.sh
# mypy over the five packages (pyproject.toml [tool.mypy]) and the conformance cases run beside pytest:
# much of the suite waits (daemons at the real clock, timeouts, servers), and they fill that time. Their
# output is shown once pytest is done; each of the three runs whatever the others do, and any failing
# fails the run.
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
.venv/bin/python scripts/typecheck.py >"$logs/mypy" 2>&1 &
typecheck_pid=$!
.venv/bin/python -m conformance >"$logs/conformance" 2>&1 &
conformance_pid=$!
# pytest-xdist workers, each taking whole files (module fixtures such as a Dovecot or a PostgreSQL server
# start once per file). More workers than CI's two cores, for the same reason (docs/decisions.md, "suite time").
# Arguments, if any, go to pytest (a selection, for a quick run: scripts/test-loop.sh passes them on).
.venv/bin/python -m pytest -n "${FOLD_TEST_WORKERS:-3}" --dist loadfile --no-loadscope-reorder "$@" \
    && pytest_status=0 || pytest_status=$?
wait "$typecheck_pid" && typecheck_status=0 || typecheck_status=$?
wait "$conformance_pid" && conformance_status=0 || conformance_status=$?
echo "--- mypy"
cat "$logs/mypy"
echo "--- conformance"
cat "$logs/conformance"
verdict() { if [ "$1" -eq 0 ]; then echo "ok"; else echo "failed (exit $1)"; fi; }
echo "mypy: $(verdict "$typecheck_status"); pytest: $(verdict "$pytest_status"); conformance: $(verdict "$conformance_status")"
[ "$typecheck_status" -eq 0 ] && [ "$pytest_status" -eq 0 ] && [ "$conformance_status" -eq 0 ]
