"""The PostgreSQL store: the ``Recorder`` of ``store.base`` on a database (contract §6, §7).

``--store postgresql://user@host/db?store=alice`` (see ``location``) names
one store of a database; many stores share it. The tables and their
migrations are in ``pg_schema``; the state read from them in ``pg_state``;
a session's reads and its append in ``pg_session``.

* **One writer per store.** A write session runs in a READ COMMITTED
  transaction that first takes ``pg_advisory_xact_lock`` on a key derived
  from the store's name (so it also serialises the first writes of a store
  that does not exist yet), bounded by ``lock_timeout`` (``FOLD_LOCK_TIMEOUT``,
  10 s): on timeout, ``StoreUnavailable``. Only then does it read the head row,
  so it sees every commit of the writer before it.
* **Readers never block writers.** A read session is a REPEATABLE READ, READ
  ONLY transaction: one snapshot for all its queries, no lock at all.
* **Committed means committed.** ``append`` writes the record row and the
  cached-state rows and COMMITs in one transaction: before the COMMIT nothing
  is visible; once it returns, the batch is committed. A failure before the
  COMMIT rolls back (nothing written); a failure during it is an unknown
  outcome: ``StoreUnavailable`` (retry with the same batch_id), the cached
  state is dropped and the next session reads the head again.
* **Unknown is never "not found".** A connection that fails, a lock that
  times out, a schema this Fold does not know: ``StoreUnavailable`` (exit 3).
  A store missing from the database is ``StoreMissing`` (also exit 3).

One recorder keeps one connection and the state of its last session: a
long-lived process (the host, a benchmark) only reads the records others
appended since (or the head again, when they are many).

Fault points (contract §6.3) on this store: ``before_append`` (nothing sent),
``mid_append`` (the record row written, not committed), ``after_append``
(every row written, not committed: a transaction is all or nothing, so unlike
the file store's written-but-unsynced line this batch is lost),
``after_fsync`` (COMMIT returned) and ``mid_snapshot`` (committed, while the
process updates its cached state). ``FOLD_INJECT=enospc_append`` fails the
transaction before its COMMIT, ``eio_fsync`` reports an unknown outcome after
it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import psycopg
from psycopg import conninfo as pg_conninfo

from fold_core.errors import StoreCorrupt, StoreUnavailable, UsageError
from fold_core.state import Replayer, State, empty_state
from fold_core.store.base import Recorder, Session, Store
from fold_core.store.location import PgLocation, parse_url
from fold_core.store.locking import lock_timeout
from fold_core.store.meta import DEFAULT_BUDGET, StoreMissing
from fold_core.store.pg.schema import LATEST, SchemaTooNew, migrate, schema_version
from fold_core.store.pg.session import PgSession, Row, one_row
from fold_core.store.pg.state import Head, load_state, parse_record

__all__ = ["PostgresRecorder", "create_pg_store", "drop_pg_store", "pg_connect", "postgres_store", "store_key",
           "unavailable_error"]

CONNECT_TIMEOUT = 10  # seconds, unless the URL gives connect_timeout
TAIL_RECORDS = 256  # beyond this many new records, a session reloads the head instead of replaying them
MEMORY_BOUND = 20_000  # items held in memory before a session reloads the head (a long-lived process)


def store_key(name: str) -> int:
    """The advisory lock key of the store ``name`` (a signed 64-bit integer)."""
    digest = hashlib.sha256(b"fold-store\0" + name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def unavailable_error(error: BaseException, doing: str, location: PgLocation) -> StoreUnavailable:
    detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return StoreUnavailable(f"{doing} {location.display}: {detail}")


class PostgresRecorder(Recorder):
    """Records in ``fold_records``, the cached state in ``fold_items`` / ``fold_annotations``."""

    def __init__(self, location: str | PgLocation, budget: int | None = None) -> None:
        self.location = parse_url(location) if isinstance(location, str) else location
        self.budget = budget  # used only when a write creates the store
        self.key = store_key(self.location.name)
        self._conn: psycopg.Connection[Row] | None = None
        self._schema: int | None = None
        self.head: Head | None = None  # the head row as of the last session
        self.state: State | None = None  # the state at head.event_seq

    # -- the connection ---------------------------------------------------------------

    def connection(self) -> psycopg.Connection[Row]:
        """The open connection (autocommit: transactions are begun explicitly)."""
        if self._conn is not None and not self._conn.closed:
            return self._conn
        self._conn = None
        self._conn = pg_connect(self.location)
        return self._conn

    def query(self, sql: str, params: Sequence[Any] | None = None) -> psycopg.Cursor[Row]:
        """Run one statement on the connection (in the session's transaction, if one is open)."""
        return self.connection().execute(sql, params)

    def close(self) -> None:
        """Close the connection (the database needs no clean shutdown)."""
        if self._conn is not None:
            self._conn.close()
        self._conn, self.state, self.head = None, None, None

    def forget(self) -> None:
        """Drop the connection and the cached state (after an error: trust nothing in memory)."""
        conn, self._conn, self.state, self.head = self._conn, None, None, None
        if conn is not None:
            try:
                conn.close()
            except psycopg.Error:
                pass

    # -- sessions -------------------------------------------------------------------

    @contextmanager
    def session(self, *, write: bool) -> Iterator[PgSession]:
        with self._failing():
            self._check_schema(write)
            head = self._begin(write)
            if head is None and not write:
                raise StoreMissing(f"no store {self.location.name!r} in {self.location.display}:"
                                   " create one with `foldctl init`")
            state = self._sync(head)
            yield PgSession(self, head, state)
        self._end(rollback=write)

    @contextmanager
    def _failing(self) -> Iterator[None]:
        """A database error drops the connection and is ``StoreUnavailable``; any other rolls back."""
        try:
            yield
        except psycopg.Error as error:
            self.forget()
            raise unavailable_error(error, "cannot read the store", self.location) from None
        except BaseException:
            self._end(rollback=True)
            raise

    def _begin(self, write: bool) -> Head | None:
        """Begin the session's transaction (and, to write, take the lock); the head row.

        A kept connection found dead (the server restarted, an idle timeout) is
        replaced once: nothing of this session was sent on it yet.
        """
        conn = self.connection()
        try:
            return self._start(conn, write)
        except psycopg.OperationalError as error:
            if isinstance(error, psycopg.errors.LockNotAvailable) or (not conn.closed and not conn.broken):
                raise
        self._conn = None  # the cached state stays valid: it is checked against the head
        return self._start(self.connection(), write)

    def _start(self, conn: psycopg.Connection[Row], write: bool) -> Head | None:
        """BEGIN, the lock, the head: one round trip (a pipeline; each statement waits for the one before)."""
        timeout = lock_timeout() if write else 0.0
        tried = None
        try:
            with conn.pipeline():
                if write:
                    conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
                    if timeout > 0:
                        conn.execute(f"SET LOCAL lock_timeout = {max(1, int(timeout * 1000))}")
                        conn.execute("SELECT pg_advisory_xact_lock(%s)", (self.key,))
                    else:
                        tried = conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (self.key,))
                else:
                    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                # READ COMMITTED: this statement's snapshot is taken after the lock, so it sees
                # every commit of the writer before.
                found = conn.execute(f"SELECT {Head.COLUMNS} FROM fold_stores WHERE name = %s",
                                     (self.location.name,))
        except psycopg.errors.LockNotAvailable:
            self._end(rollback=True)
            raise self._busy(timeout) from None
        if tried is not None and not one_row(tried)[0]:
            self._end(rollback=True)
            raise self._busy(timeout)
        row = found.fetchone()
        return None if row is None else Head(*row)

    def _busy(self, timeout: float) -> StoreUnavailable:
        return StoreUnavailable(f"the store is busy: {self.location.display} not locked within {timeout:g} s")

    def _end(self, *, rollback: bool) -> None:
        conn = self._conn
        if conn is None or conn.closed or conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            return
        try:
            conn.execute("ROLLBACK" if rollback else "COMMIT")
        except psycopg.Error:
            self.forget()

    def _check_schema(self, write: bool) -> None:
        if self._schema == LATEST:
            return
        conn = self.connection()
        try:
            version = schema_version(conn)
            if version > LATEST:
                raise SchemaTooNew(f"the database's Fold schema is version {version}; this Fold knows up to"
                                   f" {LATEST}: upgrade Fold")
            if version < LATEST:
                if not write:
                    if version == 0:
                        raise StoreMissing(f"no Fold store in {self.location.display} (no Fold tables):"
                                           " create one with `foldctl init`")
                    raise StoreUnavailable(f"{self.location.display}: the Fold schema is version {version};"
                                           f" a write (`foldctl init`) brings it to {LATEST}")
                version = migrate(conn)
        except SchemaTooNew as error:
            raise StoreUnavailable(f"{self.location.display}: {error}") from None
        self._schema = version

    def lock(self, conn: psycopg.Connection[Row]) -> None:
        """Take the store's advisory lock for this transaction, waiting at most ``lock_timeout()``."""
        timeout = lock_timeout()
        if timeout <= 0:
            taken = one_row(conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (self.key,)))[0]
        else:
            conn.execute(f"SET LOCAL lock_timeout = {max(1, int(timeout * 1000))}")
            try:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (self.key,))
                taken = True
            except psycopg.errors.LockNotAvailable:
                taken = False
        if not taken:
            self._end(rollback=True)
            raise self._busy(timeout)

    def begin_write(self) -> tuple[psycopg.Connection[Row], Head | None]:
        """The prelude of a write outside a session (``init``, a store moved here): the schema brought up to
        date, then BEGIN, the store's lock and its head row."""
        self._check_schema(write=True)
        conn = self.connection()
        conn.execute("BEGIN")
        return conn, self.locked_head(conn)

    def locked_head(self, conn: psycopg.Connection[Row]) -> Head | None:
        """Take the store's lock in the open transaction; then its head row."""
        self.lock(conn)
        return self.read_head(conn)

    def read_head(self, conn: psycopg.Connection[Row]) -> Head | None:
        row = conn.execute(f"SELECT {Head.COLUMNS} FROM fold_stores WHERE name = %s",
                           (self.location.name,)).fetchone()
        return None if row is None else Head(*row)

    def _sync(self, head: Head | None) -> State:
        """The state at ``head``: the cached one, the cached one plus the new records, or loaded."""
        if head is None:
            self.head, self.state = None, None
            return empty_state(self.budget or DEFAULT_BUDGET)
        cached, known = self.state, self.head
        if cached is not None and known is not None and known.id == head.id:
            behind = head.event_seq - cached.event_seq
            if behind == 0:
                self.head = head
                return cached
            items = cached.items
            in_memory = len(getattr(items, "base", ())) + len(getattr(items, "top", ()))
            if 0 < behind <= TAIL_RECORDS and in_memory <= MEMORY_BOUND:
                state = self._replay_tail(cached, head)
                self.head, self.state = head, state
                return state
        state = load_state(self.query, head)
        self.head, self.state = head, state
        return state

    def _replay_tail(self, state: State, head: Head) -> State:
        replayer = Replayer(state)
        rows = self.query("SELECT event_seq, body FROM fold_records WHERE store = %s AND event_seq > %s"
                          " AND event_seq <= %s ORDER BY event_seq", (head.id, state.event_seq, head.event_seq))
        expected = state.event_seq
        for event_seq, body in rows:
            expected += 1
            record = parse_record(event_seq, body)
            if event_seq != expected:
                raise StoreCorrupt(f"record {expected} is missing (found {event_seq} after {expected - 1})",
                                   line=expected)
            replayer.apply(record)
        if expected != head.event_seq:
            raise StoreCorrupt(f"the head says event_seq {head.event_seq} but the records end at {expected}",
                               line=expected + 1)
        return replayer.freeze()


