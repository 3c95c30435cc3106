"""Conformance cases and their runner (contract §14).

``run_cases(paths, modes)`` runs case files against the pure kernel behind
the in-memory store (``kernel``) and against the real CLI on a temporary
store (``cli``), checks every step, and checks that both modes agree.
``python -m conformance`` is the command line around it.
"""

from conformance.runner import CASES_DIR, MODES, CaseResult, Failure, run_cases

__all__ = ["CASES_DIR", "MODES", "CaseResult", "Failure", "run_cases"]
