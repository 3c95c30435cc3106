"""The request digest's fast path writes exactly the canonical bytes (contract §6.1).

``canonical_json`` is defined as ``json.dumps(value, sort_keys=True,
separators=(",", ":"), ensure_ascii=False)`` in UTF-8; every stored
``request_digest`` hashes those bytes, so a different byte anywhere would
answer ``batch_conflict`` to an honest retry. The digest asks orjson first and
keeps its bytes only when they are provably the same. Compared here on

* every request of the conformance cases (and the fast path must answer for
  nearly all of them: otherwise it is not in use);
* random JSON-like values — any text (controls, separators, astral characters,
  lone surrogates), integers of any size, floats of every kind (NaN, the
  infinities, ``1e16``, ``-0.0``), keys of every type ``json`` accepts,
  tuples, deep nesting — where both must give the same bytes or both refuse;
* the values orjson writes unlike ``json``, one by one.
"""

from __future__ import annotations

import enum
import json
import math
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conformance.case import load_case
from fold_core import digest
from fold_core.digest import canonical_json, normalized_request, request_digest

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted((ROOT / "conformance" / "cases").glob("*.json"))


def reference(value: object) -> bytes:
    """The definition, spelled out."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8", "surrogatepass")


def same_bytes(value: object) -> None:
    try:
        expected = reference(value)
    except (TypeError, ValueError, RecursionError) as refusal:
        with pytest.raises(type(refusal)):
            canonical_json(value)
        return
    assert canonical_json(value) == expected


def test_every_request_of_the_conformance_cases_and_the_fast_path_answers():
    pytest.importorskip("orjson")
    requests = [{"actor": step.args["actor"], "request": normalized_request(step.args["batch"])}
                for path in CASES for step in load_case(path).steps
                if isinstance(step.args.get("batch"), dict) and isinstance(step.args.get("actor"), str)]
    assert len(requests) > 300, f"only {len(requests)} requests: did the cases load?"
    fast = 0
    for value in requests:
        same_bytes(value)
        answer = digest._fast_canonical(value)
        if answer is not None:
            assert answer == reference(value)
            fast += 1
    assert fast >= 0.9 * len(requests), f"the fast path answered only {fast} of {len(requests)}"


TEXT = st.text(st.characters(exclude_categories=()), max_size=40) | st.sampled_from(
    ["\u2028\u2029\x85", "\x00\x1f\x7f", "\ud800", "a\udfffb", "\U0001f389 签证", '"\\/\b\f\n\r\t', "",
     '\\"', '\\\\"1.5', "2026-10-12T18:00:00.5+08:00", "v1e5"])
KEYS = TEXT | st.integers(-5, 5) | st.booleans() | st.none()
FLOATS = st.floats() | st.sampled_from([1e16, 1e-05, -0.0, 0.0, 1.0, 5e-324, 1.7976931348623157e308,
                                        math.nan, math.inf, -math.inf, 123456789.0])
SCALARS = st.none() | st.booleans() | st.integers() | st.integers(-(2**64), 2**64) | TEXT | FLOATS
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
                      | st.dictionaries(KEYS, inner, max_size=5) | st.dictionaries(TEXT, inner, max_size=5),
                      max_leaves=40)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES)
@example(value={"a": 1e16})
@example(value={"a": ['x"', 1.5]})
@example(value={"a": "\\", "b": 2.5})
@example(value={"a": math.nan, "b": None})
@example(value={"b": [1, 2], "a": "é\n\x01"})
def test_any_value(value):
    same_bytes(value)


class Colour(enum.Enum):
    RED = "red"


class Text(str):
    pass


@pytest.mark.parametrize("value", [
    {"a": 1e16}, {"a": 1.0}, {"a": -0.0}, {"a": 1e-05}, {"a": "1.5", "b": 2.5}, {"a": 'q"', "b": [0.5]},
    {"a": math.nan}, {"a": math.inf}, {"a": -math.inf}, {"a": [None, math.nan]},
    {"a": uuid.UUID(int=7)}, {"a": Colour.RED}, {"a": (1, 2)}, {"a": Text("x")}, {1: "int key"},
    {"a": 2**64}, {"a": "\ud800"},
])
def test_values_orjson_writes_otherwise_are_refused_by_the_fast_path(value):
    pytest.importorskip("orjson")
    assert digest._fast_canonical(value) is None
    same_bytes(value)


def test_a_commit_request_takes_the_fast_path():
    """The digest of an ordinary request (text with points and exponents in it) is orjson's."""
    pytest.importorskip("orjson")
    request = {"declarations": [{"id": "a-1", "title": "v1.5 发布 1e5", "weight": "normal", "kind": "fyi",
                                 "share": None, "sources": [{"channel": "mail", "ref": "<1.2@x>"}]}],
               "acknowledges": ["ann-3"], "base_revision": 12}
    value = {"actor": "agent", "request": request}
    assert digest._fast_canonical(value) == reference(value)
    assert request_digest("agent", request).startswith("sha256:")
