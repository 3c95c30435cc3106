"""What PostgreSQL does its own way (``PgHostDB`` part): search, and few round trips for many rows.

**New observations** go in with one multi-row ``INSERT … ON CONFLICT DO
NOTHING RETURNING`` per ``INSERT_CHUNK`` (a poll may bring hundreds), their
search rows with one more: the same rule as ``inbox._insert`` (an id already
kept is not kept again; arrival order is the order given).

**Marks.** A window's dispositions are one statement per observation (the
update and its ``dispositions`` row together, a data-modifying ``WITH``),
all sent at once; the rule is ``dispositions._mark_in``'s: an observation
changes only while pending or deferred, and not again for the batch_id it
was last marked by.

**Search.** ``observation_text`` holds each observation's title and text by its seq,
written in the same transaction as the observation. A query is split at
whitespace into at most ``MAX_TERMS`` terms, each of which must occur in the
title or the text (``ILIKE``: substrings, case-insensitive, any language).
PostgreSQL has no FTS5 and no bm25 here: hits whose title holds every term
come first, then the rest, newest first in each group; the snippet is cut as
on SQLite.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from fold_host.hostdb.calls import CallTables
from fold_host.hostdb.pg.connection import PgPart
from fold_host.hostdb.protocol import Link
from fold_host.hostdb.search import MAX_TERMS, hits, like_pattern

if TYPE_CHECKING:
    from fold_core.observation import Observation

__all__ = ["PgDialect"]

INSERT_CHUNK = 500
_COLUMNS = "(id, source, channel, at, observed_at, body, thread)"

_MARK = (
    "WITH changed AS (UPDATE observations SET "
    "status = CASE WHEN ? THEN 'deferred' ELSE 'processed' END, disposition = ?, why = ?, related = ?, "
    "batch_id = ?, processed_at = ?, "
    "deferred_at = CASE WHEN ? THEN coalesce(deferred_at, ?) ELSE deferred_at END, "
    "deferred_times = deferred_times + CASE WHEN ? THEN 1 ELSE 0 END, "
    "failed_windows = CASE WHEN ? THEN 0 ELSE failed_windows END, "
    "failed_at = CASE WHEN ? THEN NULL ELSE failed_at END "
    "WHERE id = ? AND status IN ('pending', 'deferred') AND (CAST(? AS text) IS NULL OR batch_id IS DISTINCT FROM ?) "
    "RETURNING id) "
    "INSERT INTO dispositions (observation, at, batch_id, disposition, why, related) "
    "SELECT id, ?, ?, ?, ?, ? FROM changed")


class PgDialect(CallTables, PgPart):
    """``_mark_in`` in one round trip; ``search_observations`` over ``observation_text`` with ``ILIKE``."""

    def _insert(self, db: Link, observations: Iterable[Observation]) -> int:
        observations = list(observations)
        added = 0
        for start in range(0, len(observations), INSERT_CHUNK):
            chunk = observations[start:start + INSERT_CHUNK]
            params = [value for o in chunk for value in (o.id, o.source, o.channel, o.at, o.observed_at, o.to_json(),
                                                         o.thread)]
            values = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(chunk))
            kept = db.execute(f"INSERT INTO observations {_COLUMNS} VALUES {values} ON CONFLICT DO NOTHING "
                              f"RETURNING seq, id", params).fetchall()
            by_id = {o.id: o for o in chunk}
            self.index_texts(db, sorted((seq, by_id[i].title or "", by_id[i].text or "") for seq, i in kept))
            added += len(kept)
        return added

    def log_call(self, **fields: Any) -> int:
        with self.replayable():  # a call row lost in a server crash is not worth a WAL flush per call
            return super().log_call(**fields)

    def _newest_of_first_poll(self, source: str, share: int) -> list | None:
        """As on SQLite, among ``source``'s observations no window holds, the newest chosen ``FOR UPDATE SKIP
        LOCKED`` (by ``at`` as an instant, then arrival): hosts choosing at once take different ones."""
        fresh = "status = 'pending' AND failed_windows = 0 AND claim IS NULL AND source = ?"
        first = self.connection.execute(f"SELECT observed_at FROM observations WHERE {fresh} ORDER BY seq LIMIT 1",
                                        (source,)).fetchone()
        if first is None:
            return None
        size = self.connection.execute(f"SELECT count(*) FROM observations WHERE {fresh} AND observed_at = ?",
                                       (source, first[0])).fetchone()[0]
        if size <= share:
            return None
        rows = self.connection.execute(
            f"SELECT seq, body FROM observations WHERE seq IN (SELECT seq FROM observations WHERE {fresh} AND "
            f"observed_at = ? ORDER BY CAST(at AS timestamptz) DESC NULLS LAST, seq DESC LIMIT ? "
            f"FOR UPDATE SKIP LOCKED) ORDER BY seq", (source, first[0], share)).fetchall()
        return rows or None  # all of them being chosen by other hosts: the next ones in arrival order

    def _mark_in(self, db: Link, dispositions: Iterable[dict], *, batch_id: str | None, now: str) -> None:
        rows = []
        for entry in dispositions:
            related = json.dumps(entry.get("related") or [], ensure_ascii=False)
            deferred = entry["disposition"] == "deferred"
            common = (entry["disposition"], entry.get("why"), related)
            rows.append((deferred, *common, batch_id, now, deferred, now, deferred, deferred, deferred,
                         entry["event"], batch_id, batch_id, now, batch_id, entry["disposition"], entry.get("why"),
                         related))
        db.executemany(_MARK, rows)

    @staticmethod
    def _index_text(db: Link, seq: int, title: str | None, text: str | None) -> None:
        db.execute("INSERT INTO observation_text (seq, title, text) VALUES (?, ?, ?)", (seq, title or "", text or ""))

    @staticmethod
    def index_texts(db: Link, rows: list[tuple[int, str, str]]) -> None:
        db.executemany("INSERT INTO observation_text (seq, title, text) VALUES (?, ?, ?)", rows)

    def search_observations(self, query: str, limit: int) -> list[dict]:
        """Observations whose title or text holds every term of ``query``: ``{id, source, at, title, snippet}``."""
        terms = query.split()[:MAX_TERMS]
        if not terms:
            return []
        clauses, params, in_title = [], [], []
        for term in terms:
            clauses.append("(t.title ILIKE ? OR t.text ILIKE ?)")
            params += [like_pattern(term), like_pattern(term)]
            in_title.append("t.title ILIKE ?")
        rows = self.connection.execute(
            f"SELECT o.body, t.title, t.text FROM observation_text AS t JOIN observations AS o ON o.seq = t.seq "
            f"WHERE {' AND '.join(clauses)} ORDER BY ({' AND '.join(in_title)}) DESC, o.seq DESC LIMIT ?",
            (*params, *[like_pattern(term) for term in terms], limit)).fetchall()
        return hits(rows, terms)
