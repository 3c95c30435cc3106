"""Retention: old processed observations lose their text, old poll rows go (``HostDB`` part).

``[host] keep_observations = "180d"``: an observation processed and observed
longer ago than that keeps its id, source, channel, times, thread, url,
disposition, why and related items — so it is never observed twice and the
inbox still says what became of it — but its ``text``, ``title`` and
``from`` are dropped (``meta.text_dropped_at`` says when), from the search
index too. Expired deferrals count as settled; pending and deferred
observations keep everything: the editor has not finished with them; so
do the observations named in ``protect`` (those an active item cites, or
one that stopped being active within the retention period:
``fold_host.daemon.retention``), however old — the item's source still
shows what it rests on. Poll
rows older than that go too (the ``counters`` keep the totals). The store's
log is the record and is never pruned.
"""

from __future__ import annotations

from collections.abc import Collection

from fold_host.hostdb.part import TablePart

__all__ = ["RetentionTables"]

CHUNK = 500  # observations per statement (SQLite's limit on bound parameters is far above)


class RetentionTables(TablePart):
    """``forget_text``: the retention pass."""

    def forget_text(self, *, before: str, now: str, protect: Collection[str] = frozenset()) -> tuple[int, int]:
        """Drop the text of settled observations observed before ``before``, except those in ``protect``;
        ``(how many were changed, how many of those due were kept because protected)``."""
        with self.transaction() as db:
            # julianday() reads the offsets, so instants written in different zones compare right.
            due = db.execute(
                "SELECT seq, id FROM observations WHERE status IN ('processed', 'expired') "
                "AND julianday(observed_at) < julianday(?) "
                "AND json_extract(body, '$.meta.text_dropped_at') IS NULL", (before,)).fetchall()
            seqs = [seq for seq, observation in due if observation not in protect]
            for start in range(0, len(seqs), CHUNK):
                chunk = seqs[start:start + CHUNK]
                marks = ",".join("?" * len(chunk))
                # A trigger takes the old text out of the search index (host.db migration 8).
                db.execute("UPDATE observations SET body = json_set(body, '$.text', '', '$.title', NULL, "
                           f"'$.from', NULL, '$.meta.text_dropped_at', ?) WHERE seq IN ({marks})", (now, *chunk))
            db.execute("DELETE FROM polls WHERE julianday(at) < julianday(?)", (before,))
        return len(seqs), len(due) - len(seqs)
