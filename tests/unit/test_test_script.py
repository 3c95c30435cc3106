"""``scripts/test.sh`` runs mypy, pytest and the conformance cases whatever fails, reports each, and fails if any did.

The script runs for real in a copy of its folder, with the set-up scripts and
the venv's python stood in for by stubs that record what they were asked and
fail on demand.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

STUB_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/../../calls.log"
case "$1 $2" in
  scripts/typecheck.py*) echo "typecheck said this"; exit "${TYPECHECK_EXIT:-0}" ;;
esac
case "$2" in
  pytest) exit "${PYTEST_EXIT:-0}" ;;
  conformance) echo "conformance said this"; exit "${CONFORMANCE_EXIT:-0}" ;;
esac
"""


def run_script(tmp_path: Path, pytest_exit: int, conformance_exit: int,
               typecheck_exit: int = 0) -> tuple[subprocess.CompletedProcess, list]:
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "test.sh", tmp_path / "scripts" / "test.sh")
    for name in ("system-packages.sh", "bootstrap.sh"):
        (tmp_path / "scripts" / name).write_text("exit 0\n")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(STUB_PYTHON)
    python.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "PYTEST_EXIT": str(pytest_exit), "CONFORMANCE_EXIT": str(conformance_exit),
           "TYPECHECK_EXIT": str(typecheck_exit)}
    done = subprocess.run(["bash", str(tmp_path / "scripts" / "test.sh")], env=env, capture_output=True,
                          text=True, timeout=60)
    calls = (tmp_path / "calls.log").read_text().splitlines()
    return done, [call.split()[1] if call.startswith("-m ") else call.split()[0] for call in calls]


@pytest.mark.parametrize(("typecheck_exit", "pytest_exit", "conformance_exit", "report"), [
    (0, 0, 0, "mypy: ok; pytest: ok; conformance: ok"),
    (0, 1, 0, "mypy: ok; pytest: failed (exit 1); conformance: ok"),
    (0, 0, 2, "mypy: ok; pytest: ok; conformance: failed (exit 2)"),
    (0, 1, 1, "mypy: ok; pytest: failed (exit 1); conformance: failed (exit 1)"),
    (1, 0, 0, "mypy: failed (exit 1); pytest: ok; conformance: ok"),
])
def test_all_run_each_is_reported_and_any_failing_fails_the_script(tmp_path, typecheck_exit, pytest_exit,
                                                                    conformance_exit, report):
    done, ran = run_script(tmp_path, pytest_exit, conformance_exit, typecheck_exit)
    # mypy and conformance run beside pytest: the three may be recorded in any order, each once.
    assert sorted(ran) == ["conformance", "pytest", "scripts/typecheck.py"], ran
    assert done.stdout.splitlines()[-1] == report
    assert "typecheck said this" in done.stdout  # mypy's own output is shown, not only its verdict
    assert "conformance said this" in done.stdout
    assert (done.returncode == 0) == (typecheck_exit == pytest_exit == conformance_exit == 0), done


STUB_TEST_SH = """#!/usr/bin/env bash
# Stands in for scripts/test.sh: the Nth call exits with the Nth number of $EXITS; it records what it saw.
n=$(( $(cat "$(dirname "$0")/../count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$(dirname "$0")/../count"
echo "CI=$CI workers=$FOLD_TEST_WORKERS args=$*" >> "$(dirname "$0")/../seen.log"
code=$(echo "$EXITS" | cut -d' ' -f"$n")
if [ "$code" -eq 0 ]; then
  echo "12 passed in 3.21s"; echo "137 passed, 0 failed"; echo "mypy: ok; pytest: ok; conformance: ok"
else
  echo "=========== 1 failed, 11 passed in 3.50s ==========="
  echo "mypy: ok; pytest: failed (exit 1); conformance: ok"
fi
exit "$code"
"""


def run_loop(tmp_path: Path, exits: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "test-loop.sh", tmp_path / "scripts" / "test-loop.sh")
    (tmp_path / "scripts" / "test.sh").write_text(STUB_TEST_SH)
    env = {"PATH": "/usr/bin:/bin", "EXITS": exits, "FOLD_LOOP_OUT": str(tmp_path / "logs")}
    return subprocess.run(["bash", str(tmp_path / "scripts" / "test-loop.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_the_loop_runs_the_suite_n_times_as_ci_does_and_reports_each_run(tmp_path):
    done = run_loop(tmp_path, "0 1 0", "3", "tests/unit/test_time_phrases.py", "-q")
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done  # one red run makes the loop red
    assert lines[0].startswith("test loop: 3 run(s) of scripts/test.sh tests/unit/test_time_phrases.py -q")
    assert lines[1].startswith("run 1/3: green — mypy: ok; pytest: ok; conformance: ok — 12 passed in 3.21s — 0m")
    assert lines[2].startswith("run 2/3: red (exit 1) — mypy: ok; pytest: failed (exit 1); conformance: ok — "
                               "1 failed, 11 passed in 3.50s — ")
    assert lines[2].endswith(str(tmp_path / "logs" / "run-2.log"))
    assert lines[3].startswith("run 3/3: green") and lines[-1] == "test loop: 2 of 3 run(s) green"
    seen = (tmp_path / "seen.log").read_text().splitlines()
    assert seen == ["CI=true workers= args=tests/unit/test_time_phrases.py -q"] * 3  # test.sh's own worker count
    assert "1 failed" in (tmp_path / "logs" / "run-2.log").read_text()


def test_the_loop_is_green_when_every_run_is_and_runs_five_by_default(tmp_path):
    done = run_loop(tmp_path, "0 0 0 0 0")
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "test loop: 5 of 5 run(s) green", done
    assert run_loop(tmp_path / "again", "0", "none").returncode == 2
