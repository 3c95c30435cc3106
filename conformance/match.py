"""JSON matching for conformance cases (contract §14).

Three comparisons, all over JSON values (dict, list, str, int, float, bool,
None) and all answering with the *first* difference found, located by a path
in the same dotted syntax that ``expect_paths`` uses:

* ``subset_mismatch(expected, actual)`` — the ``expect`` rule: an object
  matches when every expected key is present and matches (extra keys are
  fine); an array matches when it has the same length and matches
  element-wise; anything else must be equal.
* ``exact_mismatch(expected, actual)`` — ``expect_paths`` values and the
  kernel/CLI agreement check: equal as JSON, extra keys are differences.
* ``lookup(document, path)`` — resolve ``"root.items[0].id"``; a missing
  path is reported as missing, never as ``None`` (a missing path does not
  match ``null``).

Numbers compare as JSON numbers (``1 == 1.0``) but booleans are not numbers
(``true != 1``), unlike Python's ``True == 1``.
"""

from __future__ import annotations


import json
import re
from dataclasses import dataclass

from fold_core.text import type_name

__all__ = [
    "MISSING", "Mismatch", "PathError", "exact_mismatch", "format_path", "json_equal",
    "lookup", "parse_path", "render", "subset_mismatch",
]


class _Missing:
    """The value at a path that does not exist (distinct from JSON null)."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()

Segment = str | int


class PathError(ValueError):
    """A path string that is not ``key(.key|[i])*``."""


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Where two JSON values first differ, and what each side holds there."""

    path: tuple[Segment, ...]
    expected: object
    actual: object
    reason: str = ""

    def describe(self, expected_label: str = "expected", actual_label: str = "got") -> str:
        """One line: ``path: expected X, got Y (reason)``."""
        where = format_path(self.path) or "(document)"
        text = f"{where}: {expected_label} {render(self.expected)}, {actual_label} {render(self.actual)}"
        return f"{text} ({self.reason})" if self.reason else text


# -- paths -----------------------------------------------------------------

_SEGMENT = re.compile(r"([^.\[\]]+)?((?:\[-?\d+\])*)")
_INDEX = re.compile(r"\[(-?\d+)\]")


def parse_path(path: str) -> tuple[Segment, ...]:
    """``"errors[1].code"`` → ``("errors", 1, "code")``; raises ``PathError``."""
    if not isinstance(path, str) or not path:
        raise PathError(f"path must be a non-empty string, got {path!r}")
    segments: list[Segment] = []
    for number, part in enumerate(path.split(".")):
        match = _SEGMENT.fullmatch(part)
        # Only the very first part may start with an index ("[0].id").
        if match is None or not part or (match.group(1) is None and number > 0):
            raise PathError(f"bad path {path!r}: cannot read segment {part!r} "
                            "(expected key, key[i] or a leading [i])")
        if match.group(1) is not None:
            segments.append(match.group(1))
        segments.extend(int(index) for index in _INDEX.findall(match.group(2)))
    return tuple(segments)


def format_path(segments: tuple[Segment, ...] | list[Segment]) -> str:
    """The inverse of ``parse_path``; ``()`` → ``""``."""
    out = ""
    for segment in segments:
        if isinstance(segment, int):
            out += f"[{segment}]"
        else:
            out += f".{segment}" if out else segment
    return out


def lookup(document: object, path: str | tuple[Segment, ...]) -> object:
    """The value at ``path``, or ``MISSING`` when any step of it does not exist."""
    segments = parse_path(path) if isinstance(path, str) else path
    value = document
    for segment in segments:
        if isinstance(segment, int):
            if not isinstance(value, list) or not -len(value) <= segment < len(value):
                return MISSING
            value = value[segment]
        else:
            if not isinstance(value, dict) or segment not in value:
                return MISSING
            value = value[segment]
    return value


# -- comparison ------------------------------------------------------------

_kind = type_name  # JSON type names: one definition, in fold_core.text


def _compare(expected: object, actual: object, path: tuple[Segment, ...], subset: bool) -> Mismatch | None:
    kind = _kind(expected)
    if actual is MISSING:
        return Mismatch(path, expected, MISSING, "missing")
    if kind != _kind(actual):
        reason = f"{_kind(actual)} is not {kind}"
        return Mismatch(path, expected, actual, reason)
    if kind == "object":
        for key, value in expected.items():
            if key not in actual:
                return Mismatch((*path, key), value, MISSING, "missing key")
            found = _compare(value, actual[key], (*path, key), subset)
            if found is not None:
                return found
        if not subset:
            for key in actual:
                if key not in expected:
                    return Mismatch((*path, key), MISSING, actual[key], "unexpected key")
        return None
    if kind == "array":
        if len(expected) != len(actual):
            return Mismatch(path, expected, actual,
                            f"array length {len(actual)}, expected {len(expected)}")
        for index, (left, right) in enumerate(zip(expected, actual)):
            found = _compare(left, right, (*path, index), subset)
            if found is not None:
                return found
        return None
    if expected != actual:
        return Mismatch(path, expected, actual)
    return None


def subset_mismatch(expected: object, actual: object, path: tuple[Segment, ...] = ()) -> Mismatch | None:
    """First place where ``actual`` fails the subset rule of ``expect``, or None."""
    return _compare(expected, actual, tuple(path), subset=True)


def exact_mismatch(expected: object, actual: object, path: tuple[Segment, ...] = ()) -> Mismatch | None:
    """First place where two JSON values differ (extra keys count), or None."""
    return _compare(expected, actual, tuple(path), subset=False)


def json_equal(left: object, right: object) -> bool:
    """Equality as JSON values: ``1 == 1.0``, ``true != 1``, key order ignored."""
    return _compare(left, right, (), subset=False) is None


def render(value: object, limit: int = 160) -> str:
    """A short JSON rendering of ``value`` for a failure line."""
    if value is MISSING:
        return "<missing>"
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
