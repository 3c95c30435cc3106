"""The state document and the time projection V(S, now) (contract §2, §8).

Computed at read time only, never stored: ranks, ``used``/``free``, and the
signed compact durations ``age``, ``since_update``, ``until_due``,
``until_stale``. ``last_seen_at`` and ``since_seen`` are always null — Fold
never infers that the user has read anything. ``not_active`` holds only the
most recent entries (200 by default): the index grows forever, a state read
must not.
"""

from __future__ import annotations

import heapq
from typing import overload

from fold_core.kernel.decision import frame_view
from fold_core.kernel.outcome import Rejected, error, rejection
from fold_core.shares import rank_items
from fold_core.state import State, resolve_item
from fold_core.timefmt import duration_between, instant_key

__all__ = ["NOT_ACTIVE_DEFAULT", "state_document"]

SCHEMA = "fold.state/1"
NOT_ACTIVE_DEFAULT = 200


class _View:
    def __init__(self, state: State, now: str, depth: int | None) -> None:
        self.state = state
        self.now = now
        self.depth = depth
        self.notes: dict[str, list[dict]] = {}
        for note in state.annotations.values():
            self.notes.setdefault(resolve_item(state, note["item"]), []).append(note)

    def members(self, layer: str | None) -> list[dict]:
        items = self.state.items
        return rank_items(items[item] for item in self.state.active.get(layer, ()))

    def layer(self, layer: str | None, level: int) -> dict:
        budget = self.state.budget
        members = self.members(layer)
        used = sum(item["share"] for item in members)
        view = {"budget": budget, "used": used, "free": budget - used}
        if self.depth is not None and level > self.depth:
            view["count"] = len(members)
        else:
            view["items"] = [self.item(item, rank, level) for rank, item in enumerate(members, 1)]
        return view

    def item(self, item: dict, rank: int, level: int) -> dict:
        now = self.now
        has_children = bool(self.state.active.get(item["id"]))
        return {
            "id": item["id"], "title": item["title"], "summary": item["summary"],
            "weight": item["weight"], "share": item["share"],
            "share_override": item["explicit_share"] is not None,
            "kind": item["kind"], "reason": item["reason"], "rank": rank,
            "due_at": item["due_at"], "stale_after": item["stale_after"],
            "created_at": item["created_at"], "updated_at": item["updated_at"],
            "age": duration_between(now, item["created_at"]),
            "since_update": duration_between(now, item["updated_at"]),
            "until_due": duration_between(item["due_at"], now),
            "until_stale": duration_between(item["stale_after"], now),
            "last_seen_at": None, "since_seen": None,
            "sources": item["sources"],
            "decision": frame_view(item.get("decision")),
            "annotations": [{"id": note["id"], "text": note["text"], "author": note["author"],
                             "status": note["status"], "created_at": note["created_at"],
                             "acknowledged_revision": note["acknowledged_revision"]}
                            for note in self.notes.get(item["id"], ())],
            "children": self.layer(item["id"], level + 1) if has_children else None,
        }


def _not_active(state: State, bound: int | None) -> tuple[list[dict], int]:
    """The most recent withdrawn/merged entries and the full count.

    The count comes from the state, not from the scan: a store may hand the
    view a state whose item table holds only the active items and the recent
    inactive ones (``inactive_total`` still counts them all).
    """
    if bound == 0:  # only the count: no scan of the item table (a board asks for none on every request)
        return [], state.inactive_total
    inactive = [item for item in state.items.values() if item["status"] != "active"]
    key = lambda item: (instant_key(item["status_at"]), item["id"])  # noqa: E731
    if bound is None or bound >= len(inactive):
        chosen = sorted(inactive, key=key)
    else:
        chosen = sorted(heapq.nlargest(max(bound, 0), inactive, key=key), key=key)
    entries = [{"id": item["id"], "title": item["title"], "status": item["status"],
                "parent": item["parent"], "at": item["status_at"], "reason": item["reason"],
                "merged_into": item["merged_into"], "withdrawn_with": item["withdrawn_with"]}
               for item in chosen]
    return entries, state.inactive_total


def _pending(state: State) -> list[dict]:
    return [{"id": note["id"], "item": note["item"], "resolved_item": resolve_item(state, note["item"]),
             "text": note["text"], "author": note["author"], "created_at": note["created_at"]}
            for note in state.annotations.values() if note["status"] == "saved"]


@overload
def state_document(state: State, now: str, *, item: None = None, depth: int | None = None,
                   not_active: int | None = NOT_ACTIVE_DEFAULT) -> dict: ...


@overload
def state_document(state: State, now: str, *, item: str | None, depth: int | None = None,
                   not_active: int | None = NOT_ACTIVE_DEFAULT) -> dict | Rejected: ...


def state_document(state: State, now: str, *, item: str | None = None, depth: int | None = None,
                   not_active: int | None = NOT_ACTIVE_DEFAULT) -> dict | Rejected:
    """The §8 document at ``now``; with ``item``, that item's view in place of ``root`` (or the rejection
    when that item is not active)."""
    view = _View(state, now, depth)
    document: dict = {"schema": SCHEMA, "now": now, "revision": state.revision,
                      "event_seq": state.event_seq, "budget": state.budget,
                      "last_checked_at": state.last_checked_at}
    if item is None:
        document["root"] = view.layer(None, 1)
    else:
        record = state.items.get(item)
        if record is None:
            return rejection([error("item_not_found", f"no item {item}", item=item)], revision=state.revision)
        if record["status"] == "merged":
            return rejection([error("item_merged", f"{item} was merged into {record['merged_into']}",
                                    item=item, merged_into=record["merged_into"])], revision=state.revision)
        if record["status"] != "active":
            return rejection([error("item_inactive", f"{item} is {record['status']}",
                                    item=item, status=record["status"])], revision=state.revision)
        rank = [member["id"] for member in view.members(record["parent"])].index(item) + 1
        document["item"] = view.item(record, rank, 1)
    document["not_active"], document["not_active_total"] = _not_active(state, not_active)
    document["pending_annotations"] = _pending(state)
    return document
