"""A session of the PostgreSQL store: reads in its transaction, and the append (contract §6.2).

``append`` turns one record into rows — the record itself, the changed items'
images, the saved or acknowledged annotations, the item index, the new head —
and COMMITs them as one transaction (the write protocol of ``postgres``).
What each row holds is what replay (T) gives for the record: the kernel's
result state is used, never recomputed from a clock or by validation.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import psycopg

from fold_core.errors import StoreCorrupt, StoreUnavailable
from fold_core.state import State, apply_record, resolve_item
from fold_core.store.base import Session
from fold_core.store.faults import crash_at, fault_is, injected
from fold_core.store.location import PgLocation
from fold_core.store.log import encode_record
from fold_core.store.pg.state import Head, note_number, parse_record, view_state, whole_state
from fold_core.timefmt import instant_key

__all__ = ["Owner", "PgSession", "json_text", "one_row"]

Row = tuple[Any, ...]


class Owner(Protocol):
    """What a session asks of its recorder (``recorder.PostgresRecorder``)."""

    location: PgLocation
    head: Head | None
    state: State | None

    def connection(self) -> psycopg.Connection[Row]: ...

    def query(self, sql: str, params: Sequence[Any] | None = None) -> psycopg.Cursor[Row]: ...

    def locked_head(self, conn: psycopg.Connection[Row]) -> Head | None: ...

    def forget(self) -> None: ...

_CURSORS = itertools.count(1)  # server-side cursor names: each one unique on its connection
_UPSERT_ITEM = (
    "INSERT INTO fold_items AS i (store, id, status, parent, merged_into, status_key, active_order, first_seq,"
    " last_seq, body) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (store, id) DO UPDATE SET status = excluded.status, parent = excluded.parent,"
    " merged_into = excluded.merged_into, status_key = excluded.status_key,"
    " active_order = coalesce(excluded.active_order, i.active_order), last_seq = excluded.last_seq,"
    " body = excluded.body"
)


def json_text(value: object) -> str:
    """Compact JSON text (ASCII escapes only when the value holds what UTF-8 cannot)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return text


def one_row(cursor: psycopg.Cursor[Row]) -> Row:
    """The row of a statement that always gives one (``RETURNING``, ``SELECT f()``)."""
    row = cursor.fetchone()
    if row is None:
        raise psycopg.ProgrammingError("the statement gave no row")
    return row


def _crash_after_sync(pipeline: psycopg.Pipeline, point: str) -> None:
    """The fault point ``point``, after what the pipeline holds has reached the server (tests only)."""
    if fault_is(point):
        pipeline.sync()
        crash_at(point)


