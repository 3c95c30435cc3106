#!/usr/bin/env bash
# The README's test command, RUNS times in a row (default 5) as CI runs it: CI=true, its own worker count
# (FOLD_TEST_WORKERS, when set, is passed on).
#
#   bash scripts/test-loop.sh                  # 5 runs of the whole suite
#   bash scripts/test-loop.sh 3                # 3 runs
#   bash scripts/test-loop.sh 1 tests/unit/test_time_phrases.py   # a smoke run: pytest arguments after RUNS
#
# Each run's output goes to its own log (under FOLD_LOOP_OUT, default out/test-loop/<UTC time>/); after each
# run one line says its verdict: green or red, test.sh's own report (mypy, pytest and conformance), pytest's
# summary line and how long it took. The last line counts the green runs; the exit status is non-zero
# when any run was red. A flaky test shows as one red run among green ones: its log names it.
set -uo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
[ "$#" -gt 0 ] && shift
case "$runs" in
    '' | *[!0-9]* | 0) echo "usage: bash scripts/test-loop.sh [RUNS ≥ 1] [PYTEST ARGS...]" >&2; exit 2 ;;
esac
out="${FOLD_LOOP_OUT:-out/test-loop/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
export CI=true
echo "test loop: $runs run(s) of scripts/test.sh${*:+ $*} with CI=true on ${FOLD_TEST_WORKERS:-its default number of} workers; logs in $out"
green=0
for run in $(seq 1 "$runs"); do
    log="$out/run-$run.log"
    started=$(date +%s)
    bash scripts/test.sh "$@" >"$log" 2>&1
    status=$?
    seconds=$(( $(date +%s) - started ))
    report=$(grep -E '^mypy: .*; pytest: .*; conformance: ' "$log" | tail -n 1)
    # pytest's closing line, quiet ("47 passed in 8.61s") or framed ("==== 1 failed, 46 passed in 9.02s ====").
    summary=$(grep -E '^(=+ )?(([0-9]+ [a-z]+,? )+|no tests ran )in [0-9.]+s' "$log" | tail -n 1 | sed -E 's/^=+ //; s/ =+$//')
    if [ "$status" -eq 0 ]; then verdict=green; green=$((green + 1)); else verdict="red (exit $status)"; fi
    printf 'run %d/%d: %s — %s — %s — %dm%02ds — %s\n' "$run" "$runs" "$verdict" "${report:-no report (set-up failed?)}" \
        "${summary:-no pytest summary}" $((seconds / 60)) $((seconds % 60)) "$log"
done
echo "test loop: $green of $runs run(s) green"
[ "$green" -eq "$runs" ]