def pg_connect(location: PgLocation, *, application_name: str = "fold",
               doing: str = "cannot connect to the store") -> psycopg.Connection[Row]:
    """A new autocommit connection to the database of ``location`` (its password from where the URL says)."""
    options: dict[str, Any] = {"autocommit": True, "application_name": application_name}
    try:
        given = pg_conninfo.conninfo_to_dict(location.conninfo)
    except psycopg.ProgrammingError as error:
        raise UsageError(f"the store URL {location.display} is not a valid libpq URI: {str(error).strip()}") from None
    if "connect_timeout" not in given:
        options["connect_timeout"] = CONNECT_TIMEOUT
    password = location.password()
    if password is not None:
        options["password"] = password
    try:
        return psycopg.connect(location.conninfo, **options)
    except psycopg.Error as error:
        raise unavailable_error(error, doing, location) from None


def postgres_store(location: str | PgLocation, budget: int | None = None) -> Store:
    """A ``Store`` over the PostgreSQL store named by ``location``."""
    return Store(PostgresRecorder(location, budget))


def create_pg_store(location: str | PgLocation, budget: int = DEFAULT_BUDGET,
                    created_at: str | None = None) -> tuple[dict, bool]:
    """``init``: migrate the database and create the store unless it exists; ``(meta, created)``.

    ``created_at`` (default: now) is for a store moved here from elsewhere.
    """
    if not 8 <= budget <= 4096:
        raise ValueError(f"budget must be 8…4096, got {budget}")
    recorder = PostgresRecorder(location, budget)
    try:
        conn, head = recorder.begin_write()
        if head is not None:
            conn.execute("ROLLBACK")
            return head.meta(), False
        if created_at is None:
            created_at = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        conn.execute("INSERT INTO fold_stores (name, budget, created_at) VALUES (%s, %s, %s)",
                     (recorder.location.name, budget, created_at))
        conn.execute("COMMIT")
        return {"format": "fold-store", "version": 1, "budget": budget, "created_at": created_at}, True
    except psycopg.Error as error:
        raise unavailable_error(error, "cannot create the store", recorder.location) from None
    finally:
        recorder.forget()


def drop_pg_store(location: str | PgLocation) -> bool:
    """Delete a store and everything it holds (tests and the conformance runner clean up with it)."""
    recorder = PostgresRecorder(location)
    try:
        conn = recorder.connection()
        if schema_version(conn) == 0:
            return False
        conn.execute("BEGIN")
        head = recorder.locked_head(conn)
        if head is None:
            conn.execute("ROLLBACK")
            return False
        for table in ("fold_item_records", "fold_annotations", "fold_items", "fold_records"):
            conn.execute(f"DELETE FROM {table} WHERE store = %s", (head.id,))
        conn.execute("DELETE FROM fold_stores WHERE id = %s", (head.id,))
        conn.execute("COMMIT")
        return True
    except psycopg.Error as error:
        raise unavailable_error(error, "cannot drop the store", recorder.location) from None
    finally:
        recorder.forget()
