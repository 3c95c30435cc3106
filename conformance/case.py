"""Loading and checking conformance case files (contract §14).

A case file is ``{name, about, budget, steps}``; each step has an ``op`` and
the keys that op takes, plus the optional checks ``expect``, ``expect_paths``
and ``exit``. Everything is checked before anything runs, so a malformed file
(bad JSON, a duplicate key, an unknown op or key, a missing or mistyped key,
a bad path in ``expect_paths``) becomes one ``CaseError`` naming the file,
the step and the key — never a traceback, and never a half-run case.

Decisions the contract leaves open (proposed for ``docs/decisions.md``):
* unknown keys in a case or step are errors (a typo such as ``expect_path``
  would otherwise turn a check into one that cannot fail); a step may carry
  a free-text ``about``;
* the store-only ops ``tear_tail``, ``corrupt_line`` and ``delete_snapshot``
  print nothing, so checks on them are errors;
* a ``crash`` step must name its batch_id (in ``step.batch`` or
  ``step.batch_id``) so that ``committed`` can be checked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from conformance.match import PathError, parse_path

__all__ = ["FAULTS", "OPS", "STORE_ONLY", "Case", "CaseError", "Step", "crash_batch_id", "load_case", "parse_case"]

FAULTS = ("before_append", "mid_append", "after_append", "after_fsync", "mid_snapshot")

_CHECKS = ("expect", "expect_paths", "exit")
_COMMON = ("op", "about", *_CHECKS)
# op -> (required keys, optional keys)
OPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "commit": (("now", "actor", "batch"), ("batch_id",)),
    "annotate": (("now", "item", "text"), ("author",)),
    "state": (("now",), ("item", "depth", "not_active")),
    "history": ((), ("batch", "item", "since", "limit")),
    "crash": (("fault", "step", "committed"), ()),
    "tear_tail": (("bytes",), ()),
    "corrupt_line": (("line",), ()),
    "delete_snapshot": ((), ()),
}
STORE_ONLY = ("tear_tail", "corrupt_line", "delete_snapshot")


class CaseError(ValueError):
    """A case file that cannot be run as written."""


@dataclass(frozen=True, slots=True)
class Step:
    """One checked step; ``args`` holds the op's own keys as written."""

    index: int
    op: str
    args: dict
    expect: object = None
    has_expect: bool = False
    expect_paths: tuple[tuple[str, object], ...] = ()
    exit: int | None = None

    @property
    def label(self) -> str:
        """``steps[2] (state)`` — how failure lines name the step."""
        return f"steps[{self.index}] ({self.op})"


@dataclass(frozen=True, slots=True)
class Case:
    """A loaded, checked case."""

    path: str
    name: str
    about: str
    budget: int
    steps: tuple[Step, ...]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise CaseError(f"duplicate key {key!r} in one object")
        result[key] = value
    return result


def _no_constants(name: str) -> object:
    raise CaseError(f"{name} is not JSON")


