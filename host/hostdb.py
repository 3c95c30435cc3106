"""The host database: ``host.db`` in the store directory (contract §9–§11).

SQLite in WAL mode, so the daemon, ``foldctl feedback`` and the Pinboard can
write beside each other; the schema is versioned through ``PRAGMA
user_version`` and upgraded by the ordered ``MIGRATIONS`` (never edited
once released: add a new one).

What it keeps (the store keeps the state; this keeps the host's work):

* ``observations`` — the inbox, deduplicated by id, in arrival order, each
  pending / processed / deferred with its disposition and why;
* ``cursors``, ``polls`` and ``sources`` — adapter cursors, the health history
  and per-source backoff;
* ``reminders`` — snoozes that come due once;
* ``consumers`` and ``consumer_memory`` — consumer cursors, failures, memory;
* ``agent_calls`` — every editor call: request, response, attempt, latency,
  tokens, outcome;
* ``host_meta`` — small facts such as the last review.

A poll's observations and its cursor are written in one transaction: a crash
between them can neither lose nor duplicate an observation.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, MutableMapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from fold_core.errors import StoreUnavailable
from fold_core.observation import Observation, Poll
from fold_core.timefmt import parse_instant

__all__ = ["HostDB", "MIGRATIONS", "open_host_db", "retry_pause"]

RETRY_FIRST, RETRY_CAP = timedelta(minutes=1), timedelta(hours=6)


def retry_pause(failures: int) -> timedelta:
    """How long an observation whose window failed ``failures`` times waits: 1 min, 2, 4, … at most 6 h."""
    return min(RETRY_FIRST * 2 ** min(max(failures - 1, 0), 20), RETRY_CAP)


def _pausing(failures: int, failed_at: str | None, now: datetime) -> bool:
    """Whether an observation whose last window failed at ``failed_at`` still waits at ``now``."""
    moment = parse_instant(failed_at) if failed_at else None
    return moment is not None and moment + retry_pause(failures) > now

FILE_NAME = "host.db"
OPEN_TIMEOUT = 30.0  # seconds a connection waits for another one (busy timeout, switching to WAL)

MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema
    """
    CREATE TABLE observations (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        channel TEXT NOT NULL,
        at TEXT,
        observed_at TEXT NOT NULL,
        body TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'processed', 'deferred')),
        disposition TEXT,
        why TEXT,
        related TEXT,
        batch_id TEXT,
        processed_at TEXT,
        failed_windows INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX observations_by_status ON observations (status, seq);
    CREATE INDEX observations_by_source ON observations (source, seq);
    CREATE TABLE cursors (source TEXT PRIMARY KEY, cursor TEXT, updated_at TEXT NOT NULL);
    CREATE TABLE polls (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        source TEXT NOT NULL,
        at TEXT NOT NULL,
        status TEXT NOT NULL,
        error_class TEXT,
        message TEXT,
        observations INTEGER NOT NULL DEFAULT 0,
        notes TEXT
    );
    CREATE INDEX polls_by_source ON polls (source, seq);
    CREATE TABLE sources (
        source TEXT PRIMARY KEY,
        failures INTEGER NOT NULL DEFAULT 0,
        last_poll_at TEXT,
        last_ok_at TEXT,
        next_poll_at TEXT,
        last_error TEXT,
        disabled INTEGER NOT NULL DEFAULT 0,
        min_interval REAL
    );
    CREATE TABLE reminders (
        id TEXT PRIMARY KEY,
        target TEXT NOT NULL,
        feedback TEXT NOT NULL,
        due_at TEXT NOT NULL,
        requested_at TEXT NOT NULL,
        fired_at TEXT
    );
    CREATE TABLE consumers (
        name TEXT PRIMARY KEY,
        event_seq INTEGER NOT NULL,
        failures INTEGER NOT NULL DEFAULT 0,
        next_try_at TEXT,
        last_error TEXT,
        last_error_at TEXT,
        updated_at TEXT
    );
    CREATE TABLE consumer_memory (
        consumer TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (consumer, key)
    );
    CREATE TABLE agent_calls (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        batch_id TEXT,
        attempt INTEGER,
        backend TEXT,
        at TEXT,
        latency_ms REAL,
        request TEXT,
        response TEXT,
        stderr TEXT,
        input_tokens INTEGER,
        output_tokens INTEGER,
        outcome TEXT,
        error TEXT
    );
    CREATE TABLE host_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # 2: the host cycle: a thread index (referenced not-active items, §9 context) and
    # the settings fingerprint of a source (a changed configuration lifts "disabled").
    """
    ALTER TABLE observations ADD COLUMN thread TEXT;
    UPDATE observations SET thread = json_extract(body, '$.thread');
    CREATE INDEX observations_by_thread ON observations (thread) WHERE thread IS NOT NULL;
    ALTER TABLE sources ADD COLUMN settings_digest TEXT;
    """,
    # 3: when an observation's last failed window ended (its retry pause counts from there).
    """
    ALTER TABLE observations ADD COLUMN failed_at TEXT;
    """,
)


