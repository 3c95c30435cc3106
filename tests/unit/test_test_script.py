"""``scripts/test.sh`` runs the conformance cases even after a pytest failure, reports both, and fails if either did.

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
case "$2" in
  pytest) exit "${PYTEST_EXIT:-0}" ;;
  conformance) exit "${CONFORMANCE_EXIT:-0}" ;;
esac
"""


def run_script(tmp_path: Path, pytest_exit: int, conformance_exit: int) -> tuple[subprocess.CompletedProcess, list]:
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "test.sh", tmp_path / "scripts" / "test.sh")
    for name in ("system-packages.sh", "bootstrap.sh"):
        (tmp_path / "scripts" / name).write_text("exit 0\n")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(STUB_PYTHON)
    python.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "PYTEST_EXIT": str(pytest_exit), "CONFORMANCE_EXIT": str(conformance_exit)}
    done = subprocess.run(["bash", str(tmp_path / "scripts" / "test.sh")], env=env, capture_output=True,
                          text=True, timeout=60)
    calls = (tmp_path / "calls.log").read_text().splitlines()
    return done, [call.split()[1] if call.startswith("-m ") else call.split()[0] for call in calls]


@pytest.mark.parametrize(("pytest_exit", "conformance_exit", "report"), [
    (0, 0, "pytest: ok; conformance: ok"),
    (1, 0, "pytest: failed (exit 1); conformance: ok"),
    (0, 2, "pytest: ok; conformance: failed (exit 2)"),
    (1, 1, "pytest: failed (exit 1); conformance: failed (exit 1)"),
])
def test_both_run_both_are_reported_and_either_failing_fails_the_script(tmp_path, pytest_exit, conformance_exit,
                                                                       report):
    done, ran = run_script(tmp_path, pytest_exit, conformance_exit)
    assert ran == ["scripts/typecheck.py", "pytest", "conformance"]
    assert done.stdout.splitlines()[-1] == report
    assert (done.returncode == 0) == (pytest_exit == 0 and conformance_exit == 0), done
