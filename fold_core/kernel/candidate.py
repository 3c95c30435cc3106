"""Building the candidate state of a batch (contract §3.3–§3.5, §4).

Applied declarations are executed in document order, depth first, against an
overlay of the state before the batch. The overlay records, for every item,
its first position and final op in the receipt's ``changes``; items whose only
difference is bookkeeping (``ever_had_children``) are tracked apart.

Rules kept here: a patch whose business fields (Π) are all equal changes
nothing (no ``updated_at``, no reason stored); the same instant in another
spelling keeps the stored text; a withdraw cascades to every active
descendant that no other declaration names, continuing below named ones and
stopping at descendants the batch withdraws itself.
"""

from __future__ import annotations

from collections.abc import Callable

from fold_core.kernel.declarations import TOP, Declaration
from fold_core.kernel.fields import merge_sources, same_instant, same_sources
from fold_core.shares import derive_share
from fold_core.state import PI_FIELDS, State
from fold_core.table import Table

__all__ = ["Candidate"]


def _nothing(_key: str) -> None:
    return None


class Candidate:
    """The state after the batch, as an overlay; read it with ``get`` / ``active_members``."""

    def __init__(self, state: State, now: str, named: dict[str, str]) -> None:
        self.state = state
        self.budget = state.budget
        self.now = now
        self.named = named  # id -> relation word of the declaration naming it ("source" for merge sources)
        self.overlay: dict[str, dict] = {}
        self.ops: dict[str, str] = {}  # Π-changed items: id -> final op, in receipt order
        self.bookkeeping: set[str] = set()
        self.new_in_layer: dict[str | None, list[str]] = {}  # became active in this batch
        self._members: dict[str | None, list[dict]] = {}
        self._used: dict[str | None, int] = {}
        # The state's item table read without a method call per item: a layer's members are
        # looked up on every batch. ``top`` shadows ``base`` (see fold_core.table); what neither
        # holds (an archived item) goes through the table itself.
        items = state.items
        self._top_get: Callable[[str], dict | None]
        self._base_get: Callable[[str], dict | None]
        if isinstance(items, Table):
            self._top_get, self._base_get = items.top.get, items.base.get
        else:
            self._top_get, self._base_get = _nothing, items.get

    # -- reading ------------------------------------------------------

    def get(self, item_id: str) -> dict | None:
        found = self.overlay.get(item_id)
        return found if found is not None else self.state.items.get(item_id)

    def item(self, item_id: str) -> dict:
        """An item the candidate holds (one the batch changed, or a checked target): KeyError when none."""
        found = self.get(item_id)
        if found is None:
            raise KeyError(item_id)
        return found

    def is_active(self, item_id: str | None) -> bool:
        item = self.get(item_id) if item_id is not None else None
        return item is not None and item["status"] == "active"

    def active_members(self, layer: str | None) -> list[dict]:
        """Active items of a layer in the candidate (unordered; cached until the next write)."""
        cached = self._members.get(layer)
        if cached is not None:
            return cached
        before = self.state.active.get(layer, ())
        overlay, items = self.overlay, self.state.items
        in_overlay, top_get, base_get = overlay.get, self._top_get, self._base_get
        # Values are non-empty dicts, never None: ``or`` falls through only when a map lacks the id.
        members = [in_overlay(item) or top_get(item) or base_get(item) or items[item] for item in before]
        members.extend(overlay[item] for item in self.new_in_layer.get(layer, ()))
        members = [item for item in members if item["status"] == "active"]
        self._members[layer] = members
        return members

    def used(self, layer: str | None) -> int:
        """The shares a layer's active items hold in the candidate (cached until the next write)."""
        used = self._used.get(layer)
        if used is None:
            used = self._used[layer] = sum(item["share"] for item in self.active_members(layer))
        return used

    # -- writing ------------------------------------------------------

    def _put(self, item: dict, op: str | None) -> None:
        item_id = item["id"]
        if item["status"] == "active" and item_id not in self.state.active.get(item["parent"], ()):
            joined = self.new_in_layer.setdefault(item["parent"], [])
            if item_id not in joined:
                joined.append(item_id)  # created or restored in this batch
        self.overlay[item_id] = item
        self._members.clear()
        self._used.clear()
        if op is not None:
            self.ops[item_id] = op
            self.bookkeeping.discard(item_id)
        elif item_id not in self.ops:
            self.bookkeeping.add(item_id)

    def _mark_parent(self, parent: str | None) -> None:
        if parent is None:
            return
        record = self.get(parent)
        if record is not None and not record["ever_had_children"]:
            self._put({**record, "ever_had_children": True}, None)

    def _fresh(self, item_id: str, decl: Declaration, parent: str | None, sources: list[dict]) -> dict:
        values, now = decl.values, self.now
        explicit = values.get("share")
        return {
            "id": item_id, "parent": parent, "status": "active",
            "title": values.get("title"), "summary": values.get("summary"),
            "weight": values["weight"], "kind": values["kind"],
            "explicit_share": explicit, "share": derive_share(values["weight"], explicit, self.budget),
            "reason": values.get("reason"),
            "due_at": values.get("due_at"), "stale_after": values.get("stale_after"),
            "sources": sources,
            "created_at": now, "updated_at": now, "status_at": now,
            "merged_into": None, "withdrawn_with": None, "ever_had_children": False,
        }

    def apply(self, decl: Declaration) -> None:
        """Execute one applied declaration (it has an id and a relation)."""
        item_id, relation = decl.id, decl.relation
        if item_id is None or relation is None:
            raise ValueError("only an applied declaration is executed")
        word = relation.word
        if word == "new":
            parent = None if decl.list_parent == TOP else decl.list_parent
            self._put(self._fresh(item_id, decl, parent, decl.values.get("sources", [])), "created")
            self._mark_parent(parent)
        elif word == "supersedes":
            self._patch(item_id, decl)
        elif word == "merges":
            self._merge(item_id, decl, relation.sources)
        else:
            self._withdraw(item_id, decl)

    def _patch(self, item_id: str, decl: Declaration) -> None:
        stored = self.item(item_id)
        values = decl.values
        patched = dict(stored)
        for key in ("title", "summary", "weight", "kind"):
            if key in values:
                patched[key] = values[key]
        if "share" in values:
            patched["explicit_share"] = values["share"]
        patched["share"] = derive_share(patched["weight"], patched["explicit_share"], self.budget)
        for key in ("due_at", "stale_after"):
            if key in values and not same_instant(values[key], stored[key]):
                patched[key] = values[key]
        if "sources" in values and not same_sources(values["sources"], stored["sources"]):
            patched["sources"] = values["sources"]
        restoring = stored["status"] == "withdrawn"
        if restoring:
            patched.update(status="active", withdrawn_with=None)
        if all(patched[key] == stored[key] for key in PI_FIELDS):
            return  # not a change: no updated_at, no revision, reason not stored
        patched["updated_at"] = self.now
        if restoring:
            patched["status_at"] = self.now
        if "reason" in values:
            patched["reason"] = values["reason"]
        self._put(patched, "restored" if restoring else "updated")

    def _merge(self, item_id: str, decl: Declaration, merged: tuple[str, ...]) -> None:
        sources = [self.item(source) for source in merged]
        parent = sources[0]["parent"]
        inherited = merge_sources(decl.values.get("sources", []), [item["sources"] for item in sources])
        self._put(self._fresh(item_id, decl, parent, inherited), "created")
        for item in sources:
            self._put({**item, "status": "merged", "merged_into": item_id,
                       "status_at": self.now, "updated_at": self.now}, "merged")

    def _withdraw(self, item_id: str, decl: Declaration) -> None:
        target = self.item(item_id)
        withdrawn = {**target, "status": "withdrawn", "status_at": self.now, "updated_at": self.now}
        if "reason" in decl.values:
            withdrawn["reason"] = decl.values["reason"]
        self._put(withdrawn, "withdrawn")
        self._cascade(item_id, item_id)

    def _cascade(self, parent: str, root: str) -> None:
        members = set(self.state.active.get(parent, ())) | set(self.new_in_layer.get(parent, ()))
        for child_id in sorted(members):
            word = self.named.get(child_id)
            if word == "withdraw":
                continue  # that withdraw covers its own subtree
            child = self.get(child_id)
            if child is None or child["status"] != "active":
                continue
            if word is None:
                self._put({**child, "status": "withdrawn", "withdrawn_with": root,
                           "status_at": self.now, "updated_at": self.now}, "withdrawn")
            self._cascade(child_id, root)