def open_host_db(store_dir: str | os.PathLike) -> "HostDB":
    """Open (creating and migrating as needed) ``host.db`` in the store directory."""
    os.makedirs(store_dir, exist_ok=True)
    return HostDB(os.path.join(store_dir, FILE_NAME))


class HostDB:
    """One connection to host.db; use from one thread (open one per thread)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = str(path)
        try:
            self.connection = sqlite3.connect(self.path, timeout=OPEN_TIMEOUT, isolation_level=None,
                                              check_same_thread=False)
            self._prepare()
        except sqlite3.Error as error:
            raise StoreUnavailable(f"{self.path}: the host database cannot be opened: {error}") from None

    def _prepare(self) -> None:
        """WAL, full sync, foreign keys and the migrations; retried while SQLite says "locked".

        When several connections open a fresh host.db at once (the daemon's
        threads, the Pinboard), SQLite answers some steps — switching to WAL,
        which needs the database to itself, or recovering a WAL index another
        connection is building — with "database is locked" at once instead of
        waiting out the busy timeout. Every step here can be repeated: the
        journal mode persists once one connection has set it, and a migration
        reads the schema version again inside its write transaction.
        """
        deadline = time.monotonic() + OPEN_TIMEOUT
        pause = 0.005
        while True:
            try:
                self.connection.execute("PRAGMA journal_mode=WAL")
                self.connection.execute("PRAGMA synchronous=FULL")
                self.connection.execute("PRAGMA foreign_keys=ON")
                self._migrate()
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() + pause > deadline:
                    raise
                if self.connection.in_transaction:  # a COMMIT that could not take its lock
                    self.connection.execute("ROLLBACK")
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

    # -- plumbing ----------------------------------------------------------

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> "HostDB":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE … COMMIT, rolled back on error)."""
        try:
            self.connection.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            raise StoreUnavailable(f"{self.path}: the host database is busy or unwritable: {error}") from None
        try:
            yield self.connection
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        else:
            self.connection.execute("COMMIT")

    def _migrate(self) -> None:
        version = self.connection.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise StoreUnavailable(f"{self.path}: written by a newer Fold (schema {version}, this one knows "
                                   f"{len(MIGRATIONS)}); upgrade Fold")
        for number in range(version, len(MIGRATIONS)):
            with self.transaction() as db:
                if db.execute("PRAGMA user_version").fetchone()[0] > number:
                    continue  # another connection (the daemon's, the Pinboard's) applied it meanwhile
                for statement in _statements(MIGRATIONS[number]):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {number + 1}")

    @property
    def schema_version(self) -> int:
        return self.connection.execute("PRAGMA user_version").fetchone()[0]

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        cursor = self.connection.execute(sql, tuple(params))
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    # -- polls, observations, cursors ---------------------------------------

    def record_poll(self, source: str, poll: Poll, *, now: str) -> int:
        """Keep a poll's observations, cursor and health in one transaction; the number new."""
        with self.transaction() as db:
            added = self._insert(db, poll.observations)
            # A failed poll keeps the old cursor unless it consumed some data and says so.
            if poll.health.status == "ok" or poll.cursor is not None:
                db.execute("INSERT INTO cursors (source, cursor, updated_at) VALUES (?, ?, ?) "
                           "ON CONFLICT (source) DO UPDATE SET cursor = excluded.cursor, "
                           "updated_at = excluded.updated_at",
                           (source, json.dumps(poll.cursor, ensure_ascii=False), now))
            health = poll.health
            db.execute("INSERT INTO polls (source, at, status, error_class, message, observations, notes) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (source, now, health.status, health.error_class, health.message, added,
                        json.dumps(list(health.notes), ensure_ascii=False) if health.notes else None))
        return added

    def add_observations(self, observations: Iterable[Observation]) -> int:
        """Keep observations that did not come from a poll (feedback, reminders); the number new."""
        with self.transaction() as db:
            return self._insert(db, observations)

    @staticmethod
    def _insert(db: sqlite3.Connection, observations: Iterable[Observation]) -> int:
        added = 0
        for observation in observations:
            cursor = db.execute(
                "INSERT OR IGNORE INTO observations (id, source, channel, at, observed_at, body, thread) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (observation.id, observation.source, observation.channel, observation.at,
                 observation.observed_at, observation.to_json(), observation.thread))
            added += cursor.rowcount
        return added

    def cursor(self, source: str) -> Any:
        """The saved cursor of a source (None before its first successful poll)."""
        row = self.connection.execute("SELECT cursor FROM cursors WHERE source = ?", (source,)).fetchone()
        return json.loads(row[0]) if row is not None and row[0] is not None else None

    def pending(self, limit: int | None = None) -> list[Observation]:
        """Pending observations in arrival order (at most ``limit``)."""
        sql = "SELECT body FROM observations WHERE status = 'pending' ORDER BY seq"
        params: tuple = ()
        if limit is not None:
            sql += " LIMIT ?"
            params = (limit,)
        return [Observation.from_json(row[0]) for row in self.connection.execute(sql, params)]

    def window_events(self, max_events: int, now: datetime) -> list[Observation]:
        """The observations of the next window: fresh ones first, failed ones in ever smaller groups.

        Pending observations that never failed come first (at most
        ``max_events``, in arrival order). Only when there are none, those
        whose window failed ``f`` times are taken — once their pause
        (``retry_pause(f)`` after the failure) is over, only those with the
        fewest failures, at most ``max_events >> f`` of them (at least one).
        So an observation the editor cannot settle never holds up the ones
        behind it: each failure halves the group it is in until it is alone,
        and it is retried ever more rarely. It stays pending (nothing is lost);
        ``foldctl doctor`` and ``foldctl inbox`` show it.
        """
        rows = self.connection.execute("SELECT body FROM observations WHERE status = 'pending' AND "
                                       "failed_windows = 0 ORDER BY seq LIMIT ?", (max_events,)).fetchall()
        if rows:
            return [Observation.from_json(row[0]) for row in rows]
        group: list[str] = []
        failed = None
        for body, count, failed_at in self.connection.execute(
                "SELECT body, failed_windows, failed_at FROM observations WHERE status = 'pending' AND "
                "failed_windows > 0 ORDER BY failed_windows, seq"):
            if failed is not None and (count != failed or len(group) >= max(1, max_events >> min(failed, 30))):
                break
            if _pausing(count, failed_at, now):
                continue
            failed = count
            group.append(body)
        return [Observation.from_json(body) for body in group]

    def ready_count(self, now: datetime) -> int:
        """How many pending observations a window could take now (not pausing after failed windows)."""
        fresh = self.connection.execute("SELECT count(*) FROM observations WHERE status = 'pending' AND "
                                        "failed_windows = 0").fetchone()[0]
        return fresh + sum(1 for count, failed_at in self.connection.execute(
            "SELECT failed_windows, failed_at FROM observations WHERE status = 'pending' AND failed_windows > 0")
            if not _pausing(count, failed_at, now))

    def held_back(self) -> tuple[int, dict | None]:
        """How many pending observations failed a window, and the one that failed most (id, failures)."""
        count = self.connection.execute("SELECT count(*) FROM observations WHERE status = 'pending' AND "
                                        "failed_windows > 0").fetchone()[0]
        worst = self.connection.execute("SELECT id, failed_windows, failed_at FROM observations WHERE status = "
                                        "'pending' AND failed_windows > 0 ORDER BY failed_windows DESC, seq "
                                        "LIMIT 1").fetchone()
        return count, ({"id": worst[0], "failures": worst[1], "failed_at": worst[2]} if worst else None)

    def pending_count(self) -> int:
        return self.connection.execute("SELECT count(*) FROM observations WHERE status = 'pending'").fetchone()[0]

    def mark(self, dispositions: Iterable[dict], *, batch_id: str | None, now: str) -> None:
        """Record the editor's dispositions: ``deferred`` stays deferred, the rest become processed.

        Each disposition is ``{"event", "disposition", "why", "related"?}``.
        """
        with self.transaction() as db:
            self.mark_in(db, dispositions, batch_id=batch_id, now=now)

    @staticmethod
    def mark_in(db: sqlite3.Connection, dispositions: Iterable[dict], *, batch_id: str | None, now: str) -> None:
        """``mark`` inside the caller's transaction; only pending observations change (exactly once)."""
        for entry in dispositions:
            status = "deferred" if entry["disposition"] == "deferred" else "processed"
            db.execute("UPDATE observations SET status = ?, disposition = ?, why = ?, related = ?, "
                       "batch_id = ?, processed_at = ? WHERE id = ? AND status = 'pending'",
                       (status, entry["disposition"], entry.get("why"),
                        json.dumps(entry.get("related") or [], ensure_ascii=False), batch_id, now,
                        entry["event"]))

    def observations(self, *, status: str | None = None, source: str | None = None,
                     limit: int = 50) -> list[dict]:
        """The inbox listing of ``foldctl inbox``, newest first."""
        clauses, params = [], []
        if status is not None:
            clauses.append("status = ?")
            params.append(status)
        if source is not None:
            clauses.append("source = ?")
            params.append(source)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._rows(f"SELECT body, status, disposition, why, related FROM observations {where} "
                          f"ORDER BY seq DESC LIMIT ?", [*params, limit])
        listed = []
        for row in rows:
            body = json.loads(row["body"])
            listed.append({"id": body["id"], "source": body["source"], "channel": body["channel"],
                           "from": body.get("from"), "at": body.get("at"), "title": body.get("title"),
                           "status": row["status"], "disposition": row["disposition"], "why": row["why"],
                           "related": json.loads(row["related"]) if row["related"] is not None else None})
        return listed

    # -- meta ----------------------------------------------------------------

    def meta(self, key: str, default: Any = None) -> Any:
        row = self.connection.execute("SELECT value FROM host_meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row is not None else default

    def set_meta(self, key: str, value: Any) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO host_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
                       "value = excluded.value", (key, json.dumps(value, ensure_ascii=False)))

    # -- consumers -------------------------------------------------------------

    def consumer_cursor(self, name: str) -> int | None:
        row = self.connection.execute("SELECT event_seq FROM consumers WHERE name = ?", (name,)).fetchone()
        return row[0] if row is not None else None

    def set_consumer_cursor(self, name: str, event_seq: int, *, now: str) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO consumers (name, event_seq, updated_at) VALUES (?, ?, ?) "
                       "ON CONFLICT (name) DO UPDATE SET event_seq = excluded.event_seq, "
                       "updated_at = excluded.updated_at, failures = 0, next_try_at = NULL",
                       (name, event_seq, now))

    def memory(self, consumer: str) -> "ConsumerMemory":
        return ConsumerMemory(self, consumer)

    # -- agent calls -------------------------------------------------------------

    def log_call(self, **fields: Any) -> None:
        """Keep one editor call (batch_id, attempt, backend, at, latency_ms, request, response,
        stderr, input_tokens, output_tokens, outcome, error)."""
        columns = ("batch_id", "attempt", "backend", "at", "latency_ms", "request", "response", "stderr",
                   "input_tokens", "output_tokens", "outcome", "error")
        unknown = set(fields) - set(columns)
        if unknown:
            raise TypeError(f"log_call: unknown fields {sorted(unknown)}")
        values = [fields.get(c) for c in columns]
        values = [json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v for v in values]
        with self.transaction() as db:
            db.execute(f"INSERT INTO agent_calls ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                       values)

    def calls(self, *, limit: int = 20, batch_id: str | None = None) -> list[dict]:
        """Editor calls, newest first."""
        if batch_id is None:
            return self._rows("SELECT * FROM agent_calls ORDER BY seq DESC LIMIT ?", (limit,))
        return self._rows("SELECT * FROM agent_calls WHERE batch_id = ? ORDER BY seq DESC LIMIT ?",
                          (batch_id, limit))


class ConsumerMemory(MutableMapping):
    """A consumer instance's durable key/value memory (JSON values), each write committed at once."""

    def __init__(self, db: HostDB, consumer: str) -> None:
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


def _statements(script: str) -> list[str]:
    return [part.strip() for part in script.split(";") if part.strip()]
