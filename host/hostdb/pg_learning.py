"""What feedback teaches, in PostgreSQL's words (``PgHostDB`` part; ``learning`` on SQLite).

The same rows and the same answers as ``learning.LearningTables``; where
SQLite's SQL has no PostgreSQL reading — its JSON functions, a sum of
comparisons, output names in ``HAVING`` — the statement is written here
again: the sender from the observation's JSON body (``->>``), the related
items with ``jsonb_exists``, the counts with ``CASE``.
"""

from __future__ import annotations

from collections.abc import Iterable

from fold_host.hostdb.learning import _ABOUT_LIMIT

__all__ = ["PgLearning"]


class PgLearning:
    """``observations_about``, ``_note_learning_in``, ``learned`` for PostgreSQL."""

    def observations_about(self, item: str, refs: Iterable[str] = ()) -> list[tuple[str | None, str | None]]:
        refs = tuple(dict.fromkeys(refs))
        cited = f"id IN ({','.join('?' * len(refs))}) OR " if refs else ""
        rows = self.connection.execute(
            f"SELECT CAST(body AS jsonb) ->> 'from', thread FROM observations "
            f"WHERE channel NOT IN ('feedback', 'reminder') AND ({cited}"
            f"(related LIKE '[%' AND jsonb_exists(CAST(related AS jsonb), ?))) ORDER BY seq DESC LIMIT ?",
            (*refs, item, _ABOUT_LIMIT)).fetchall()
        return [(sender, thread) for sender, thread in rows]

    @staticmethod
    def _note_learning_in(db, *, feedback: str, at: str, item: str, meaning: str,
                          keys: Iterable[tuple[str, str]]) -> None:
        db.executemany("INSERT INTO feedback_learning (feedback, at, item, meaning, by, key) "
                       "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                       [(feedback, at, item, meaning, by, key) for by, key in keys])

    def learned(self, since: str, limit: int) -> list[dict]:
        unanswered = ("NOT EXISTS (SELECT 1 FROM feedback_learning AS l WHERE l.item = r.item AND l.by = r.by "
                      "AND l.key = r.key AND l.meaning IN ('act', 'decide') AND l.at >= r.at)")
        rows = self.connection.execute(
            f"SELECT by, key, snoozed, acknowledged, acted, last FROM (SELECT by, key, "
            f"sum(CASE WHEN meaning = 'snooze' AND {unanswered} THEN 1 ELSE 0 END) AS snoozed, "
            f"sum(CASE WHEN meaning = 'ack' AND {unanswered} THEN 1 ELSE 0 END) AS acknowledged, "
            f"sum(CASE WHEN meaning IN ('act', 'decide') THEN 1 ELSE 0 END) AS acted, max(at) AS last "
            f"FROM feedback_learning AS r WHERE at >= ? GROUP BY by, key) AS counted "
            f"WHERE snoozed + acknowledged + acted > 0 "
            f"ORDER BY snoozed + acknowledged + acted DESC, last DESC, by, key LIMIT ?", (since, limit)).fetchall()
        return [{by: key, "snoozed": snoozed, "acknowledged": acknowledged, "acted": acted, "last": last}
                for by, key, snoozed, acknowledged, acted, last in rows]
