"""The conformance case runner (contract §14).

``run_cases(paths, modes)`` loads every case file, runs it in each requested
mode — ``kernel`` (pure kernel behind the in-memory store, this process) and
``cli`` (the real CLI on a temporary store, subprocesses, a small thread
pool) — checks each step's ``exit``, ``expect`` and ``expect_paths``, and,
when both modes ran, checks that they agree: every step that ran in both
modes must give the same JSON document and the same exit code. A case passes
when it passes in every mode run and the modes agree.

Exit rules: in kernel mode ``exit`` is compared with the answer's exit code;
in CLI mode a step without ``exit`` must exit 0 or 1, and a ``crash`` step
must exit 137 unless its ``exit`` says the fault point is not reached (a
rejected or replayed batch never appends). A crash step's ``expect`` is
ignored; instead the runner asks ``history --batch`` whether the batch
survived and compares that with ``committed``.

Nothing here raises for a bad case: a malformed file, a missing module or a
crashing kernel is a failing case with a message.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from conformance.case import STORE_ONLY, Case, CaseError, Step, crash_batch_id, load_case
from conformance.cli_mode import CRASH_EXIT, Launcher, pg_skip_reason, run_cli
from conformance.match import exact_mismatch, lookup, parse_path, render, subset_mismatch
from conformance.modes import ModeUnavailable, StepOutcome, run_kernel

__all__ = [
    "CASES_DIR", "MODES", "CaseResult", "Failure", "check_outcomes", "collect_case_files",
    "compare_modes", "resolve_modes", "run_cases",
]

CASES_DIR = Path(__file__).parent / "cases"
MODES = ("kernel", "cli")
_MODE_ORDER = {"case": 0, "kernel": 1, "cli": 2, "both": 3}


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed check: where (mode, step) and what (a precise message)."""

    mode: str  # "case" (the file itself), "kernel", "cli" or "both" (agreement)
    message: str
    step: Step | None = None

    def sort_key(self) -> tuple[int, int]:
        return (-1 if self.step is None else self.step.index, _MODE_ORDER[self.mode])

    def describe(self) -> str:
        where = f"{self.step.label} " if self.step is not None else ""
        # One failure, one line: whatever a message quotes stays on it.
        message = " | ".join(part for part in self.message.splitlines() if part.strip())
        return f"{where}[{self.mode}]: {message}"


@dataclass(slots=True)
class CaseResult:
    """The verdict on one case file."""

    path: str
    name: str | None
    modes: tuple[str, ...]
    failures: list[Failure] = field(default_factory=list)
    skipped: str | None = None  # why the case did not run at all (it neither passed nor failed)

    @property
    def passed(self) -> bool:
        return not self.failures and self.skipped is None

    def first_failure(self) -> Failure | None:
        return min(self.failures, key=Failure.sort_key) if self.failures else None

    def line(self) -> str:
        """The report line: ``FAIL path steps[i] (op) [mode]: diff`` or ``ok path (name) [modes]``."""
        shown = _display(self.path)
        if self.skipped is not None:
            return f"SKIP {shown} ({self.name}): {self.skipped}"
        if self.passed:
            return f"ok   {shown} ({self.name}) [{', '.join(self.modes)}]"
        more = len(self.failures) - 1
        suffix = f" (+{more} more, -v lists them)" if more else ""
        return f"FAIL {shown} {self.first_failure().describe()}{suffix}"


