"""What feedback teaches, in PostgreSQL's words (``PgHostDB`` part; ``learning`` on SQLite).

The same rows and the same answers as ``learning.LearningTables``; where
SQLite's SQL has no PostgreSQL reading — its JSON functions — the
statement is written here again: the sender from the observation's JSON
body (``->>``), the related items with ``jsonb_exists``.
"""

from __future__ import annotations

from collections.abc import Iterable

from fold_host.hostdb.learning import ABOUT_LIMIT
from fold_host.hostdb.part import marks
from fold_host.hostdb.pg.connection import PgPart
from fold_host.hostdb.protocol import Link

__all__ = ["PgLearning"]


class PgLearning(PgPart):
    """``observations_about`` and ``_note_learning_in`` for PostgreSQL."""

    def observations_about(self, item: str, refs: Iterable[str] = ()) -> list[tuple[str | None, str | None]]:
        refs = tuple(dict.fromkeys(refs))
        cited = f"id IN ({marks(refs)}) OR " if refs else ""
        rows = self.connection.execute(
            f"SELECT CAST(body AS jsonb) ->> 'from', thread FROM observations "
            f"WHERE channel NOT IN ('feedback', 'reminder') AND ({cited}"
            f"(related LIKE '[%' AND jsonb_exists(CAST(related AS jsonb), ?))) ORDER BY seq DESC LIMIT ?",
            (*refs, item, ABOUT_LIMIT)).fetchall()
        return [(sender, thread) for sender, thread in rows]

    @staticmethod
    def _note_learning_in(db: Link, *, feedback: str, at: str, item: str, meaning: str,
                          keys: Iterable[tuple[str, str]]) -> None:
        db.executemany("INSERT INTO feedback_learning (feedback, at, item, meaning, by, key) "
                       "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                       [(feedback, at, item, meaning, by, key) for by, key in keys])
