"""Final-state checks on the candidate (contract §3.4, §3.5 step 4 of the error order).

Order: ``layer_budget`` (root first, then by parent id; its ``items`` are the
layer's active items in rank order), ``inactive_parent`` (document order),
parent summary (by id), ``explicit_withdraw_required`` (document order of the
parents). Only layers and items the batch touched can break an invariant the
state before it kept, so only those are checked.
"""

from __future__ import annotations

from fold_core.kernel.candidate import Candidate
from fold_core.kernel.declarations import Declaration
from fold_core.kernel.outcome import error
from fold_core.shares import rank_items

__all__ = ["final_state_errors", "layer_key", "touched_layers"]


def layer_key(layer: str | None) -> tuple[bool, str]:
    """Root first, then by parent id."""
    return (layer is not None, layer or "")


def touched_layers(candidate: Candidate) -> list[str | None]:
    """Every layer an item of the batch's changes sits in, in receipt order."""
    layers = {candidate.item(item)["parent"] for item in candidate.ops}
    return sorted(layers, key=layer_key)


def final_state_errors(candidate: Candidate, declarations: list[Declaration]) -> list[dict]:
    budget = candidate.budget
    errors: list[dict] = []
    for layer in touched_layers(candidate):
        used = candidate.used(layer)
        if used > budget:
            members = candidate.active_members(layer)
            name = "root" if layer is None else f"children of {layer}"
            errors.append(error(
                "layer_budget", f"layer {name}: budget {budget}, declared {used}, over by {used - budget}",
                layer=layer, budget=budget, declared=used, over=used - budget,
                items=[{"id": item["id"], "weight": item["weight"], "share": item["share"]}
                       for item in rank_items(members)]))
    # A withdraw cascades to every unnamed descendant, so only an item the batch names
    # (applied or not: a named child is skipped by the cascade) can stay active under
    # an inactive parent. Document order = order of first mention.
    for item_id in candidate.named:
        item = candidate.get(item_id)
        if item is None or item["status"] != "active":
            continue
        parent = item["parent"]
        if parent is not None and not candidate.is_active(parent):
            errors.append(error("inactive_parent", f"{item_id} would be active under {parent}, "
                                f"which is {candidate.item(parent)['status']}; restore {parent} first",
                                item=item_id, parent=parent))
    applied = [decl for decl in declarations if decl.applied]
    bad_summaries = {decl.id for decl in declarations if decl.bad_summary}
    suspects = set(candidate.ops)
    suspects.update(candidate.item(item)["parent"] for item in candidate.ops)
    suspects.discard(None)
    for item_id in sorted(suspects - bad_summaries):
        item = candidate.item(item_id)
        if item["status"] == "active" and item["summary"] is None and candidate.active_members(item_id):
            errors.append(error("invalid_field", f"{item_id} has active children, so it needs a summary "
                                "that reads on its own", item=item_id, field="summary"))
    for decl in applied:
        if not decl.lists_children:
            continue
        listed = {child.id for child in decl.children or () if child.id is not None
                  and not (child.relation is not None and child.relation.word == "withdraw")}
        omitted = sorted(item["id"] for item in candidate.active_members(decl.id) if item["id"] not in listed)
        if omitted:
            errors.append(error(
                "explicit_withdraw_required",
                f"the children list of {decl.id} drops {', '.join(omitted)}; withdraw each of them "
                "explicitly (with a reason), or patch a single child at top level without the parent's list",
                parent=decl.id, omitted_children=omitted))
    return errors
