"""The state of a PostgreSQL store, read from its cached-state tables (contract §6.2, §8).

A session never replays the whole history. A write starts from ``load_state``:
the store's head row and its active items (what the kernel checks budgets
and layers against); every other item and every annotation stays in the
database and is looked up one at a time through the ``Table`` sources
``ItemRows`` and ``NoteRows``, as the file store looks into its snapshot
archive. A state document starts from ``view_state``: the active items, the
most recent not-active ones the document lists, the annotations it shows
(pending, or resolving to an active item) and the items on their merge
chains — the same document as from the whole state, at a cost that does not
grow with the store's age.

The tables hold the *current* images; a state object may outlive its
session (a long-lived process keeps it, ``Store.state()`` returns it). The
sources therefore answer *as of* the event_seq they were made for: an item
changed since (``last_seq`` beyond it) is read from the last record at or
before that event_seq that holds its post-image; an item or an annotation
created since does not exist yet; an annotation acknowledged since is still
saved. Everything changed between that event_seq and the state's own is in
the state's memory, so the answers are exact for the state.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from fold_core.errors import StoreCorrupt
from fold_core.state import State
from fold_core.table import Table

if TYPE_CHECKING:
    from psycopg import Cursor

__all__ = ["Head", "ItemRows", "NoteRows", "Query", "load_state", "note_number", "parse_record", "view_state",
           "whole_state"]

SAVED_FIELDS = {"status": "saved", "acknowledged_revision": None, "acknowledged_at": None,
                "acknowledged_by": None}


class Query(Protocol):
    """Run one statement in the session's transaction (``PostgresRecorder.query``)."""

    def __call__(self, sql: str, params: Sequence[Any] | None = None, /) -> Cursor[tuple[Any, ...]]: ...


class Head:
    """A store's row in ``fold_stores``: its identity, budget and the head of its cached state."""

    __slots__ = ("id", "budget", "created_at", "event_seq", "revision", "last_checked_at", "item_total",
                 "inactive_total", "annotation_total", "activations")
    COLUMNS = ", ".join(__slots__)

    def __init__(self, id: int, budget: int, created_at: str | None, event_seq: int, revision: int,
                 last_checked_at: str | None, item_total: int, inactive_total: int, annotation_total: int,
                 activations: int) -> None:
        self.id, self.budget, self.created_at, self.event_seq, self.revision = (
            id, budget, created_at, event_seq, revision)
        self.last_checked_at, self.item_total, self.inactive_total = last_checked_at, item_total, inactive_total
        self.annotation_total, self.activations = annotation_total, activations

    def meta(self) -> dict:
        """The store's identity as ``meta.json`` holds it for a file store."""
        return {"format": "fold-store", "version": 1, "budget": self.budget, "created_at": self.created_at}


def note_number(note_id: str) -> int:
    """``n`` of an annotation id ``ann-n`` (annotation ids are assigned in save order)."""
    return int(note_id[4:])


def parse_record(event_seq: int, body: str) -> dict:
    """A record row's body as the record (StoreCorrupt when it is not one)."""
    try:
        record = json.loads(body)
    except ValueError as error:
        raise StoreCorrupt(f"record {event_seq} does not parse ({error})", line=event_seq) from None
    if type(record) is not dict or record.get("event_seq") != event_seq:
        raise StoreCorrupt(f"record {event_seq} holds another event_seq", line=event_seq)
    return record


def _parse(body: str, what: str) -> Any:
    try:
        return json.loads(body)
    except ValueError as error:
        raise StoreCorrupt(f"the cached state of {what} does not parse ({error}): run `foldctl verify`") from None


class ItemRows:
    """``fold_items`` of one store as a ``Table`` source, exact as of ``version`` (see the module docstring)."""

    __slots__ = ("query", "store", "version")

    def __init__(self, query: Query, store: int, version: int) -> None:
        self.query, self.store, self.version = query, store, version

    def get(self, key: object) -> dict | None:
        if type(key) is not str:
            return None
        row = self.query("SELECT body, first_seq, last_seq FROM fold_items WHERE store = %s AND id = %s",
                         (self.store, key)).fetchone()
        if row is None or row[1] > self.version:
            return None
        if row[2] <= self.version:
            return _parse(row[0], f"item {key}")
        return self._image_at(key)

    def _image_at(self, key: str) -> dict | None:
        row = self.query(
            "SELECT r.event_seq, r.body FROM fold_item_records x JOIN fold_records r"
            " ON r.store = x.store AND r.event_seq = x.event_seq"
            " WHERE x.store = %s AND x.item = %s AND x.image AND x.event_seq <= %s"
            " ORDER BY x.event_seq DESC LIMIT 1", (self.store, key, self.version)).fetchone()
        if row is None:
            return None
        for change in _parse(row[1], f"record {row[0]}").get("changes", ()):
            if change["item"]["id"] == key:
                return change["item"]
        raise StoreCorrupt(f"record {row[0]} is indexed as holding {key} but does not", line=row[0])

    def load(self) -> dict:
        rows = self.query("SELECT id, body, last_seq FROM fold_items WHERE store = %s AND first_seq <= %s",
                          (self.store, self.version)).fetchall()
        return {key: _parse(body, f"item {key}") if last <= self.version else self._image_at(key)
                for key, body, last in rows}


