"""Retention: old processed observations lose their text, old poll rows go (``HostDB`` part).

``[host] keep_observations = "180d"``: an observation processed and observed
longer ago than that keeps its id, source, channel, times, thread, url,
disposition, why and related items — so it is never observed twice and the
inbox still says what became of it — but its ``text``, ``title`` and
``from`` are dropped (``meta.text_dropped_at`` says when). Pending and
deferred observations keep everything: the editor has not finished with
them. Poll rows older than that go too (the ``counters`` keep the totals).
The store's log is the record and is never pruned.
"""

from __future__ import annotations

import sqlite3

__all__ = ["RetentionTables"]


class RetentionTables:
    """``forget_text``: the retention pass."""

    connection: sqlite3.Connection

    def forget_text(self, *, before: str, now: str) -> int:
        """Drop the text of processed observations observed before ``before``; how many were changed."""
        with self.transaction() as db:
            # julianday() reads the offsets, so instants written in different zones compare right.
            changed = db.execute(
                "UPDATE observations SET body = json_set(body, '$.text', '', '$.title', NULL, '$.from', NULL, "
                "'$.meta.text_dropped_at', ?) WHERE status = 'processed' "
                "AND julianday(observed_at) < julianday(?) "
                "AND json_extract(body, '$.meta.text_dropped_at') IS NULL", (now, before)).rowcount
            db.execute("DELETE FROM polls WHERE julianday(at) < julianday(?)", (before,))
        return changed
