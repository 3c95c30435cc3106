"""Load a whole history into an empty PostgreSQL store in one transaction (moving a store here).

``load_records(location, budget, created_at, lines)`` takes the records as
their exact bytes (one newline-terminated line each, as a file store's log
holds them) and writes, with ``COPY``, what committing them one by one would
have written: the record rows (the bytes unchanged), and the cached state
after the last one — every item's and annotation's image with the columns of
``pg_schema`` (first and last event_seq, the activation order, the resolved
item of each annotation), the item index and the head row. The state is
replayed with T (``Replayer``); nothing is validated again or decided anew.

All of it is one transaction under the store's lock: a copy that fails
leaves no store behind. The target must be a store without records (a new
name, or one just made by ``init`` with the same budget).
"""

from __future__ import annotations

from collections.abc import Iterable

import psycopg

from fold_core.errors import StoreCorrupt, UsageError
from fold_core.state import Replayer, State, empty_state, resolve_item
from fold_core.store.location import PgLocation
from fold_core.store.pg.session import Row, json_text, one_row
from fold_core.store.pg.state import Head, note_number, parse_record
from fold_core.store.pg.recorder import PostgresRecorder, unavailable_error
from fold_core.timefmt import instant_key

__all__ = ["load_records"]


class _Bookkeeping:
    """What the cached-state columns need beyond the final images, gathered during replay."""

    def __init__(self) -> None:
        self.seqs: dict[str, list[int]] = {}  # item -> [first_seq, last_seq]
        self.order: dict[str, int] = {}  # item -> its last activation
        self.activations = 0
        self.notes: dict[str, list] = {}  # annotation -> [created_seq, ack_seq]
        self.index: list[tuple[str, int, bool]] = []

    def see(self, replayer: Replayer, record: dict) -> None:
        event_seq = record["event_seq"]
        if record["type"] == "annotation":
            note = record["annotation"]
            self.notes[note["id"]] = [event_seq, None]
            self.index.append((note["item"], event_seq, False))
            return
        for ack in record["acks"]:
            self.notes[ack["annotation"]][1] = event_seq
        touched = set()
        for change in record["changes"]:
            image = change["item"]
            item_id = image["id"]
            self.seqs.setdefault(item_id, [event_seq, event_seq])[1] = event_seq
            if item_id not in touched:
                touched.add(item_id)
                self.index.append((item_id, event_seq, True))
            if image["status"] == "active" and item_id not in replayer.active.get(image["parent"], ()):
                self.activations += 1
                self.order[item_id] = self.activations


def load_records(location: str | PgLocation, budget: int, created_at: str, lines: Iterable[bytes]) -> dict:
    """Write ``lines`` (records 1…n, in order) into the empty store at ``location``; the new head."""
    recorder = PostgresRecorder(location, budget)
    try:
        conn, head = recorder.begin_write()
        if head is None:
            store = one_row(conn.execute("INSERT INTO fold_stores (name, budget, created_at) VALUES (%s, %s, %s)"
                                         " RETURNING id", (recorder.location.name, budget, created_at)))[0]
        elif head.event_seq != 0 or head.budget != budget:
            raise UsageError(f"{recorder.location.display} already holds a store ({head.event_seq} records,"
                             f" budget {head.budget}): move into a new store name")
        else:
            store = head.id
            conn.execute("UPDATE fold_stores SET created_at = %s WHERE id = %s", (created_at, store))
        state, books = _copy_records(conn, store, budget, lines)
        _copy_state(conn, store, state, books)
        conn.execute("UPDATE fold_stores SET event_seq = %s, revision = %s, last_checked_at = %s, item_total = %s,"
                     " inactive_total = %s, annotation_total = %s, activations = %s WHERE id = %s",
                     (state.event_seq, state.revision, state.last_checked_at, len(state.items), state.inactive_total,
                      len(state.annotations), books.activations, store))
        conn.execute("COMMIT")
        return Head(store, budget, created_at, state.event_seq, state.revision, state.last_checked_at,
                    len(state.items), state.inactive_total, len(state.annotations), books.activations).meta()
    except psycopg.Error as error:
        raise unavailable_error(error, "cannot write the store", recorder.location) from None
    finally:
        recorder.forget()  # closing an unfinished transaction rolls it back


def _copy_records(conn: psycopg.Connection[Row], store: int, budget: int,
                  lines: Iterable[bytes]) -> tuple[State, _Bookkeeping]:
    replayer = Replayer(empty_state(budget))
    books = _Bookkeeping()
    expected = 0
    with conn.cursor().copy("COPY fold_records (store, event_seq, type, batch_id, request_digest, body)"
                            " FROM STDIN") as copy:
        for line in lines:
            expected += 1
            if not line.endswith(b"\n"):
                raise StoreCorrupt(f"record {expected} is not a complete line", line=expected)
            body = line[:-1].decode("utf-8")
            record = parse_record(expected, body)
            copy.write_row((store, expected, record["type"], record.get("batch_id"), record.get("request_digest"),
                            body))
            books.see(replayer, record)
            replayer.apply(record)
    return replayer.freeze(), books


def _copy_state(conn: psycopg.Connection[Row], store: int, state: State, books: _Bookkeeping) -> None:
    cursor = conn.cursor()
    with cursor.copy("COPY fold_items (store, id, status, parent, merged_into, status_key, active_order,"
                     " first_seq, last_seq, body) FROM STDIN") as copy:
        for item_id, image in state.items.items():
            first, last = books.seqs[item_id]
            copy.write_row((store, item_id, image["status"], image["parent"], image["merged_into"],
                            instant_key(image["status_at"]), books.order.get(item_id), first, last, json_text(image)))
    with cursor.copy("COPY fold_annotations (store, id, number, item, resolved, status, created_seq, ack_seq, body)"
                     " FROM STDIN") as copy:
        for note_id, note in state.annotations.items():
            created, acked = books.notes[note_id]
            copy.write_row((store, note_id, note_number(note_id), note["item"], resolve_item(state, note["item"]),
                            note["status"], created, acked, json_text(note)))
    with cursor.copy("COPY fold_item_records (store, item, event_seq, image) FROM STDIN") as copy:
        for item_id, event_seq, holds_image in books.index:
            copy.write_row((store, item_id, event_seq, holds_image))
