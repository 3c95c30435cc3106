"""CLI mode's two ways of starting a command give the same answers (conformance/forkserver.py).

``fork`` (the default) forks each command from a server that imported the CLI
once; ``exec`` runs ``python -m fold_core``. The same cases — a crash at a
fault point, annotations read from stdin, a rejection, a text view — must
come out step for step alike: exit codes, documents, crash probes. A command
that outlives its timeout is killed and reported as a timeout, never waited for.
"""

from __future__ import annotations

import pytest

from conformance.case import load_case
from conformance.cli_mode import Launcher, run_cli
from conformance.modes import ModeUnavailable
from conformance.runner import CASES_DIR, run_cases

CASES = ["runner-crash.json", "err-annotate-input.json", "err-layer-budget.json", "err-batch-conflict.json"]


def outcomes(launch: str) -> list[list[tuple]]:
    with Launcher(launch) as launcher:
        runs = [run_cli(load_case(CASES_DIR / name), launcher=launcher) for name in CASES]
    return [[(o.step.op, o.exit_code, o.document, o.skipped, o.error) for o in run] for run in runs]


def test_forked_commands_answer_exactly_as_started_ones():
    forked, started = outcomes("fork"), outcomes("exec")
    assert forked == started
    codes = {code for run in forked for (_, code, _, _, _) in run}
    assert {0, 1, 137} <= codes  # accepted, rejected and a crash at a fault point were all among them


def test_the_runner_passes_the_cases_forked():
    results = run_cases([CASES_DIR / name for name in CASES], ("kernel", "cli"), launch="fork")
    assert [result.failures for result in results] == [[]] * len(CASES)


def test_a_command_past_its_timeout_is_killed_and_the_server_goes_on():
    case = load_case(CASES_DIR / CASES[1])
    with Launcher("fork") as launcher:
        with pytest.raises(ModeUnavailable, match="timed out after 0.0001 s"):
            run_cli(case, timeout=0.0001, launcher=launcher)  # no command starts and answers within 0.1 ms
        again = run_cli(case, launcher=launcher)  # the same server, the next command
    assert again and all(outcome.error is None for outcome in again)


def test_an_unknown_launch_is_refused():
    with pytest.raises(ValueError, match="launch must be one of fork, exec"):
        Launcher("spawn")
