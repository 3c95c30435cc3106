"""A kernel property: an id is never created twice (contract §1 "item id": never reused).

A kernel that let a withdrawn or merged id be declared new again would
overwrite the item and everything the log says about it; only the
conformance cases caught that before. Every id a state holds, whatever its
status, is tried as a new root item, as a new child and as a merge result —
in the states of random histories (``kernel_histories``) and in a fixed one
with every status — and must be rejected with ``item_exists``; across a
history, no receipt creates an id twice.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from fold_core.kernel import Accepted, Rejected, apply_batch, empty_state
from kernel_histories import History, histories, run_step
from test_kernel_properties import _at, _commit, _item, check_history, note_event


def _creations_of(state, item_id: str) -> list[tuple[str, dict]]:
    """Batches that each try to create ``item_id`` again (one way per batch)."""
    fresh = {"title": "again", "weight": "trace", "kind": "fyi"}
    batches = [("new root item", {"batch_id": "again-root", "declarations": [{"id": item_id, **fresh}]}),
               ("new child", {"batch_id": "again-child", "declarations": [
                   {"id": "again-parent", "summary": "holds it", **fresh, "children": [{"id": item_id, **fresh}]}]})]
    leaves = [i for i, item in state.items.items() if item["status"] == "active" and item["parent"] is None
              and not item["ever_had_children"] and i != item_id]
    if len(leaves) >= 2:
        batches.append(("merge result", {"batch_id": "again-merge", "declarations": [
            {"id": item_id, "relation": f"merges:[{leaves[0]}, {leaves[1]}]", **fresh}]}))
    return batches


def check_ids_stay_taken(state, now: str, where: str) -> None:
    for item_id, item in state.items.items():
        for how, batch in _creations_of(state, item_id):
            outcome = apply_batch(state, batch, actor="agent", now=now)
            assert isinstance(outcome, Rejected), \
                f"{where}: {item['status']} {item_id} was created again as a {how}"
            codes = [entry["code"] for entry in outcome.document["errors"]]
            assert "item_exists" in codes, f"{where}: {how} {item_id} rejected with {codes}, not item_exists"


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(history=histories(max_steps=16))
def test_an_id_is_never_created_twice(history: History):
    state = empty_state(history.budget)
    created: set[str] = set()
    for index, step in enumerate(history.steps):
        outcome = run_step(state, step)
        if not isinstance(outcome, Accepted):
            continue
        state = outcome.state
        if step.op != "commit":
            continue
        new = [change["item"] for change in outcome.receipt["changes"] if change["op"] == "created"]
        assert not set(new) & created, f"step {index}: created again: {sorted(set(new) & created)}"
        created.update(new)
        check_ids_stay_taken(state, step.args["now"], f"step {index} ({step.note})")
    if any(item["status"] != "active" for item in state.items.values()):
        note_event("a history with withdrawn or merged ids")


def test_withdrawn_and_merged_ids_are_never_created_again():
    """Every status, every way of creating: the deterministic case of the property above."""
    history = History(64, [
        _commit(0, "k1", [_item("a"), _item("b", "low"), _item("c", "low"), _item("d", "low"),
                          _item("p", summary="parent", children=[_item("k")])]),
        _commit(1, "k2", [{"id": "a", "relation": "withdraw", "reason": "done"},
                          {**_item("bc", "low"), "relation": "merges:[b, c]"}]),
        _commit(2, "k3", [{"id": "p", "relation": "withdraw", "reason": "done"}]),
    ])
    _records, final, _ = check_history(history)
    assert {item["status"] for item in final.items.values()} == {"active", "withdrawn", "merged"}
    check_ids_stay_taken(final, _at(3), "after withdraws and a merge")