class PgSession(Session):
    """The store at one head, inside the recorder's open transaction."""

    def __init__(self, recorder: Owner, head: Head | None, state: State) -> None:
        self._recorder = recorder
        self.head = head
        self.state = state
        self._open = True  # the session's transaction (and, to write, the lock) is held

    # -- reads ----------------------------------------------------------------------

    def _query(self, sql: str, params: Sequence[Any] | None = None) -> psycopg.Cursor[Row]:
        return self._recorder.query(sql, params)

    def lookup(self, batch_id: str) -> tuple[int, str | None] | None:
        if self.head is None:
            return None
        row = self._query("SELECT event_seq, request_digest FROM fold_records WHERE store = %s AND batch_id = %s",
                          (self.head.id, batch_id)).fetchone()
        return None if row is None else (row[0], row[1])

    def record(self, event_seq: int) -> dict:
        if self.head is not None and 1 <= event_seq <= self.state.event_seq:
            row = self._query("SELECT body FROM fold_records WHERE store = %s AND event_seq = %s",
                              (self.head.id, event_seq)).fetchone()
            if row is not None:
                return parse_record(event_seq, row[0])
        raise KeyError(event_seq)

    def records(self, since: int = 0) -> Iterator[dict]:
        if self.head is None or since >= self.state.event_seq:
            return iter(())
        conn = self._recorder.connection()
        cursor = conn.cursor(name=f"fold_records_{next(_CURSORS)}")  # server-side: a long history streams
        cursor.itersize = 500
        cursor.execute("SELECT event_seq, body FROM fold_records WHERE store = %s AND event_seq > %s"
                       " AND event_seq <= %s ORDER BY event_seq", (self.head.id, max(since, 0), self.state.event_seq))

        def rows() -> Iterator[dict]:
            expected = max(since, 0)
            try:
                for event_seq, body in cursor:
                    expected += 1
                    if event_seq != expected:
                        raise StoreCorrupt(f"record {expected} is missing (the next one is {event_seq})",
                                           line=expected)
                    yield parse_record(event_seq, body)
            finally:
                if not cursor.closed and not conn.closed and conn.info.transaction_status == \
                        psycopg.pq.TransactionStatus.INTRANS:
                    try:
                        cursor.close()
                    except psycopg.Error:
                        pass  # the session is ending anyway: its transaction closes the cursor

        return rows()

    def record_lines(self) -> Iterator[bytes]:
        """The session's records as their exact stored lines (the body and a newline; moving a store)."""
        last = self.state.event_seq
        if self.head is None or last == 0:
            return iter(())
        cursor = self._recorder.connection().cursor(name="fold_record_lines")
        cursor.itersize = 2000
        cursor.execute("SELECT body FROM fold_records WHERE store = %s AND event_seq <= %s ORDER BY event_seq",
                       (self.head.id, last))
        return (body.encode("utf-8") + b"\n" for (body,) in cursor)

    def records_about(self, item: str, since: int = 0) -> Iterator[dict]:
        """From the item index (``fold_item_records``), not a scan of the whole history."""
        if self.head is None or since >= self.state.event_seq:
            return iter(())
        rows = self._query("SELECT r.event_seq, r.body FROM fold_item_records x JOIN fold_records r"
                           " ON r.store = x.store AND r.event_seq = x.event_seq"
                           " WHERE x.store = %s AND x.item = %s AND x.event_seq > %s AND x.event_seq <= %s"
                           " ORDER BY x.event_seq", (self.head.id, item, max(since, 0), self.state.event_seq))
        return (parse_record(event_seq, body) for event_seq, body in rows)

    def state_for_view(self, *, item: str | None, not_active: int | None) -> State:
        if self.head is None:
            return self.state
        if not_active is None:
            return whole_state(self._query, self.head, self.state)
        return view_state(self._query, self.head, self.state, item=item, not_active=not_active)

    # -- the append -----------------------------------------------------------------

    def append(self, record: dict, state: State) -> None:
        recorder = self._recorder
        before = self.state
        event_seq = before.event_seq + 1
        if record.get("event_seq") != event_seq:
            raise ValueError(f"record {record.get('event_seq')!r} does not follow {event_seq - 1}")
        if state is None or state.event_seq != event_seq:
            state = apply_record(before, record)
        body = encode_record(record)[:-1].decode("utf-8")
        conn = recorder.connection()
        try:
            if not self._open:
                self._reopen(conn, before)
            crash_at("before_append")
            head = self.head if self.head is not None else self._create(conn)
            # One round trip: the rows and the COMMIT go out as one pipeline.
            with conn.pipeline() as pipeline:
                conn.execute("INSERT INTO fold_records (store, event_seq, type, batch_id, request_digest, body)"
                             " VALUES (%s, %s, %s, %s, %s, %s)",
                             (head.id, event_seq, record["type"], record.get("batch_id"),
                              record.get("request_digest"), body))
                _crash_after_sync(pipeline, "mid_append")
                activations = self._write_state(conn, head, record, before, state)
                conn.execute("UPDATE fold_stores SET event_seq = %s, revision = %s, last_checked_at = %s,"
                             " item_total = %s, inactive_total = %s, annotation_total = %s, activations = %s"
                             " WHERE id = %s",
                             (event_seq, state.revision, state.last_checked_at, len(state.items),
                              state.inactive_total, len(state.annotations), activations, head.id))
                _crash_after_sync(pipeline, "after_append")
                failure = injected("enospc_append")
                if failure is not None:
                    raise failure
                conn.execute("COMMIT")
        except (psycopg.Error, OSError) as error:
            self._open = False
            # A connection that broke after the COMMIT went out leaves the outcome unknown; any other
            # failure aborted the transaction (closing the connection rolls back what is left).
            unknown = isinstance(error, psycopg.Error) and conn.broken
            recorder.forget()
            if unknown:
                raise StoreUnavailable(f"the connection to {recorder.location.display} broke while committing"
                                       f" ({error}): the outcome is unknown; retry with the same batch_id") from None
            raise StoreUnavailable(f"cannot write to the store {recorder.location.display}: {error};"
                                   " nothing was written") from None
        self._open = False
        crash_at("after_fsync")
        if injected("eio_fsync") is not None:
            recorder.forget()
            raise StoreUnavailable(f"the COMMIT to {recorder.location.display} was not confirmed (injected):"
                                   " the outcome is unknown; retry with the same batch_id")
        crash_at("mid_snapshot")
        # Committed: only bookkeeping from here on.
        head = Head(head.id, head.budget, head.created_at, event_seq, state.revision, state.last_checked_at,
                    len(state.items), state.inactive_total, len(state.annotations), activations)
        self.head, self.state = head, state
        recorder.head, recorder.state = head, state

    def _reopen(self, conn: psycopg.Connection[Row], before: State) -> None:
        """A second append in one session: lock again and check that nobody wrote in between."""
        conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        head = self._recorder.locked_head(conn)
        seen = 0 if head is None else head.event_seq
        if seen != before.event_seq:
            raise StoreUnavailable(f"the store moved on during the session (event_seq {seen},"
                                   f" expected {before.event_seq}): nothing was written")
        self._open = True

    def _create(self, conn: psycopg.Connection[Row]) -> Head:
        """The store's row, written with its first record (a commit or an annotation creates the store)."""
        from datetime import datetime, timezone

        created_at = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        budget = self.state.budget
        row = one_row(conn.execute("INSERT INTO fold_stores (name, budget, created_at) VALUES (%s, %s, %s)"
                                   " RETURNING id", (self._recorder.location.name, budget, created_at)))
        return Head(row[0], budget, created_at, 0, 0, None, 0, 0, 0, 0)

    def _write_state(self, conn: psycopg.Connection[Row], head: Head, record: dict, before: State,
                     state: State) -> int:
        """The cached-state rows of ``record``; returns the store's new activation counter."""
        store, event_seq = head.id, record["event_seq"]
        activations = head.activations
        cursor = conn.cursor()
        if record["type"] == "annotation":
            note = record["annotation"]
            image = state.annotations[note["id"]]
            cursor.execute(
                "INSERT INTO fold_annotations (store, id, number, item, resolved, status, created_seq, body)"
                " VALUES (%s, %s, %s, %s, %s, 'saved', %s, %s)",
                (store, note["id"], note_number(note["id"]), note["item"], resolve_item(state, note["item"]),
                 event_seq, json_text(image)))
            cursor.execute("INSERT INTO fold_item_records (store, item, event_seq, image) VALUES (%s, %s, %s, false)"
                           " ON CONFLICT DO NOTHING", (store, note["item"], event_seq))
            return activations
        items, index, merged = [], [], []
        for change in record["changes"]:
            image = change["item"]
            item_id, parent, status = image["id"], image["parent"], image["status"]
            order = None
            if status == "active" and item_id not in before.active.get(parent, ()):
                activations += 1
                order = activations
            if status == "merged":
                merged.append((image["merged_into"], store, item_id))
            items.append((store, item_id, status, parent, image["merged_into"], instant_key(image["status_at"]),
                          order, event_seq, event_seq, json_text(image)))
            index.append((store, item_id, event_seq))
        if items:
            cursor.executemany(_UPSERT_ITEM, items)
            cursor.executemany("INSERT INTO fold_item_records (store, item, event_seq, image) VALUES (%s, %s, %s, true)",
                               index)
        if merged:
            cursor.executemany("UPDATE fold_annotations SET resolved = %s WHERE store = %s AND resolved = %s", merged)
        acks = [(event_seq, json_text(state.annotations[ack["annotation"]]), store, ack["annotation"])
                for ack in record["acks"]]
        if acks:
            cursor.executemany("UPDATE fold_annotations SET status = 'acknowledged', ack_seq = %s, body = %s"
                               " WHERE store = %s AND id = %s", acks)
        return activations
