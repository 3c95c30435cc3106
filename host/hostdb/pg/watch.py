"""Retention and the daemon record in PostgreSQL's words (``PgHostDB`` part; ``retention``, ``watch`` on SQLite).

* ``forget_text`` — the same rule as ``retention.RetentionTables``: settled
  observations observed before the cut lose their text, title and sender
  (``meta.text_dropped_at`` says when), in the search rows too, and older
  poll rows go; observations in ``protect`` (cited by live items) are kept whole. Instants are compared as ``timestamptz`` (they carry their
  offsets), the body is changed as ``jsonb``.
* ``daemon_record`` — with several hosts there is no one daemon record: the
  hosts table stands for it. The record is the running host (``foldctl
  run``) with the latest heartbeat, else the last one that ran; None when no
  daemon ever ran on this store.
"""

from __future__ import annotations

from collections.abc import Collection

from fold_host.hostdb.pg.connection import PgPart

__all__ = ["PgWatch"]

CHUNK = 500  # observations per statement

_DROP_TEXT = (
    "UPDATE observations SET body = CAST(jsonb_set(CAST(body AS jsonb) || "
    "jsonb_build_object('text', '', 'title', NULL, 'from', NULL), '{meta}', "
    "coalesce(CAST(body AS jsonb) -> 'meta', '{}'::jsonb) || jsonb_build_object('text_dropped_at', CAST(? AS text))) "
    "AS text) WHERE seq IN ({marks})")


class PgWatch(PgPart):
    """``forget_text`` and ``daemon_record`` for PostgreSQL."""

    def forget_text(self, *, before: str, now: str, protect: Collection[str] = frozenset()) -> tuple[int, int]:
        """Drop the text of settled observations observed before ``before``, except those in ``protect``;
        ``(how many were changed, how many of those due were kept because protected)``."""
        with self.transaction() as db:
            due = db.execute(
                "SELECT seq, id FROM observations WHERE status IN ('processed', 'expired') "
                "AND CAST(observed_at AS timestamptz) < CAST(? AS timestamptz) "
                "AND CAST(body AS jsonb) #> '{meta,text_dropped_at}' IS NULL ORDER BY seq", (before,)).fetchall()
            seqs = [seq for seq, observation in due if observation not in protect]
            for start in range(0, len(seqs), CHUNK):
                chunk = seqs[start:start + CHUNK]
                marks = ",".join("?" * len(chunk))
                db.execute(_DROP_TEXT.replace("{marks}", marks), (now, *chunk))
                db.execute(f"UPDATE observation_text SET title = '', text = '' WHERE seq IN ({marks})", chunk)
            db.execute("DELETE FROM polls WHERE CAST(at AS timestamptz) < CAST(? AS timestamptz)", (before,))
        return len(seqs), len(due) - len(seqs)

    def daemon_record(self) -> dict | None:
        """``{pid, started_at, beat_at, stopped_at, host}`` of the daemon that ran last (see the module doc)."""
        daemons = [row for row in self.hosts() if row["command"] == "foldctl run"]
        if not daemons:
            return None
        row = next((row for row in daemons if row["alive"]), daemons[0])
        return {"pid": row["pid"], "started_at": row["started_at"], "beat_at": row["heartbeat_at"],
                "stopped_at": row["stopped_at"], "host": row["id"]}
