"""Several hosts on one PostgreSQL host database: windows, leases, consumer turns (``PgHostDB`` part).

Every ``foldctl run`` (and ``tick``) on a store in PostgreSQL is a host with
an id of its own (``holder``). The database clock decides every expiry, so
hosts on machines whose clocks disagree still agree on who holds what.

* **A source is polled by one host at a time**: the lease ``source:<name>``,
  taken before the poll and given back after; the poll's observations and
  cursor are kept only while the lease is still this host's.
* **Windows are claimed**: a window's observations are chosen
  ``FOR UPDATE SKIP LOCKED`` among those no window holds, and marked with the
  window's batch_id (``claim``) in the same transaction as its row in
  ``windows``. At most one review window exists at a time.
* **Nothing done twice**: every write about a window (its commit intent,
  settling it, its failure, a new batch_id) first checks, under the row's
  lock, that this host still holds it (``ClaimLost`` otherwise). A host that
  takes over a window whose holder stopped renewing it first commits the
  kept intent again — the store answers with the original receipt when it
  already holds it — so the batch is the one that was kept.
* **Expiry**: leases and windows expire ``lease`` seconds (``[host] lease``,
  default 30 s) after their last renewal; the host's heartbeat renews them
  (``fold_host.daemon.presence``). A host that dies loses them on expiry and another
  takes over; a host that stops gives them up at once.
* **Each consumer delivers each record once**: a delivery runs inside its
  consumer's turn — its cursor row locked (``FOR UPDATE SKIP LOCKED``: a host
  finding it locked leaves that consumer to the host delivering), the cursor
  read again under the lock and moved in the same transaction.

**Durability.** What the steps above write is redone by a later step if a
server crash loses it — a claim or a kept answer lost with it (the window is
asked again), marks (the kept answer is committed again: the store replays
its receipt), a consumer's cursor (the records are handed over again: at
least once), a lease, a call-log row — so those transactions commit without
waiting for their WAL flush (``replayable``: ``synchronous_commit = off``).
Nothing is lost by it: WAL is flushed in order, and the store's commit —
always synchronous — flushes everything written before it, the kept answer
included. A poll's new observations and its cursor, feedback and reminders
are kept synchronously: a source may not give them twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from fold_core.errors import FoldError
from fold_core.observation import Poll
from fold_host.hostdb.dispositions import DispositionTables
from fold_host.hostdb.failures import ClaimLost
from fold_host.hostdb.inbox import InboxTables
from fold_host.hostdb.pg.connection import PgPart
from fold_host.hostdb.protocol import Link
from fold_host.hostdb.sources import SourceTables

__all__ = ["SharedWork"]

_UNTIL = "clock_timestamp() + ? * interval '1 second'"
MOVED = "moved"  # the holder of a window that came with a moved store


class SharedWork(InboxTables, DispositionTables, SourceTables, PgPart):
    """Windows, leases and consumer turns shared by several hosts (see the module doc)."""

    # -- windows -------------------------------------------------------------------------

    def window_row(self) -> dict | None:
        """The window this host holds — else one whose holder let it expire, taken over — or None."""
        holder = self._holder()
        row = self.connection.execute(
            f"UPDATE windows SET holder = ?, expires_at = {_UNTIL} WHERE batch_id = (SELECT batch_id FROM windows "
            "WHERE holder = ? OR expires_at < clock_timestamp() ORDER BY holder = ? DESC, opened_at LIMIT 1 "
            "FOR UPDATE SKIP LOCKED) RETURNING body", (holder, self.lease, holder, holder)).fetchone()
        return json.loads(row[0]) if row is not None else None

    def open_window_row(self, data: dict, event_ids: Sequence[str], *, replaces: str | None = None,
                        review: bool = False) -> bool:
        """Claim a new window and its observations; False when another host holds one like it (a review)."""
        holder = self._holder()
        batch_id = data["batch_id"]
        with self.replayable() as db:
            if replaces is not None:
                self._fence(db, replaces)
                db.execute("DELETE FROM windows WHERE batch_id = ?", (replaces,))
            row = db.execute(f"INSERT INTO windows (batch_id, holder, expires_at, review, body) VALUES "
                             f"(?, ?, {_UNTIL}, ?, ?) ON CONFLICT DO NOTHING RETURNING batch_id",
                             (batch_id, holder, self.lease, review, json.dumps(data, ensure_ascii=False))).fetchone()
            if row is None:
                if replaces is not None:
                    raise ClaimLost(f"the window {batch_id} is already open")
                return False
            if replaces is not None:
                db.execute("UPDATE observations SET claim = ? WHERE claim = ?", (batch_id, replaces))
            elif event_ids:
                marks = ",".join("?" * len(event_ids))
                claimed = db.execute(f"UPDATE observations SET claim = ? WHERE claim IS NULL AND id IN ({marks})",
                                     (batch_id, *event_ids)).rowcount
                if claimed != len(set(event_ids)):
                    raise ClaimLost(f"the observations of the window {batch_id} are held by another window")
        return True

    def window_intent(self, batch_id: str) -> dict | None:
        row = self.connection.execute("SELECT intent FROM windows WHERE batch_id = ? AND holder = ?",
                                      (batch_id, self._holder())).fetchone()
        return json.loads(row[0]) if row is not None and row[0] is not None else None

    def save_window_intent(self, batch_id: str, intent: dict) -> None:
        self._held_update("UPDATE windows SET intent = ? WHERE batch_id = ? AND holder = ?",
                          (json.dumps(intent, ensure_ascii=False), batch_id, self._holder()), batch_id)

    def drop_window_intent(self, batch_id: str) -> None:
        self._held_update("UPDATE windows SET intent = NULL WHERE batch_id = ? AND holder = ?",
                          (batch_id, self._holder()), batch_id)

    def drop_window_row(self, batch_id: str) -> None:
        """Give the window up: its observations are free again (nothing happens to a window another host holds)."""
        with self.replayable() as db:
            if self._holds(db, batch_id):
                self._release(db, batch_id)

    def settle_window(self, dispositions: Iterable[dict], *, batch_id: str, now: str, drop: Sequence[str],
                      note: tuple[str, Any], outcome: str | None = None) -> None:
        with self.replayable() as db:
            self._fence(db, batch_id)
            super().settle_window(dispositions, batch_id=batch_id, now=now, drop=drop, note=note, outcome=outcome)
            self._release(db, batch_id)

    def fail_window(self, ids: Sequence[str], *, count: bool, now: str, drop: Sequence[str],
                    note: tuple[str, Any], batch_id: str | None = None) -> None:
        with self.replayable() as db:
            if batch_id is not None:
                self._fence(db, batch_id)
            super().fail_window(ids, count=count, now=now, drop=drop, note=note)
            if batch_id is not None:
                self._release(db, batch_id)

    def open_windows(self) -> list[tuple[dict, dict | None]]:
        """Every open window with its kept answer, the oldest first (what a move carries over)."""
        rows = self.connection.execute("SELECT body, intent FROM windows ORDER BY opened_at, batch_id").fetchall()
        return [(json.loads(body), json.loads(intent) if intent is not None else None) for body, intent in rows]

    def adopt_window(self, db: Link, window: dict, intent: dict | None) -> None:
        """A window moved here: held by no host and already expired, so the first host to look finishes it."""
        db.execute("INSERT INTO windows (batch_id, holder, expires_at, review, body, intent) VALUES "
                   "(?, ?, clock_timestamp(), ?, ?, ?)",
                   (window["batch_id"], MOVED, window["signal"]["type"] == "review", json.dumps(window, ensure_ascii=False),
                    json.dumps(intent, ensure_ascii=False) if intent is not None else None))
        ids = list(window["event_ids"])
        if ids:
            db.execute(f"UPDATE observations SET claim = ? WHERE id IN ({','.join('?' * len(ids))})",
                       (window["batch_id"], *ids))

    def ready_count(self, now: datetime) -> int:
        """Observations a window could take now, plus windows whose holder let them expire (to take over)."""
        expired = self.connection.execute("SELECT count(*) FROM windows WHERE expires_at < clock_timestamp()"
                                          ).fetchone()[0]
        return super().ready_count(now) + expired

    def _holds(self, db: Link, batch_id: str) -> bool:
        return db.execute("SELECT 1 FROM windows WHERE batch_id = ? AND holder = ? FOR UPDATE",
                          (batch_id, self._holder())).fetchone() is not None

    def _fence(self, db: Link, batch_id: str) -> None:
        if not self._holds(db, batch_id):
            raise ClaimLost(f"the window {batch_id} was taken over by another host (this one did not renew it "
                            "in time); that host finishes it")

    def _held_update(self, statement: str, params: tuple, batch_id: str) -> None:
        with self.replayable() as db:
            if db.execute(statement, params).rowcount == 0:
                raise ClaimLost(f"the window {batch_id} was taken over by another host; that host finishes it")

    @staticmethod
    def _release(db: Link, batch_id: str) -> None:
        db.execute("UPDATE observations SET claim = NULL WHERE claim = ?", (batch_id,))
        db.execute("DELETE FROM windows WHERE batch_id = ?", (batch_id,))

    def _holder(self) -> str:
        if self.holder is None:
            raise FoldError("this connection belongs to no host: windows and leases need one")
        return self.holder

    # -- leases ------------------------------------------------------------------------------

    def take_lease(self, name: str) -> bool:
        """Take (or keep) the lease ``name``; False while another host holds it unexpired."""
        with self.replayable() as db:
            row = db.execute(f"INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, {_UNTIL}) "
                             "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
                             "expires_at = excluded.expires_at WHERE leases.expires_at < clock_timestamp() "
                             "OR leases.holder = excluded.holder RETURNING holder",
                             (name, self._holder(), self.lease)).fetchone()
        return row is not None

    def release_lease(self, name: str) -> None:
        with self.replayable() as db:
            db.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, self._holder()))

    def record_poll(self, source: str, poll: Poll, *, now: str) -> int:
        """Keep a poll's observations and cursor — only while this host still holds the source's lease.

        (A connection that is no host's, such as a tool's, holds no lease and is not checked.)
        """
        with self.transaction() as db:
            if not poll.observations:  # nothing a source might not give again: a lost cursor is read again
                db.run("SET LOCAL synchronous_commit = off")
            held = self.holder is None or db.execute("SELECT 1 FROM leases WHERE name = ? AND holder = ? FOR UPDATE",
                                                     (f"source:{source}", self.holder)).fetchone()
            if not held:
                raise ClaimLost(f"the lease of source {source} was taken over by another host during the poll; "
                                "nothing of this poll was kept")
            return super().record_poll(source, poll, now=now)

    def save_poll_outcome(self, source: str, **fields: Any) -> int:
        with self.replayable():  # a source's health and next poll: the next poll writes them again
            return super().save_poll_outcome(source, **fields)

    # -- consumers -----------------------------------------------------------------------------

    @contextmanager
    def consumer_turn(self, name: str) -> Iterator[dict | None]:
        """The consumer's row, locked for this delivery (None: another host is delivering to it)."""
        with self.replayable():
            rows = self._rows("SELECT name, event_seq, failures, next_try_at, last_error, last_error_at, "
                              "updated_at FROM consumers WHERE name = ? FOR UPDATE SKIP LOCKED", (name,))
            yield rows[0] if rows else None
