"""The base of every table part of a host database: what a part may use of the connection and of the others.

A host database class is its table parts (``inbox``, ``dispositions``…) and
one engine's connection (``connection``: SQLite; ``pg.connection``), all
built on ``TablePart``. It carries the few helpers that read the same on
both engines (rows as dicts, the ``host_meta`` facts) and declares, for the
type checker, what the parts call of each other and of the engine: the
transaction, the dialect's words (``_unclaimed``, ``_skip_locked``,
``_distinct``), the hooks the engines fill in differently. ``TablePart``
comes last in every such class's method order, so the declarations never
stand in for the parts' own methods; a class that lacks one is abstract to
the type checker.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from fold_host.hostdb.protocol import Link

if TYPE_CHECKING:
    from fold_core.observation import Observation

__all__ = ["TablePart", "marks"]


def marks(values: Sequence[Any]) -> str:
    """One ``?`` per value, comma-separated (an ``IN (…)`` list)."""
    return ",".join("?" * len(values))


class TablePart:
    """What the table parts share (see the module docstring)."""

    connection: Link
    path: str
    shared: bool  # several hosts work on this database (PostgreSQL)
    _unclaimed: str  # PostgreSQL: observations a live window of another host holds are left out
    _skip_locked: str  # PostgreSQL: FOR UPDATE SKIP LOCKED on the rows a window takes
    _distinct: str  # null-safe inequality

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[dict]:
        cursor = self.connection.execute(sql, tuple(params))
        rows = cursor.fetchall()
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row)) for row in rows]

    # -- host_meta: small facts (the last window, the open window, the last briefing) --

    def meta(self, key: str, default: Any = None) -> Any:
        row = self.connection.execute("SELECT value FROM host_meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row is not None else default

    def set_meta(self, key: str, value: Any) -> None:
        with self.transaction() as db:
            self._set_meta_in(db, key, value)

    def drop_meta(self, *keys: str) -> None:
        with self.transaction() as db:
            self._drop_meta_in(db, *keys)

    @staticmethod
    def _set_meta_in(db: Link, key: str, value: Any) -> None:
        db.execute("INSERT INTO host_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
                   "value = excluded.value", (key, json.dumps(value, ensure_ascii=False)))

    @staticmethod
    def _drop_meta_in(db: Link, *keys: str) -> None:
        if not keys:
            return
        db.execute(f"DELETE FROM host_meta WHERE key IN ({','.join('?' * len(keys))})", keys)

    # -- the engine's (``connection``, ``pg.connection``) ------------------------------------

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Link]:
        """One write transaction; the link its statements go through."""

    @staticmethod
    @abstractmethod
    def _insert_seq(db: Link, sql: str, params: Iterable[Any]) -> int | None:
        """Run an INSERT into a table keyed by ``seq``; the new row's seq (None when nothing was inserted)."""

    @staticmethod
    @abstractmethod
    def _index_text(db: Link, seq: int, title: str | None, text: str | None) -> None:
        """Index a new observation's title and text for search."""

    @staticmethod
    @abstractmethod
    def index_texts(db: Link, rows: list[tuple[int, str, str]]) -> None:
        """Index the ``(seq, title, text)`` of observations copied in with their own seq."""

    # -- what one part asks of another -------------------------------------------------------

    @abstractmethod
    def _insert(self, db: Link, observations: Iterable[Observation]) -> int:
        """Keep new observations (``inbox``); the number new."""

    @abstractmethod
    def _mark_in(self, db: Link, dispositions: Iterable[dict], *, batch_id: str | None, now: str) -> None:
        """Record dispositions inside the caller's transaction (``dispositions``)."""

    @staticmethod
    @abstractmethod
    def _note_learning_in(db: Link, *, feedback: str, at: str, item: str, meaning: str,
                          keys: Iterable[tuple[str, str]]) -> None:
        """Note what a feedback teaches (``learning``)."""

    @staticmethod
    @abstractmethod
    def _forget_learning_in(db: Link, keys: Iterable[tuple[str, str]]) -> int:
        """Clear the counts of these senders and threads (``learning``)."""

    @staticmethod
    @abstractmethod
    def _prune_learning_in(db: Link, before: str) -> None:
        """Forget feedback older than ``before`` (``learning``)."""

    @abstractmethod
    def consumer_row(self, name: str) -> dict | None:
        """A consumer's cursor row (``consumers``)."""