def _display(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def collect_case_files(paths: list[str | Path] | None = None) -> list[Path]:
    """Case files named or found (``*.json``, sorted) in the given directories."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    for path in map(Path, paths or [CASES_DIR]):
        if path.is_dir():
            files.extend(sorted(path.glob("*.json")))
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"no case file or directory {str(path)!r}")
    return files


def run_cases(paths: list[str | Path] | None = None, modes: tuple[str, ...] | list[str] = MODES, *,
              jobs: int = 2, timeout: float = 60.0, database: str | None = None,
              launch: str = "fork") -> list[CaseResult]:
    """Run the cases in ``paths`` (files or directories) in ``modes``; one result per file.

    ``database``: a ``postgresql://`` URL; CLI mode then runs each case on a
    fresh store of that database, and a case about the log file itself is
    skipped (``CaseResult.skipped``).
    """
    modes = resolve_modes(modes)
    results: list[CaseResult] = []
    loaded: list[tuple[CaseResult, Case]] = []
    for path in collect_case_files(paths):
        try:
            case = load_case(path)
        except CaseError as exc:
            results.append(CaseResult(str(path), None, modes, [Failure("case", f"malformed case: {exc}")]))
            continue
        result = CaseResult(str(path), case.name, modes)
        results.append(result)
        if database is not None and (why := pg_skip_reason(case)) is not None:
            result.skipped = why
            continue
        loaded.append((result, case))
    with Launcher(launch) as launcher, \
            ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="conformance-cli") as pool:
        cli_runs = {id(case): pool.submit(_run_mode, "cli", case, timeout, database, launcher)
                    for _, case in loaded if "cli" in modes}
        for result, case in loaded:
            outcomes = {}
            if "kernel" in modes:
                outcomes["kernel"] = _run_mode("kernel", case, timeout, None)
            if "cli" in modes:
                outcomes["cli"] = cli_runs[id(case)].result()
            for mode, run in outcomes.items():
                if isinstance(run, Failure):
                    result.failures.append(run)
                else:
                    result.failures.extend(check_outcomes(mode, run))
            if all(isinstance(run, list) for run in outcomes.values()) and len(outcomes) == 2:
                disagreement = compare_modes(outcomes["kernel"], outcomes["cli"])
                if disagreement is not None:
                    result.failures.append(disagreement)
            result.failures.sort(key=Failure.sort_key)
    return results


def resolve_modes(modes: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``"both"`` / ``"kernel"`` / ``("cli",)`` → the modes to run, in a fixed order."""
    requested = {"both": MODES}.get(modes, (modes,)) if isinstance(modes, str) else tuple(modes)
    unknown = [mode for mode in requested if mode not in MODES]
    if not requested or unknown:
        raise ValueError(f"modes must be 'both' or a non-empty subset of {MODES}, got {modes!r}")
    return tuple(mode for mode in MODES if mode in requested)


def _run_mode(mode: str, case: Case, timeout: float, database: str | None,
              launcher: Launcher | None = None) -> list[StepOutcome] | Failure:
    try:
        return run_kernel(case) if mode == "kernel" else run_cli(case, timeout, database, launcher)
    except ModeUnavailable as exc:
        return Failure(mode, f"{mode} mode unavailable: {exc}")
    except Exception as exc:  # the runner's own defect must still be one failure line
        return Failure(mode, f"runner error: {type(exc).__name__}: {exc}")


# -- checks ----------------------------------------------------------------

def _errors_hint(document: object) -> str:
    """`` (errors: code item, ...)`` for a rejection, so a wrong exit says why."""
    errors = document.get("errors") if isinstance(document, dict) else None
    if not isinstance(errors, list) or not errors:
        return ""
    shown = []
    for error in errors[:3]:
        if isinstance(error, dict):
            keys = ("code", "item", "field", "annotation", "parent", "batch_id")
            text = " ".join(str(error[key]) for key in keys if error.get(key) is not None)
            if str(error.get("code", "")).startswith("store_"):  # no locator says what happened
                text += f": {error.get('message')}"
            shown.append(text)
    more = f", +{len(errors) - 3}" if len(errors) > 3 else ""
    return f" (errors: {'; '.join(shown)}{more})"


def check_outcomes(mode: str, outcomes: list[StepOutcome]) -> list[Failure]:
    """Every failed check of one mode's run."""
    failures: list[Failure] = []
    for outcome in outcomes:
        step = outcome.step

        def fail(message: str) -> None:
            failures.append(Failure(mode, message, step))

        if outcome.skipped is not None:
            continue
        if outcome.error is not None:
            fail(outcome.error)
            continue
        _check_exit(mode, outcome, fail)
        if step.op == "crash":
            _check_committed(outcome, fail)
            continue
        if step.op in STORE_ONLY:
            continue
        document = outcome.document
        if (step.has_expect or step.expect_paths) and document is None:
            fail(f"no JSON document to check (exit {outcome.exit_code})")
            continue
        if step.has_expect:
            mismatch = subset_mismatch(step.expect, document)
            if mismatch is not None:
                fail(f"expect: {mismatch.describe()}")
        for path, value in step.expect_paths:
            mismatch = exact_mismatch(value, lookup(document, path), parse_path(path))
            if mismatch is not None:
                fail(f"expect_paths: {mismatch.describe()}")
    return failures


def _check_exit(mode: str, outcome: StepOutcome, fail) -> None:
    step, code = outcome.step, outcome.exit_code
    if mode == "kernel":
        if step.exit is not None and step.op != "crash" and code != step.exit:
            fail(f"exit: expected {step.exit}, got {code}{_errors_hint(outcome.document)}")
        return
    if step.op in STORE_ONLY:
        return
    if step.op == "crash":
        expected = CRASH_EXIT if step.exit is None else step.exit
        if code != expected:
            reached = "the fault point was not reached" if code != CRASH_EXIT else "the fault point was reached"
            fail(f"exit: expected {expected} (fault {step.args['fault']}), got {code}: {reached}")
        return
    if step.exit is None:
        if code not in (0, 1):
            fail(f"exit: got {code}, expected 0 or 1 (the step gives no 'exit'){_errors_hint(outcome.document)}")
    elif code != step.exit:
        fail(f"exit: expected {step.exit}, got {code}{_errors_hint(outcome.document)}")


def _check_committed(outcome: StepOutcome, fail) -> None:
    step = outcome.step
    found = lookup(outcome.document, "found")
    if found is not step.args["committed"]:
        fail(f"batch {crash_batch_id(step)!r} after fault {step.args['fault']}: committed is "
             f"{render(step.args['committed'])}, but history --batch says found {render(found)}")


def compare_modes(kernel: list[StepOutcome], cli: list[StepOutcome]) -> Failure | None:
    """The first step where kernel and CLI answered differently, as a failure."""
    for left, right in zip(kernel, cli):
        if left.skipped or right.skipped or left.error or right.error:
            continue
        step = left.step
        if step.op in STORE_ONLY:
            continue
        if step.op != "crash" and left.exit_code != right.exit_code:
            return Failure("both", f"exit codes differ: kernel {left.exit_code}, cli {right.exit_code}", step)
        mismatch = exact_mismatch(left.document, right.document)
        if mismatch is not None:
            what = "the history --batch probes" if step.op == "crash" else "the documents"
            return Failure("both", f"{what} differ: {mismatch.describe('kernel', 'cli')}", step)
    return None
