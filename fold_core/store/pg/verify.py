"""``foldctl verify`` on a PostgreSQL store: replay every record, compare the cached state.

The same full check as the file store's (``verify``): every record row
parses, event_seq runs 1, 2, 3 … with no gap, its columns (type, batch_id,
request_digest) agree with its body, and the record-level rules of
``record_checks.RecordChecker`` hold (revisions follow the record types, annotation ids
follow save order, acks name saved annotations, batch_ids are unique, every
post-image is whole, every layer fits its budget). Then the replayed state
is compared with the cached-state tables — the head row, every item row
(image and columns, the active order), every annotation row, and the item
index. The first problem raises ``StoreCorrupt`` naming the record
(``line`` = its event_seq) or the table.

Read-only: one REPEATABLE READ transaction, no lock; writers go on meanwhile.
"""

from __future__ import annotations

import json

import psycopg

from fold_core.errors import StoreCorrupt
from fold_core.state import Replayer, State, empty_state, resolve_item
from fold_core.store.meta import StoreMissing
from fold_core.store.location import PgLocation
from fold_core.store.pg.state import Head, Query, note_number
from fold_core.store.pg.recorder import PostgresRecorder, unavailable_error
from fold_core.store.record_checks import RecordChecker
from fold_core.timefmt import instant_key

__all__ = ["verify_pg_store"]


def verify_pg_store(location: str | PgLocation) -> dict:
    """The report of a clean store; raises ``StoreCorrupt`` at the first problem."""
    recorder = PostgresRecorder(location)
    try:
        with recorder.session(write=False) as session:
            head = session.head
            if head is None:
                raise StoreMissing(f"no store {recorder.location.name!r} in {recorder.location.display}")
            state, expected = _replay(recorder, head)
            _compare(recorder, head, state, expected)
    except psycopg.Error as error:
        raise unavailable_error(error, "cannot read the store", recorder.location) from None
    finally:
        recorder.forget()
    return {
        "ok": True, "records": state.event_seq, "last_event_seq": state.event_seq, "revision": state.revision,
        "budget": head.budget, "snapshot": {"last_event_seq": head.event_seq, "consistent": True},
        "torn_tail": None,
    }


def _replay(recorder: PostgresRecorder, head: Head) -> tuple[State, dict]:
    checker = RecordChecker(head.budget, "record")
    replayer = Replayer(empty_state(head.budget))
    expected = {"index": set(), "activations": {}, "order": 0, "seqs": {}, "notes": {}}
    conn = recorder.connection()
    with conn.cursor(name="fold_verify") as cursor:
        cursor.itersize = 1000
        cursor.execute("SELECT event_seq, type, batch_id, request_digest, body FROM fold_records WHERE store = %s"
                       " ORDER BY event_seq", (head.id,))
        for event_seq, kind, batch_id, digest, body in cursor:
            checker.line = checker.line + 1
            if event_seq != checker.line:
                raise checker.corrupt(f"missing: the next record found is {event_seq}")
            try:
                record = json.loads(body)
            except ValueError as error:
                raise checker.corrupt(f"does not parse ({error})") from None
            try:
                if type(record) is not dict or record.get("event_seq") != event_seq:
                    raise checker.corrupt("holds another event_seq")
                if (record.get("type"), record.get("batch_id"), record.get("request_digest")) != \
                        (kind, batch_id, digest):
                    raise checker.corrupt("its type, batch_id or request_digest columns differ from its body")
                checker.check(record, event_seq)
                _expect(expected, replayer, record)
                replayer.apply(record)
            except StoreCorrupt:
                raise
            except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
                raise checker.corrupt(f"the record does not have the expected shape ({type(error).__name__}:"
                                      f" {error})") from None
    if checker.line != head.event_seq:
        raise StoreCorrupt(f"fold_stores: the head says event_seq {head.event_seq} but the records end at"
                           f" {checker.line}", line=checker.line + 1)
    state = replayer.freeze()
    checker.check_budgets(state)
    return state, expected


