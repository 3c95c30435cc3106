"""The kernel reads a layered item table as the plain dict it stands for (fold_core.table).

A long-lived store's state keeps the snapshot's head as the table's ``base``
and what changed since as its ``top``; the kernel reads a layer's members from
those maps directly. Here random histories run twice — once as the kernel
builds its tables, once folded into a fresh ``base`` before chosen steps (so
that later changes shadow older versions of the same items) — and every
answer must be the same, byte for byte.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fold_core.kernel import Accepted, empty_state
from fold_core.table import Table
from kernel_histories import History, histories, output_text, run_step


def _folded(state):
    """The same state with every item in a new ``base`` (as a snapshot's head is) and nothing on top."""
    return state.replace(items=Table(dict(state.items.items())))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(history=histories(max_steps=16), data=st.data())
def test_a_folded_table_answers_like_the_kernels_own(history: History, data):
    plain = folded = empty_state(history.budget)
    for index, step in enumerate(history.steps):
        if data.draw(st.booleans(), label=f"fold before step {index}"):
            folded = _folded(folded)
        expected, got = run_step(plain, step), run_step(folded, step)
        assert output_text(got) == output_text(expected), f"step {index} answers differently on a folded table"
        if isinstance(expected, Accepted):
            plain, folded = expected.state, got.state


def test_a_patched_item_in_the_top_shadows_its_base_version():
    """A weight lowered after a fold: the layer's shares are those of the new version."""
    from fold_core.kernel import apply_batch

    now = "2026-10-10T08:00:00+08:00"
    state = apply_batch(empty_state(64), {"batch_id": "b1", "declarations": [
        {"id": "a", "title": "a", "weight": "critical", "kind": "fyi"},
        {"id": "b", "title": "b", "weight": "critical", "kind": "fyi"}]}, actor="agent", now=now).state
    state = _folded(state)
    state = apply_batch(state, {"batch_id": "b2", "declarations": [
        {"id": "a", "relation": "supersedes:a", "weight": "trace", "kind": "fyi", "reason": "less"}]},
        actor="agent", now=now).state
    assert "a" in state.items.top and "a" in state.items.base
    # 24 (b, critical) + 1 (a, trace) + 24 (c, critical) = 49 fits in 64; with a's old share (24) it would not.
    outcome = apply_batch(state, {"batch_id": "b3", "declarations": [
        {"id": "c", "title": "c", "weight": "critical", "kind": "fyi"}]}, actor="agent", now=now)
    assert isinstance(outcome, Accepted), outcome.document
    assert outcome.receipt["layers"] == [{"layer": None, "budget": 64, "used": 49}]
