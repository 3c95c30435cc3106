"""The state S and the replay function T (contract §2, §4, §6.1).

``State`` is frozen data: accepted batches produce a new ``State``; nothing
mutates one in place. Item records and annotations are plain JSON-shaped dicts
exactly as they appear in records and snapshots (the post-images of §6.1), so
replay costs no conversion. The item and annotation tables are persistent
maps (``fold_core.table``): a new state shares them and copies only what the
record changed, so a commit does not cost more as the history grows.

``apply_record`` is T: it applies a record's post-images, acks and
``last_checked_at`` exactly as recorded — it never re-validates, never reads a
clock. ``replay(records, start)`` is ``foldl(T, start, records)``; the segment
identity ``replay(V, replay(U, S0)) == replay(U ++ V, S0)`` holds because T
depends only on the state and the record.

Invariants every accepted state keeps (checked by the property tests):
each layer's active shares sum to ≤ budget; ids are never reused; no active
item sits under an inactive parent; an active item with an active child has a
summary; ``event_seq`` counts records, ``revision`` counts business changes and
new acknowledgements.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from fold_core.table import derive

__all__ = ["Replayer", "State", "apply_record", "empty_state", "replay", "resolve_item"]

ITEM_FIELDS = (
    "id", "parent", "status", "title", "summary", "weight", "kind", "explicit_share", "share",
    "reason", "due_at", "stale_after", "sources", "created_at", "updated_at", "status_at",
    "merged_into", "withdrawn_with", "ever_had_children",
)
PI_FIELDS = (
    "id", "parent", "status", "title", "summary", "weight", "kind", "explicit_share",
    "due_at", "stale_after", "sources", "merged_into",
)


class State:
    """Everything the kernel needs to decide, and the reads need to answer.

    Frozen by convention and by ``__setattr__``: accepted batches produce a new
    ``State`` (``replace``). A plain slotted class rather than a dataclass so
    that ``foldctl state`` does not pay for importing ``dataclasses``.
    """

    __slots__ = ("budget", "revision", "event_seq", "last_checked_at", "items", "annotations",
                 "active", "inactive_total")

    budget: int
    revision: int
    event_seq: int
    last_checked_at: str | None
    items: Mapping[str, dict]
    annotations: Mapping[str, dict]
    # The ids of the *active* items of each layer (key None = root layer, else
    # the parent id), in the order they became active. Derived from ``items``;
    # kept so that a layer's members are found without scanning every item
    # the store ever held.
    active: Mapping[str | None, tuple[str, ...]]
    # How many items are withdrawn or merged: the state document's
    # ``not_active_total``, known without scanning the whole item table.
    inactive_total: int

    def __init__(self, budget: int, revision: int = 0, event_seq: int = 0, last_checked_at: str | None = None,
                 items: Mapping[str, dict] | None = None, annotations: Mapping[str, dict] | None = None,
                 active: Mapping[str | None, tuple[str, ...]] | None = None, inactive_total: int = 0) -> None:
        values = (budget, revision, event_seq, last_checked_at, {} if items is None else items,
                  {} if annotations is None else annotations, {} if active is None else active, inactive_total)
        for name, value in zip(self.__slots__, values):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"State is frozen; use replace() to change {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, State):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        # copy, deepcopy and pickle rebuild through __init__ (setattr is closed).
        return (State, tuple(getattr(self, name) for name in self.__slots__))

    def __repr__(self) -> str:
        return (f"State(budget={self.budget}, revision={self.revision}, event_seq={self.event_seq}, "
                f"items={len(self.items)}, annotations={len(self.annotations)})")

    def replace(self, **changes: object) -> "State":
        """A copy with ``changes`` applied."""
        values = {name: getattr(self, name) for name in self.__slots__}
        values.update(changes)
        return State(**values)


def empty_state(budget: int) -> State:
    """S0 of a new store."""
    return State(budget=budget)


class Replayer:
    """Folds records into a state (T, record by record); ``freeze`` gives the state.

    The tables are shared, only the changed entries are copied.

    Cost per record: the record's own size (plus one lookup per changed item),
    not the size of the item table.
    """

    __slots__ = ("state", "items", "item_changes", "items_added", "annotations", "note_changes", "notes_added",
                 "active", "revision", "event_seq", "last_checked_at", "inactive_total", "archived")

    def __init__(self, state: State) -> None:
        self.state = state
        self.items = state.items
        self.item_changes: dict[str, dict] = {}
        self.items_added = 0
        self.annotations = state.annotations
        self.note_changes: dict[str, dict] = {}
        self.notes_added = 0
        self.active = dict(state.active)
        self.revision = state.revision
        self.event_seq = state.event_seq
        self.last_checked_at = state.last_checked_at
        self.inactive_total = state.inactive_total
        # Items beyond memory (a snapshot archive on disk): look-ups there are costly.
        self.archived = getattr(state.items, "source", None) is not None

    def _note(self, note_id: str) -> dict | None:
        note = self.note_changes.get(note_id)
        return note if note is not None else self.annotations.get(note_id)

    def apply(self, record: Mapping) -> None:
        kind = record["type"]
        self.event_seq = record["event_seq"]
        if kind == "annotation":
            note = record["annotation"]
            if self._note(note["id"]) is None:
                self.notes_added += 1
            self.note_changes[note["id"]] = {
                **note,
                "status": "saved",
                "acknowledged_revision": None,
                "acknowledged_at": None,
                "acknowledged_by": None,
            }
            return
        changes, active, items = self.item_changes, self.active, self.items
        # The kernel never reuses an id: an item its receipt says it created did not
        # exist before, so it needs no look-up when that would reach an archive on
        # disk. ``foldctl verify`` checks that every created id is new.
        created = _created(record) if self.archived else ()
        changes_get, items_get = changes.get, items.get
        added = inactive = 0
        for change in record["changes"]:
            image = change["item"]
            item_id = image["id"]
            before = changes_get(item_id)
            if before is None and item_id not in created:
                before = items_get(item_id)
            is_active = image["status"] == "active"
            if before is None:
                added += 1
                was_active = False
            else:
                was_active = before["status"] == "active"
                if not was_active:
                    inactive -= 1
            if not is_active:
                inactive += 1
            if was_active != is_active:
                layer = image["parent"]
                members = active.get(layer, ())
                if is_active:
                    active[layer] = members + (item_id,)
                elif item_id in members:
                    at = members.index(item_id)
                    members = members[:at] + members[at + 1:]
                    if members:
                        active[layer] = members
                    else:
                        del active[layer]
            changes[item_id] = image
        self.items_added += added
        self.inactive_total += inactive
        for ack in record["acks"]:
            note = self._note(ack["annotation"])
            if note is None:  # an ack of an annotation never saved: not a record T can apply
                raise KeyError(ack["annotation"])
            self.note_changes[ack["annotation"]] = {
                **note,
                "status": "acknowledged",
                "acknowledged_revision": ack["revision"],
                "acknowledged_at": ack["at"],
                "acknowledged_by": ack["by"],
            }
        self.revision = record["revision"]
        if kind == "checked":
            self.last_checked_at = record["at"]

    def freeze(self) -> State:
        return self.state.replace(
            revision=self.revision,
            event_seq=self.event_seq,
            last_checked_at=self.last_checked_at,
            items=derive(self.items, self.item_changes, self.items_added),
            annotations=derive(self.annotations, self.note_changes, self.notes_added),
            active=self.active,
            inactive_total=self.inactive_total,
        )


def _created(record: Mapping) -> frozenset | tuple:
    """Ids the record's receipt lists as created (none when it has no usable receipt)."""
    receipt = record.get("receipt")
    if receipt is None:
        return ()
    try:
        return frozenset(change["item"] for change in receipt["changes"] if change["op"] == "created")
    except (TypeError, KeyError):
        return ()


def apply_record(state: State, record: Mapping) -> State:
    """T: the state after one accepted record."""
    builder = Replayer(state)
    builder.apply(record)
    return builder.freeze()


def replay(records: Iterable[Mapping], start: State | None = None, *, budget: int | None = None) -> State:
    """``foldl(T, start, records)``; ``start`` defaults to the empty state of ``budget``."""
    if start is None:
        if budget is None:
            raise ValueError("replay needs a start state or a budget")
        start = empty_state(budget)
    builder = Replayer(start)
    for record in records:
        builder.apply(record)
    return builder.freeze()


def resolve_item(state: State, item_id: str) -> str:
    """Follow ``merged_into`` from ``item_id`` to the item that now stands for it."""
    seen = set()
    items = state.items
    while item_id in items and items[item_id]["merged_into"] is not None and item_id not in seen:
        seen.add(item_id)
        item_id = items[item_id]["merged_into"]
    return item_id
