"""``python -m conformance --store postgresql://…``: every case against PostgreSQL (contract §14).

The runner as a user runs it, against the private cluster: kernel mode and CLI
mode on a new store of the database per case; both must agree. A case about
the log file itself (``corrupt_line``) is skipped, named on a ``SKIP`` line
and counted on the closing line ``N passed, 0 failed, K skipped``; the
stores the runner made are dropped afterwards.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conformance.runner import collect_case_files


def test_every_case_passes_on_postgresql(postgres_cluster):
    database = postgres_cluster.url()
    environment = {key: value for key, value in os.environ.items() if not key.startswith("FOLD_")}
    done = subprocess.run([sys.executable, "-m", "conformance", "--store", database], capture_output=True,
                          text=True, env=environment, timeout=1800,
                          cwd=Path(__file__).resolve().parents[2])
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    skipped = [line for line in lines if line.startswith("SKIP ")]
    assert skipped == ["SKIP conformance/cases/runner-corrupt.json (runner-corrupt): corrupt_line edits a line"
                       " of events.jsonl; a PostgreSQL store has no log file"]
    total = len(collect_case_files([]))
    assert re.fullmatch(r"(\d+) passed, 0 failed, 1 skipped", lines[-1]), lines[-1]
    assert lines[-1] == f"{total - 1} passed, 0 failed, 1 skipped"
    left = postgres_cluster.psql("SELECT count(*) FROM fold_stores WHERE name LIKE 'conf-%'")
    assert left.strip() == "0"  # every case's store was dropped
