"""The baseline editor's working model: what the state shows, the planned changes, the budget fit.

* ``Known`` indexes the §8 state document of the input: active items with their
  layer, the not-active index, the budget;
* ``Change`` is one planned declaration (new, patch of an active item, or
  restore of a withdrawn one) with the events it rests on;
* ``fit_budget`` makes every layer the plan touches fit its budget B with the
  contract's share table (§2), so the kernel never rejects the batch for
  ``layer_budget``: first it withdraws the layer's lowest-ranked items that the
  batch does not touch (never an ancestor of a changed item), then lowers the
  batch's own items to trace, and last drops the batch's new or restored items
  (their events are deferred). Dropping those always suffices: what is left
  uses no more than the layer did before, and the state it came from was valid.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fold_core.shares import derive_share, rank_key

__all__ = ["Change", "Known", "Fit", "fit_budget"]


class Known:
    """What the input's state document shows."""

    def __init__(self, state: Mapping[str, Any]) -> None:
        self.budget: int = int(state.get("budget") or (state.get("root") or {}).get("budget") or 64)
        self.active: dict[str, dict] = {}
        self.parent: dict[str, str | None] = {}
        self._walk(state.get("root"), None)
        self.not_active: dict[str, dict] = {
            entry["id"]: entry for entry in state.get("not_active") or () if isinstance(entry, Mapping) and "id" in entry}

    def _walk(self, layer: Mapping[str, Any] | None, parent: str | None) -> None:
        for view in (layer or {}).get("items") or ():  # a depth-limited layer has a count, no items
            self.active[view["id"]] = view
            self.parent[view["id"]] = parent
            self._walk(view.get("children"), view["id"])

    def ancestors(self, item_id: str | None) -> list[str]:
        """The active ancestors of an item (or of a layer's parent, itself included)."""
        found = []
        while item_id is not None and item_id in self.parent and item_id not in found:
            found.append(item_id)
            item_id = self.parent[item_id]
        return found

    def known_ids(self) -> set[str]:
        return set(self.active) | set(self.not_active)


@dataclass
class Change:
    """One planned declaration."""

    id: str
    mode: str  # "new" | "patch" | "restore"
    parent: str | None
    weight: str | None
    kind: str | None
    base_weight: str | None = None  # the stored weight (patch); None when unknown (restore) or absent (new)
    share_override: int | None = None
    due_at: str | None = None
    title: str | None = None
    summary: str | None = None  # None: keep (never clears)
    base_sources: list[dict] = field(default_factory=list)
    new_sources: list[dict] = field(default_factory=list)
    reason: str | None = None
    lowered_reason: str | None = None
    events: list[str] = field(default_factory=list)  # events this change rests on (all get "used")

    def share(self, budget: int) -> int:
        return self.share_override if self.share_override is not None else derive_share(self.weight, None, budget)

    def rank_entry(self, budget: int, now: str) -> dict:
        return {"id": self.id, "share": self.share(budget), "weight": self.weight, "due_at": self.due_at,
                "updated_at": now}


@dataclass
class Fit:
    """What the budget fit decided."""

    withdrawn: list[str] = field(default_factory=list)
    demoted: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _entry(view: Mapping[str, Any]) -> dict:
    return {"id": view["id"], "share": view["share"], "weight": view["weight"], "due_at": view.get("due_at"),
            "updated_at": view["updated_at"]}


def fit_budget(known: Known, changes: dict[str, Change], now: str) -> Fit:
    """Adjust ``changes`` in place (demote, drop) and choose withdrawals so every layer fits."""
    budget, fit = known.budget, Fit()
    protected = {a for change in changes.values() for a in known.ancestors(change.parent)}
    touched = sorted({c.parent for c in changes.values()}, key=lambda p: (p is not None, p or ""))
    for parent in touched:
        layer = {i: _entry(v) for i, v in known.active.items() if known.parent[i] == parent}
        for change in changes.values():
            if change.parent == parent:
                layer[change.id] = change.rank_entry(budget, now)

        def over() -> int:
            return sum(entry["share"] for entry in layer.values()) - budget

        untouched = sorted((e for i, e in layer.items() if i not in changes and i not in protected), key=rank_key)
        while over() > 0 and untouched:
            victim = untouched.pop()
            del layer[victim["id"]]
            fit.withdrawn.append(victim["id"])
        own = sorted((e for i, e in layer.items() if i in changes), key=rank_key)
        for entry in reversed(own):
            change = changes[entry["id"]]
            if over() <= 0:
                break
            if change.share_override is None and change.weight != "trace":
                change.weight = "trace"
                layer[change.id] = change.rank_entry(budget, now)
                fit.demoted.append(change.id)
        for entry in reversed(own):
            change = changes[entry["id"]]
            if over() <= 0:
                break
            if change.mode != "patch":
                del layer[change.id]
                del changes[change.id]
                fit.dropped.append(change.id)
    fit.demoted = [i for i in fit.demoted if i in changes]
    return fit
