"""Consumer cursors, failures and memory: the ``consumers`` and ``consumer_memory`` tables (``HostDB`` part)."""

from __future__ import annotations

import json
from collections.abc import Iterator, MutableMapping
from typing import Any

from fold_host.hostdb.part import TablePart, marks
from fold_host.hostdb.watch import count_in

__all__ = ["ConsumerMemory", "ConsumerTables"]


class ConsumerTables(TablePart):
    """One row per consumer instance: the last event_seq it acknowledged, its failures and last error."""

    def consumer_rows(self) -> list[dict]:
        """Every consumer row: name, event_seq, failures, next_try_at, last_error, last_error_at, updated_at."""
        return self._rows("SELECT name, event_seq, failures, next_try_at, last_error, last_error_at, updated_at "
                          "FROM consumers ORDER BY name")

    def consumer_row(self, name: str) -> dict | None:
        rows = self._rows("SELECT name, event_seq, failures, next_try_at, last_error, last_error_at, updated_at "
                          "FROM consumers WHERE name = ?", (name,))
        return rows[0] if rows else None

    def consumer_cursor(self, name: str) -> int | None:
        row = self.connection.execute("SELECT event_seq FROM consumers WHERE name = ?", (name,)).fetchone()
        return row[0] if row is not None else None

    def add_consumer(self, name: str, event_seq: int, *, now: str) -> bool:
        """A new instance's cursor row (kept as it is when the row exists); whether this call made it."""
        with self.transaction() as db:
            cursor = db.execute("INSERT INTO consumers (name, event_seq, updated_at) VALUES (?, ?, ?) "
                                "ON CONFLICT DO NOTHING", (name, event_seq, now))
        return cursor.rowcount > 0

    def set_consumer_cursor(self, name: str, event_seq: int, *, now: str, delivered: bool = False) -> None:
        """The instance acknowledged up to ``event_seq``: its failures are forgotten.

        ``delivered``: records were handed over (counted in ``deliveries`` as ok).
        """
        with self.transaction() as db:
            if delivered:
                count_in(db, "deliveries", (name, "ok"))
            db.execute("INSERT INTO consumers (name, event_seq, updated_at) VALUES (?, ?, ?) "
                       "ON CONFLICT (name) DO UPDATE SET event_seq = excluded.event_seq, "
                       "updated_at = excluded.updated_at, failures = 0, next_try_at = NULL",
                       (name, event_seq, now))

    def consumer_failed(self, name: str, *, failures: int, next_try_at: str, error: str, now: str) -> None:
        with self.transaction() as db:
            count_in(db, "deliveries", (name, "failed"))
            db.execute("UPDATE consumers SET failures = ?, next_try_at = ?, last_error = ?, last_error_at = ?, "
                       "updated_at = ? WHERE name = ?", (failures, next_try_at, error, now, now, name))

    def consumer_error(self, name: str, error: str, *, now: str) -> None:
        """An error that does not count as a failed delivery (``begin`` failed)."""
        with self.transaction() as db:
            db.execute("UPDATE consumers SET last_error = ?, last_error_at = ? WHERE name = ?", (error, now, name))

    def lagging_consumers(self, head: int, names: list[str]) -> list[dict]:
        """Rows of the consumers ``names`` whose cursor is behind the store's event ``head``."""
        if not names:
            return []
        return self._rows(f"SELECT name, event_seq, next_try_at FROM consumers WHERE event_seq < ? AND "
                          f"name IN ({marks(names)})", (head, *names))

    def memory(self, consumer: str) -> ConsumerMemory:
        return ConsumerMemory(self, consumer)


class ConsumerMemory(MutableMapping[str, Any]):
    """A consumer instance's durable key/value memory (JSON values), each write committed at once."""

    def __init__(self, db: TablePart, consumer: str) -> None:
        self._db, self._consumer = db, consumer

    def __getitem__(self, key: str) -> Any:
        row = self._db.connection.execute("SELECT value FROM consumer_memory WHERE consumer = ? AND key = ?",
                                          (self._consumer, key)).fetchone()
        if row is None:
            raise KeyError(key)
        return json.loads(row[0])

    def __setitem__(self, key: str, value: Any) -> None:
        with self._db.transaction() as db:
            db.execute("INSERT INTO consumer_memory (consumer, key, value) VALUES (?, ?, ?) ON CONFLICT "
                       "(consumer, key) DO UPDATE SET value = excluded.value",
                       (self._consumer, key, json.dumps(value, ensure_ascii=False)))

    def __delitem__(self, key: str) -> None:
        with self._db.transaction() as db:
            cursor = db.execute("DELETE FROM consumer_memory WHERE consumer = ? AND key = ?", (self._consumer, key))
        if cursor.rowcount == 0:
            raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        rows = self._db.connection.execute("SELECT key FROM consumer_memory WHERE consumer = ? ORDER BY key",
                                           (self._consumer,)).fetchall()
        return iter([row[0] for row in rows])

    def __len__(self) -> int:
        return self._db.connection.execute("SELECT count(*) FROM consumer_memory WHERE consumer = ?",
                                           (self._consumer,)).fetchone()[0]
