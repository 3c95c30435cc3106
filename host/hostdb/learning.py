"""What the user's feedback teaches the editor: counts per sender and thread (``HostDB`` part; contract §9).

Each feedback on an item is noted once per sender and per thread of the
observations that item rests on (``note_learning``, inside the transaction
that keeps the feedback). ``learned`` counts, over a recent span, for each
sender and thread: snoozes and acknowledgements that no later ``act`` or
``decide`` on the same item followed (the user put it off or only looked),
and ``act`` / ``decide`` (the user did something). ``forget_learning``
clears the counts of some senders and threads (``--meaning input``).
"""

from __future__ import annotations

from collections.abc import Iterable

from fold_host.hostdb.part import TablePart, marks
from fold_host.hostdb.protocol import Link

__all__ = ["ABOUT_LIMIT", "LearningTables"]

ABOUT_LIMIT = 50  # observations an item's senders and threads are read from (its latest)


class LearningTables(TablePart):
    """``feedback_learning``."""

    def observations_about(self, item: str, refs: Iterable[str] = ()) -> list[tuple[str | None, str | None]]:
        """``(from, thread)`` of the latest observations an item rests on: those its sources cite
        (``refs``, observation ids) and those the editor related to it; feedback and reminders left out."""
        refs = tuple(dict.fromkeys(refs))
        cited = f"id IN ({marks(refs)}) OR " if refs else ""
        rows = self.connection.execute(
            f"SELECT json_extract(body, '$.from'), thread FROM observations "
            f"WHERE channel NOT IN ('feedback', 'reminder') AND ({cited}"
            f"EXISTS (SELECT 1 FROM json_each(CASE WHEN json_valid(related) THEN related ELSE '[]' END) "
            f"WHERE value = ?)) ORDER BY seq DESC LIMIT ?", (*refs, item, ABOUT_LIMIT)).fetchall()
        return [(sender, thread) for sender, thread in rows]

    @staticmethod
    def _note_learning_in(db: Link, *, feedback: str, at: str, item: str, meaning: str,
                          keys: Iterable[tuple[str, str]]) -> None:
        """One row per (sender | thread, key) of the feedback; ``at`` is a UTC instant text."""
        db.executemany("INSERT OR IGNORE INTO feedback_learning (feedback, at, item, meaning, by, key) "
                       "VALUES (?, ?, ?, ?, ?, ?)", [(feedback, at, item, meaning, by, key) for by, key in keys])

    @staticmethod
    def _forget_learning_in(db: Link, keys: Iterable[tuple[str, str]]) -> int:
        """Clear every count of these senders and threads; the number of rows removed."""
        removed = 0
        for by, key in keys:
            removed += db.execute("DELETE FROM feedback_learning WHERE by = ? AND key = ?", (by, key)).rowcount
        return removed

    @staticmethod
    def _prune_learning_in(db: Link, before: str) -> None:
        """Forget feedback older than ``before`` (a UTC instant text): it no longer counts."""
        db.execute("DELETE FROM feedback_learning WHERE at < ?", (before,))

    def learned(self, since: str, limit: int) -> list[dict]:
        """Per sender and thread since ``since`` (UTC text): ``snoozed``, ``acknowledged`` (neither followed
        by an ``act`` or ``decide`` on the same item), ``acted``; the most counted first, at most ``limit``."""
        unanswered = ("NOT EXISTS (SELECT 1 FROM feedback_learning AS l WHERE l.item = r.item AND l.by = r.by "
                      "AND l.key = r.key AND l.meaning IN ('act', 'decide') AND l.at >= r.at)")
        rows = self.connection.execute(  # SQL both engines read (PostgreSQL has no sum of booleans)
            f"SELECT by, key, snoozed, acknowledged, acted, last FROM (SELECT by, key, "
            f"sum(CASE WHEN meaning = 'snooze' AND {unanswered} THEN 1 ELSE 0 END) AS snoozed, "
            f"sum(CASE WHEN meaning = 'ack' AND {unanswered} THEN 1 ELSE 0 END) AS acknowledged, "
            f"sum(CASE WHEN meaning IN ('act', 'decide') THEN 1 ELSE 0 END) AS acted, max(at) AS last "
            f"FROM feedback_learning AS r WHERE at >= ? GROUP BY by, key) AS counted "
            f"WHERE snoozed + acknowledged + acted > 0 "
            f"ORDER BY snoozed + acknowledged + acted DESC, last DESC, by, key LIMIT ?", (since, limit)).fetchall()
        return [{by: key, "snoozed": snoozed, "acknowledged": acknowledged, "acted": acted, "last": last}
                for by, key, snoozed, acknowledged, acted, last in rows]
