"""Narrowing a §8 state document for a model: keep the items of a minimum weight or of some kinds.

The filter applies in every layer, as the overview's does: an item left out
takes its children layer with it. Each layer keeps its ``budget``, ``used``
and ``free`` (hidden shares are not free room); the document gains
``filter: {min_weight, kinds, omitted}`` with the number of active items
left out. Pure: no store, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from fold_core.shares import WEIGHTS

__all__ = ["filter_state"]


def filter_state(document: dict, min_weight: str | None, kinds: Sequence[str] | None) -> dict:
    """``document`` with only the admitted items (unchanged, without ``filter``, when there is no filter)."""
    if min_weight is None and not kinds:
        return document
    ceiling = WEIGHTS.index(min_weight) if min_weight is not None else len(WEIGHTS)
    wanted = frozenset(kinds) if kinds else None

    def admits(item: dict) -> bool:
        return WEIGHTS.index(item["weight"]) <= ceiling and (wanted is None or item["kind"] in wanted)

    omitted = 0

    def layer(view: dict) -> dict:
        nonlocal omitted
        if "items" not in view:
            return view
        kept = []
        for item in view["items"]:
            if admits(item):
                children = item.get("children")
                kept.append({**item, "children": layer(children) if children is not None else None})
            else:
                omitted += 1 + _count(item.get("children"))
        return {**view, "items": kept}

    narrowed = dict(document)
    if "root" in narrowed:
        narrowed["root"] = layer(narrowed["root"])
    narrowed["filter"] = {"min_weight": min_weight, "kinds": sorted(wanted) if wanted else None, "omitted": omitted}
    return narrowed


def _count(view: dict | None) -> int:
    """Active items in a layer and below (a layer past ``depth`` only has its ``count``)."""
    if view is None:
        return 0
    if "items" not in view:
        return view.get("count", 0)
    return sum(1 + _count(item.get("children")) for item in view["items"])
