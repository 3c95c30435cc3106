"""Kernel mode: a case's steps against the pure kernel behind the in-memory store.

Contract §14: the same request identification and records as the file store,
no files, no processes. Store-only ops have nothing to act on: ``tear_tail``
and ``delete_snapshot`` do nothing, ``corrupt_line`` ends the case (the
remaining steps are skipped, not failed), and ``crash`` applies its commit
only when ``committed`` is true. Every answer is passed through JSON once, so
the checks see exactly what the CLI would print (and an answer that is not
JSON is reported, not hidden).

A step whose expected ``exit`` is 2 checks a CLI usage error; the kernel has
no command line, so kernel mode skips it.
"""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass

from conformance.case import Case, Step, crash_batch_id

__all__ = ["ModeUnavailable", "NotJSON", "StepOutcome", "kernel_unavailable", "normalise", "run_kernel"]

EXIT_USAGE = 2


class ModeUnavailable(RuntimeError):
    """A mode that cannot run at all here (module missing, store cannot start)."""


@dataclass(slots=True)
class StepOutcome:
    """What one step produced in one mode.

    ``document`` is the JSON answer (for ``crash``: the ``history --batch``
    probe taken after the crash); ``exit_code`` is None where there is no
    process or answer; ``skipped`` says why a step did not run; ``error`` is a
    failure to run the step at all (exception, unreadable stdout, timeout).
    """

    step: Step
    document: object = None
    exit_code: int | None = None
    skipped: str | None = None
    error: str | None = None


class NotJSON(ValueError):
    """An answer that JSON cannot carry (a set, an object, NaN, ...)."""


def normalise(document: object) -> object:
    """The document as JSON would carry it (tuples → arrays); ``NotJSON`` if it cannot."""
    try:
        return json.loads(json.dumps(document, allow_nan=False, ensure_ascii=False))
    except (TypeError, ValueError) as exc:
        raise NotJSON(f"answer is not a JSON document: {exc}") from None


def kernel_unavailable() -> str | None:
    """Why kernel mode cannot run (a broken install), or None when it can."""
    try:
        from fold_core.kernel import batch, view  # noqa: F401  (the kernel loads its modules lazily)
        from fold_core.store import memory_store  # noqa: F401
    except Exception as exc:  # any import failure is the same answer: not runnable
        return f"cannot import the kernel ({type(exc).__name__}: {exc})"
    return None


def _describe_exception(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"kernel raised {type(exc).__name__}: {exc}{where}"


def run_kernel(case: Case) -> list[StepOutcome]:
    """Run every step of ``case`` in kernel mode."""
    reason = kernel_unavailable()
    if reason is not None:
        raise ModeUnavailable(reason)
    from fold_core.store import memory_store

    try:
        store = memory_store(case.budget)
    except Exception as exc:
        raise ModeUnavailable(_describe_exception(exc)) from None
    outcomes: list[StepOutcome] = []
    ended: str | None = None
    for step in case.steps:
        if ended is not None:
            outcomes.append(StepOutcome(step, skipped=ended))
            continue
        if step.op == "corrupt_line":
            ended = f"kernel mode ends the case at {step.label}"
            outcomes.append(StepOutcome(step, skipped=ended))
            continue
        if step.op in ("tear_tail", "delete_snapshot"):
            outcomes.append(StepOutcome(step, skipped="no files in kernel mode"))
            continue
        if step.exit == EXIT_USAGE:
            outcomes.append(StepOutcome(step, skipped="CLI usage check (exit 2)"))
            continue
        outcomes.append(_run_step(store, step))
    return outcomes


def _run_step(store, step: Step) -> StepOutcome:
    try:
        answer = _call(store, step)
        return StepOutcome(step, normalise(answer.document), answer.exit_code)
    except NotJSON as exc:
        return StepOutcome(step, error=str(exc))
    except Exception as exc:
        return StepOutcome(step, error=_describe_exception(exc))


def _call(store, step: Step):
    args = step.args
    if step.op == "commit":
        return store.commit(args["batch"], actor=args["actor"], now=args["now"],
                            batch_id=args.get("batch_id"))
    if step.op == "annotate":
        return store.annotate(item=args["item"], text=args["text"],
                              author=args.get("author", "user"), now=args["now"])
    if step.op == "state":
        options = {key: args[key] for key in ("item", "depth") if key in args}
        if "not_active" in args:
            options["not_active"] = None if args["not_active"] == "all" else args["not_active"]
        return store.state_document(now=args["now"], **options)
    if step.op == "history":
        return store.history(**{key: args[key] for key in ("batch", "item", "since", "limit") if key in args})
    if step.op == "crash":
        if args["committed"]:
            inner = args["step"].args
            store.commit(inner["batch"], actor=inner["actor"], now=inner["now"],
                         batch_id=inner.get("batch_id"))
        return _Probe(store.history(batch=crash_batch_id(step)).document)
    raise AssertionError(f"unhandled op {step.op}")  # the loader admits no other op


@dataclass(frozen=True, slots=True)
class _Probe:
    """A crash step's answer: the probe document, and no exit code of its own."""

    document: object
    exit_code: None = None
