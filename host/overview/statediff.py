"""What changed between two state documents (contract §13 "Diff").

``item_tree`` indexes a §8 state document: every active item with its layer
(parent id, None = root) and level (1 = root items). ``state_diff`` compares
the baseline at event_seq b with the current state at c, both projected at the
same ``now``, endpoint to endpoint (not event by event):

* the same id is the same item; a new id is ``new`` (created, a merge result,
  or restored since b);
* an item active at both ends is ``changed`` only when one of its business
  fields changed (title, summary, weight, kind, share and its override, due,
  stale, sources) — a new rank, a moved position, new annotations, a new
  reason or the passing of time are not changes;
* an item active at b and not at c is ``withdrawn`` or ``merged`` (with the
  item it was merged into), and keeps its baseline share so that it can be
  drawn outside the current rectangle at the same scale.

The whole diff is computed before any selection, so that render.json can
also name the changes it did not draw. Pure functions over JSON-shaped data.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["CHANGE_FIELDS", "TreeEntry", "item_tree", "state_diff"]

CHANGE_FIELDS = ("title", "summary", "weight", "kind", "share", "share_override", "due_at", "stale_after",
                 "sources")


class TreeEntry:
    """One active item of a state document: its view, layer and level."""

    __slots__ = ("view", "parent", "level")

    def __init__(self, view: Mapping, parent: str | None, level: int) -> None:
        self.view, self.parent, self.level = view, parent, level


def item_tree(document: Mapping) -> dict[str, TreeEntry]:
    """Every expanded active item of a §8 document (root or ``item`` form), depth first in rank order."""
    entries: dict[str, TreeEntry] = {}

    def walk(layer: Mapping | None, parent: str | None, level: int) -> None:
        if not layer:
            return
        for view in layer.get("items", ()):
            entries[view["id"]] = TreeEntry(view, parent, level)
            walk(view.get("children"), view["id"], level + 1)

    if "root" in document:
        walk(document["root"], None, 1)
    else:
        # The ``--item`` form: the item stands at level 1 in its own layer.
        view = document["item"]
        entries[view["id"]] = TreeEntry(view, None, 1)
        walk(view.get("children"), view["id"], 2)
    return entries


def state_diff(baseline: Mapping, current: Mapping, gone: Mapping[str, Mapping]) -> dict[str, dict]:
    """``{id: {"id", "op", "layer", "share", ...}}`` from ``baseline`` to ``current``.

    ``gone`` gives, for items active at the baseline and not now, their
    current ``status`` and ``merged_into``.
    """
    before, after = item_tree(baseline), item_tree(current)
    changes: dict[str, dict] = {}
    for item_id, entry in after.items():
        old = before.get(item_id)
        if old is None:
            changes[item_id] = {"id": item_id, "op": "new", "layer": entry.parent, "share": entry.view["share"]}
        else:
            fields = [name for name in CHANGE_FIELDS if old.view.get(name) != entry.view.get(name)]
            if fields:
                changes[item_id] = {"id": item_id, "op": "changed", "layer": entry.parent,
                                    "share": entry.view["share"], "fields": fields}
    for item_id, entry in before.items():
        if item_id in after:
            continue
        status = gone.get(item_id, {})
        op = "merged" if status.get("status") == "merged" else "withdrawn"
        change = {"id": item_id, "op": op, "layer": entry.parent, "share": entry.view["share"]}
        if op == "merged":
            change["merged_into"] = status.get("merged_into")
        changes[item_id] = change
    return changes
