"""The log's fast encoder writes exactly the canonical bytes (contract §6.1).

``encode_record`` appends every record with orjson; ``canonical_line`` is the
definition (``json.dumps(record, ensure_ascii=False, separators=(",", ":"),
allow_nan=False)`` as UTF-8). A record written with other bytes would still
read back the same, but the log would no longer be what the contract says
it is, and two implementations would disagree on its bytes. So the two are
compared on

* every record the conformance cases make (the corpus every implementation
  answers to), through the real kernel behind the in-memory store;
* every record of random kernel histories (Hypothesis), and of random
  batches thrown at small states that happen to be accepted;
* random JSON values without floats — any text (controls, line and paragraph
  separators, astral characters, lone surrogates), integers of any size,
  keys of every type ``json`` accepts, deep nesting — where the encoders must
  agree byte for byte or both refuse.

Floats are the one difference (orjson writes ``1e-05`` as ``0.00001`` and NaN
as ``null``): a record never holds one, because the kernel refuses a float in
every field — checked here on batches full of floats.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.case import load_case
from conformance.modes import run_kernel
from fold_core.kernel import Accepted, apply_batch
from fold_core.store import memory
from fold_core.store.log import canonical_line, encode_record
from kernel_histories import histories, run_step
from test_kernel_properties import BATCH_LIKE, FIXTURE_STATES

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted((ROOT / "conformance" / "cases").glob("*.json"))


def same_bytes(record: object) -> None:
    """Both encoders give the same line, or both refuse the value."""
    try:
        expected = canonical_line(record)
    except (TypeError, ValueError, RecursionError) as refusal:
        with pytest.raises(type(refusal)):
            encode_record(record)
        return
    assert encode_record(record) == expected


def test_the_fast_encoder_is_in_use():
    """Without it these tests would compare the canonical encoder with itself."""
    pytest.importorskip("orjson")
    from fold_core.store import log

    encode_record({"v": 1})
    assert log._orjson_dumps() is not False


@pytest.fixture
def kernel_records(monkeypatch) -> list[dict]:
    """Every record the in-memory store appends while the test runs, as the kernel made it."""
    records: list[dict] = []
    append = memory._MemorySession.append

    def keep(self, record, state):
        records.append(record)
        return append(self, record, state)

    monkeypatch.setattr(memory._MemorySession, "append", keep)
    return records


def test_every_record_of_the_conformance_cases(kernel_records):
    assert CASES, "no conformance cases found"
    for path in CASES:
        run_kernel(load_case(path))
    assert len(kernel_records) > 300, f"only {len(kernel_records)} records: did the cases run?"
    texts = "".join(json.dumps(r, ensure_ascii=False) for r in kernel_records)
    assert any(ord(c) > 0xFFFF for c in texts) or any("\u4e00" <= c <= "\u9fff" for c in texts)
    for record in kernel_records:
        same_bytes(record)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(history=histories(max_steps=16))
def test_every_record_of_random_histories(history):
    from fold_core.kernel import empty_state

    state = empty_state(history.budget)
    for step in history.steps:
        outcome = run_step(state, step)
        if isinstance(outcome, Accepted):
            same_bytes(outcome.record)
            state = outcome.state


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=st.sampled_from(FIXTURE_STATES), batch=BATCH_LIKE)
def test_accepted_garbage_never_carries_a_float(state, batch):
    """Batches full of floats, NaN and odd values: what the kernel accepts encodes the same."""
    outcome = apply_batch(state, batch, actor="agent", now="2026-10-10T08:00:00+08:00")
    if isinstance(outcome, Accepted):
        same_bytes(outcome.record)
        assert "." not in json.dumps(_numbers(outcome.record)), "a float in a record"


def _numbers(value: object) -> list:
    if isinstance(value, dict):
        return [n for item in value.values() for n in _numbers(item)]
    if isinstance(value, list):
        return [n for item in value for n in _numbers(item)]
    return [value] if isinstance(value, float) else []


TEXT = st.text(st.characters(exclude_categories=()), max_size=40) | st.sampled_from(
    ["\u2028\u2029\x85", "\x00\x1f\x7f", "\ud800", "a\udfffb", "\U0001f389 签证", '"\\/\b\f\n\r\t', ""])
KEYS = TEXT | st.integers(-5, 5) | st.booleans() | st.none()
SCALARS = st.none() | st.booleans() | st.integers() | st.integers(-(2**64), 2**64) | TEXT
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
                      | st.dictionaries(KEYS, inner, max_size=5), max_leaves=40)


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES)
def test_any_value_without_floats(value):
    same_bytes(value)


def test_nesting_deeper_than_the_fast_encoder_takes():
    deep: object = "x"
    for _ in range(400):
        deep = {"a": [deep]}
    same_bytes(deep)