def _expect(expected: dict, replayer: Replayer, record: dict) -> None:
    """What the item index and the active order must hold after ``record`` (before T applies it)."""
    event_seq = record["event_seq"]
    if record["type"] == "annotation":
        expected["index"].add((record["annotation"]["item"], event_seq, False))
        expected["notes"][record["annotation"]["id"]] = [event_seq, None]
        return
    for ack in record["acks"]:
        expected["notes"][ack["annotation"]][1] = event_seq
    for change in record["changes"]:
        image = change["item"]
        expected["index"].add((image["id"], event_seq, True))
        expected["seqs"].setdefault(image["id"], [event_seq, event_seq])[1] = event_seq
        if image["status"] == "active" and image["id"] not in replayer.active.get(image["parent"], ()):
            expected["order"] += 1
            expected["activations"][image["id"]] = expected["order"]


def _compare(recorder: PostgresRecorder, head: Head, state: State, expected: dict) -> None:
    query, store = recorder.query, head.id
    values = (head.revision, head.last_checked_at, head.item_total, head.inactive_total, head.annotation_total,
              head.activations)
    wanted = (state.revision, state.last_checked_at, len(state.items), state.inactive_total, len(state.annotations),
              expected["order"])
    if values != wanted:
        raise _bad("fold_stores", f"the head {values} differs from a replay of the records {wanted}")
    items = dict(state.items.items())
    seen = 0
    rows = query("SELECT id, status, parent, merged_into, status_key, active_order, first_seq, last_seq, body"
                 " FROM fold_items WHERE store = %s", (store,))
    active: dict = {}
    for key, status, parent, merged_into, status_key, order, first, last, body in rows:
        seen += 1
        image = items.get(key)
        if image is None or json.loads(body) != image:
            raise _bad("fold_items", f"the row of {key} differs from a replay of the records")
        if (status, parent, merged_into, status_key, [first, last]) != (
                image["status"], image["parent"], image["merged_into"], instant_key(image["status_at"]),
                expected["seqs"][key]):
            raise _bad("fold_items", f"the columns of {key} differ from its image")
        if status == "active":
            if order != expected["activations"].get(key):
                raise _bad("fold_items", f"the active order of {key} differs from a replay of the records")
            active.setdefault(parent, []).append((order, key))
    if seen != len(items):
        raise _bad("fold_items", f"{seen} rows, but a replay of the records gives {len(items)} items")
    if {layer: tuple(key for _, key in sorted(members)) for layer, members in active.items()} != dict(state.active):
        raise _bad("fold_items", "the active layers differ from a replay of the records")
    _compare_notes(query, store, state, expected["notes"])
    index = {(item, seq, image) for item, seq, image in query(
        "SELECT item, event_seq, image FROM fold_item_records WHERE store = %s", (store,))}
    if index != expected["index"]:
        raise _bad("fold_item_records", "the item index differs from the records")


def _compare_notes(query: Query, store: int, state: State, seqs: dict) -> None:
    notes = dict(state.annotations.items())
    rows = query("SELECT id, number, item, resolved, status, created_seq, ack_seq, body FROM fold_annotations"
                 " WHERE store = %s", (store,)).fetchall()
    if len(rows) != len(notes):
        raise _bad("fold_annotations", f"{len(rows)} rows, but a replay of the records gives {len(notes)}")
    for key, number, item, resolved, status, created, ack, body in rows:
        note = notes.get(key)
        if note is None or json.loads(body) != note:
            raise _bad("fold_annotations", f"the row of {key} differs from a replay of the records")
        if (number, item, resolved, status, [created, ack]) != (
                note_number(key), note["item"], resolve_item(state, note["item"]), note["status"], seqs[key]):
            raise _bad("fold_annotations", f"the columns of {key} differ from its image")


def _bad(table: str, why: str) -> StoreCorrupt:
    return StoreCorrupt(f"{table}: {why} (the cached state disagrees with the records, which are the truth)")