def load_case(path: str | Path) -> Case:
    """Read and check one case file; raises ``CaseError`` with a clear message."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"cannot read case file: {exc}") from None
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise CaseError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return parse_case(document, str(path))


def parse_case(document: object, path: str = "<case>") -> Case:
    """Check a decoded case document."""
    if not isinstance(document, dict):
        raise CaseError("a case must be a JSON object {name, about, budget, steps}")
    _keys(document, ("name", "about", "budget", "steps"), (), "case")
    name, about, budget, steps = (document[key] for key in ("name", "about", "budget", "steps"))
    if not isinstance(name, str) or not name:
        raise CaseError("case: 'name' must be a non-empty string")
    if not isinstance(about, str):
        raise CaseError("case: 'about' must be a string")
    if not _is_int(budget):
        raise CaseError(f"case: 'budget' must be an integer, got {json.dumps(budget)}")
    if not isinstance(steps, list) or not steps:
        raise CaseError("case: 'steps' must be a non-empty array")
    return Case(path, name, about, budget, tuple(_step(raw, index) for index, raw in enumerate(steps)))


def _keys(obj: dict, required: tuple[str, ...], optional: tuple[str, ...], where: str) -> None:
    missing = [key for key in required if key not in obj]
    if missing:
        raise CaseError(f"{where}: missing key {', '.join(map(repr, missing))}")
    unknown = sorted(key for key in obj if key not in required and key not in optional)
    if unknown:
        allowed = ", ".join(sorted({*required, *optional}))
        raise CaseError(f"{where}: unknown key {', '.join(map(repr, unknown))} (allowed: {allowed})")


def _step(raw: object, index: int, nested: bool = False) -> Step:
    where = f"steps[{index}]" + (".step" if nested else "")
    if not isinstance(raw, dict):
        raise CaseError(f"{where}: a step must be a JSON object with an 'op'")
    op = raw.get("op", "commit" if nested else None)
    if op not in OPS:
        known = ", ".join(OPS)
        raise CaseError(f"{where}: unknown op {json.dumps(op)} (known: {known})" if "op" in raw
                        else f"{where}: missing key 'op'")
    if nested and op != "commit":
        raise CaseError(f"{where}: a crash step runs a commit step, got op {op!r}")
    required, optional = OPS[op]
    where = f"{where} ({op})"
    _keys(raw, required, (*optional, *_COMMON), where)
    args = {key: raw[key] for key in (*required, *optional) if key in raw}
    _check_args(op, args, where)
    if op in STORE_ONLY:
        checks = [key for key in _CHECKS if key in raw]
        if checks:
            raise CaseError(f"{where}: {op} prints nothing, so {', '.join(checks)} cannot be checked")
    if op == "crash":
        args["step"] = _step(args["step"], index, nested=True)
    exit_code = raw.get("exit")
    if "exit" in raw and not _is_int(exit_code):
        raise CaseError(f"{where}: 'exit' must be an integer exit code, got {json.dumps(exit_code)}")
    paths = raw.get("expect_paths", {})
    if not isinstance(paths, dict):
        raise CaseError(f"{where}: 'expect_paths' must be an object of path -> value")
    for path in paths:
        try:
            parse_path(path)
        except PathError as exc:
            raise CaseError(f"{where}: expect_paths: {exc}") from None
    return Step(index, op, args, raw.get("expect"), "expect" in raw, tuple(paths.items()), exit_code)


def _check_args(op: str, args: dict, where: str) -> None:
    def need(key: str, ok: bool, what: str) -> None:
        if key in args and not ok:
            raise CaseError(f"{where}: {key!r} must be {what}, got {json.dumps(args[key], ensure_ascii=False)}")

    for key in ("now", "actor", "batch_id", "text", "author"):
        need(key, isinstance(args.get(key), str), "a string")
    need("item", isinstance(args.get("item"), str), "a string")
    if op == "history":
        need("batch", isinstance(args.get("batch"), str), "a batch_id string")
    for key in ("depth", "since", "limit"):
        need(key, _is_int(args.get(key)), "an integer")
    not_active = args.get("not_active")
    need("not_active", not_active == "all" or _is_int(not_active), 'an integer or "all"')
    need("fault", args.get("fault") in FAULTS, "one of " + ", ".join(FAULTS))
    need("committed", isinstance(args.get("committed"), bool), "true or false")
    need("step", isinstance(args.get("step"), dict), "a commit step object")
    for key in ("bytes", "line"):
        need(key, _is_int(args.get(key)) and args[key] >= 1, "a positive integer")
    if op == "crash":
        inner = args["step"]
        batch = inner.get("batch")
        if "batch_id" not in inner and not (isinstance(batch, dict) and isinstance(batch.get("batch_id"), str)):
            raise CaseError(f"{where}: the crash step's commit must name its batch_id "
                            "(in 'batch' or 'batch_id') so that 'committed' can be checked")


def crash_batch_id(step: Step) -> str:
    """The batch_id of a crash step's commit (checked to exist at load time)."""
    inner = step.args["step"]
    return inner.args.get("batch_id") or inner.args["batch"]["batch_id"]