class NoteRows:
    """``fold_annotations`` of one store as a ``Table`` source, exact as of ``version``."""

    __slots__ = ("query", "store", "version", "total")

    def __init__(self, query: Query, store: int, version: int, total: int) -> None:
        self.query, self.store, self.version, self.total = query, store, version, total

    def get(self, key: object) -> dict | None:
        if type(key) is not str or not key.startswith("ann-") or not key[4:].isdigit() \
                or note_number(key) > self.total:
            return None
        row = self.query("SELECT body, ack_seq FROM fold_annotations WHERE store = %s AND id = %s",
                         (self.store, key)).fetchone()
        return None if row is None else self._as_of(key, *row)

    def _as_of(self, key: str, body: str, ack_seq: int | None) -> dict:
        note = _parse(body, f"annotation {key}")
        if ack_seq is not None and ack_seq > self.version:
            note = {**note, **SAVED_FIELDS}
        return note

    def load(self) -> dict:
        rows = self.query("SELECT id, body, ack_seq FROM fold_annotations WHERE store = %s AND number <= %s"
                          " ORDER BY number", (self.store, self.total)).fetchall()
        return {key: self._as_of(key, body, ack) for key, body, ack in rows}


def load_state(query: Query, head: Head) -> State:
    """The state at the head: active items in memory, the rest behind the sources."""
    rows = query("SELECT id, parent, body FROM fold_items WHERE store = %s AND status = 'active'"
                 " ORDER BY active_order", (head.id,)).fetchall()
    items: dict = {}
    active: dict = {}
    for key, parent, body in rows:
        items[key] = _parse(body, f"item {key}")
        active.setdefault(parent, []).append(key)
    return State(
        budget=head.budget, revision=head.revision, event_seq=head.event_seq, last_checked_at=head.last_checked_at,
        items=Table(items, size=head.item_total, source=ItemRows(query, head.id, head.event_seq)),
        annotations=Table({}, size=head.annotation_total,
                          source=NoteRows(query, head.id, head.event_seq, head.annotation_total)),
        active={layer: tuple(members) for layer, members in active.items()},
        inactive_total=head.inactive_total,
    )


def whole_state(query: Query, head: Head, state: State) -> State:
    """``state`` (at the head) with every item and annotation in memory."""
    items = ItemRows(query, head.id, head.event_seq).load()
    notes = NoteRows(query, head.id, head.event_seq, head.annotation_total).load()
    return state.replace(items=Table(items), annotations=Table(notes))


def view_state(query: Query, head: Head, state: State, *, item: str | None, not_active: int) -> State:
    """What a state document with this ``not_active`` bound (and ``item``) reads: see the module docstring."""
    store = head.id
    items = {key: state.items[key] for members in state.active.values() for key in members}
    recent = query("SELECT id, body FROM fold_items WHERE store = %s AND status <> 'active'"
                   " ORDER BY status_key DESC, id DESC LIMIT %s", (store, max(not_active, 0))).fetchall()
    for key, body in recent:
        items[key] = _parse(body, f"item {key}")
    notes = {}
    rows = query("SELECT n.id, n.body FROM fold_annotations n WHERE n.store = %s AND (n.status = 'saved'"
                 " OR EXISTS (SELECT 1 FROM fold_items i WHERE i.store = n.store AND i.id = n.resolved"
                 " AND i.status = 'active')) ORDER BY n.number", (store,)).fetchall()
    for key, body in rows:
        notes[key] = _parse(body, f"annotation {key}")
    wanted = {note["item"] for note in notes.values()} | ({item} if item is not None else set())
    wanted -= items.keys()
    if wanted:
        # The merge chains of those annotations (and the item asked for), in one query.
        chain = query(
            "WITH RECURSIVE chain(id) AS (SELECT unnest(%s::text[]) COLLATE \"C\""
            " UNION SELECT i.merged_into FROM fold_items i JOIN chain c ON i.id = c.id"
            " WHERE i.store = %s AND i.merged_into IS NOT NULL)"
            " SELECT i.id, i.body FROM fold_items i JOIN chain c ON i.id = c.id WHERE i.store = %s",
            (sorted(wanted), store, store)).fetchall()
        for key, body in chain:
            items.setdefault(key, _parse(body, f"item {key}"))
    return state.replace(items=Table(items), annotations=Table(notes))
