"""One connection to the host's tables in PostgreSQL: the same statements as on SQLite, transactions, schema.

The table parts of ``HostDB`` write their SQL once, in the subset both
engines read alike, with ``?`` placeholders; ``PgLink`` hands each statement
to psycopg with ``%s`` placeholders instead (and ``%`` doubled). Where the
two dialects differ, the parts read the attributes set here: a window's rows
are chosen ``FOR UPDATE SKIP LOCKED`` and leave out observations another
host's window holds (``claim``), null-safe inequality is ``IS DISTINCT
FROM``, a new row's seq comes back with ``RETURNING``.

The PostgreSQL table parts build on ``PgPart``: the engine's own words
(``run``, ``replayable``) and the host a connection works for.

Transactions nest: a table part's ``transaction()`` inside another (the
claim of a window, a consumer's turn) joins it, so what the outer one
decides is written at once or not at all. A connection that fails, or a
lock not obtained within ``OPEN_TIMEOUT``, is ``StoreUnavailable`` (exit 3).
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol, Self, TypeVar

import psycopg
from psycopg import sql as pg_sql

from fold_core.errors import StoreUnavailable
from fold_host.hostdb.part import TablePart
from fold_host.hostdb.pg.schema import MIGRATIONS, migration_lock, schema_name
from fold_host.hostdb.protocol import Link, Rows
from fold_host.hostdb.schema import OPEN_TIMEOUT, statements

__all__ = ["PgConnection", "PgLink", "PgPart", "host_schema_version", "translate"]

KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_COUNT = 10, 5, 3  # a vanished host's locks go within ~25 s
_translated: dict[str, str] = {}
T = TypeVar("T")


def translate(statement: str) -> str:
    """A statement with ``?`` placeholders as psycopg takes it (``%s``; a literal ``%`` doubled)."""
    known = _translated.get(statement)
    if known is not None:
        return known
    parts, quoted = [], False
    for char in statement:
        if char == "'":
            quoted = not quoted
        if char == "%":
            parts.append("%%")
        elif char == "?" and not quoted:
            parts.append("%s")
        else:
            parts.append(char)
    _translated[statement] = text = "".join(parts)
    return text


class PgLink:
    """A psycopg connection that takes the table parts' statements (``execute`` as sqlite3's).

    Inside a transaction the statements go out in psycopg's pipeline: they
    are sent when a result is asked for (``Queued``), so the writes that
    follow one another — and the COMMIT — travel together.
    """

    def __init__(self, raw: psycopg.Connection, where: str) -> None:
        self.raw, self.where = raw, where
        self.pipeline: psycopg.Pipeline | None = None  # the open transaction's pipeline
        self.begin_pending = False  # BEGIN goes out with the transaction's first statement

    def execute(self, statement: str, params: Iterable[Any] = ()) -> Rows:
        return self._send(translate(statement), tuple(params))

    def run(self, statement: str | pg_sql.SQL | pg_sql.Composed) -> Rows:
        """A statement without parameters (a migration's, a SET)."""
        return self._send(statement, None)

    def executemany(self, statement: str, rows: Iterable[Iterable[Any]]) -> None:
        """One statement for many rows, sent together (psycopg's pipeline)."""
        values = [tuple(row) for row in rows]

        def send() -> None:
            self._begin()
            self.raw.cursor().executemany(translate(statement), values)

        if values:
            self.guard(send)

    def _send(self, statement: str | pg_sql.SQL | pg_sql.Composed, params: tuple[Any, ...] | None) -> Rows:
        def send() -> psycopg.Cursor:
            self._begin()
            return self.raw.execute(statement, params)

        cursor = self.guard(send)
        return cursor if self.pipeline is None else Queued(cursor, self)

    def _begin(self) -> None:
        if self.begin_pending:
            self.begin_pending = False
            self.raw.execute("BEGIN")

    def sync(self) -> None:
        """Send what is queued and read every answer."""
        if self.pipeline is not None:
            self.guard(self.pipeline.sync)

    def guard(self, action: Callable[[], T]) -> T:
        try:
            return action()
        except (psycopg.OperationalError, psycopg.InterfaceError) as error:
            raise unavailable(error, self.where) from None

    @property
    def usable(self) -> bool:
        """Open, not broken and outside any transaction: fit to be used again."""
        raw = self.raw
        return not raw.closed and not raw.broken and \
            raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


class Queued:
    """A statement sent in a transaction's pipeline: reading its answer sends what is queued and waits."""

    __slots__ = ("cursor", "link")

    def __init__(self, cursor: psycopg.Cursor, link: PgLink) -> None:
        self.cursor, self.link = cursor, link

    def fetchone(self) -> Any:
        return self.link.guard(self.cursor.fetchone)

    def fetchall(self) -> list[Any]:
        return self.link.guard(self.cursor.fetchall)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())

    @property
    def rowcount(self) -> int:
        self.link.sync()
        return self.cursor.rowcount

    @property
    def description(self) -> Any:
        self.link.sync()
        return self.cursor.description


def unavailable(error: BaseException, where: str) -> StoreUnavailable:
    detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return StoreUnavailable(f"{where}: the host database cannot be used: {detail}")


def host_schema_version(link: PgLink, schema: str) -> int:
    """The migrations applied to ``schema`` (0: it has no host tables)."""
    found = link.execute("SELECT to_regclass(?)", (f'"{schema}".host_schema_version',)).fetchone()[0]
    if found is None:
        return 0
    query = pg_sql.SQL("SELECT coalesce(max(version), 0) FROM {}.host_schema_version").format(
        pg_sql.Identifier(schema))
    return link.run(query).fetchone()[0]


class Pool(Protocol):
    """Where a host's connections go back when closed (``PgHostPool``: the ``PgHostDB`` it gave out)."""

    def take_back(self, db: Any, /) -> bool: ...


class PgPart(TablePart):
    """What the PostgreSQL table parts share, beside ``TablePart``'s (see the module docstring)."""

    connection: PgLink
    holder: str | None  # the host this connection works for (None: a tool's connection)
    lease: float  # seconds a lease or window lasts after its last renewal

    @abstractmethod
    def transaction(self) -> AbstractContextManager[PgLink]:
        """A write transaction; inside another one it is part of that one."""

    @abstractmethod
    def replayable(self) -> AbstractContextManager[PgLink]:
        """A transaction that commits without waiting for its WAL flush."""

    @abstractmethod
    def _holder(self) -> str:
        """The host this connection works for (``FoldError`` when none: windows and leases need one)."""

    @abstractmethod
    def hosts(self) -> list[dict]:
        """Every known host (``hosts``)."""


class PgConnection(PgPart):
    """One connection to a store's host schema; thread-safe like psycopg's, transactions shared by threads."""

    shared = True
    _unclaimed = " AND claim IS NULL"
    _skip_locked = " FOR UPDATE SKIP LOCKED"
    _distinct = "IS DISTINCT FROM"

    def __init__(self, raw: psycopg.Connection, store: str, where: str, *, holder: str | None = None,
                 lease: float = 30.0, pool: Pool | None = None) -> None:
        self.schema = schema_name(store)
        self.path = where  # as messages name it: the store URL, password masked
        self.connection = PgLink(raw, where)
        self.holder, self.lease = holder, lease
        self._pool = pool
        self._depth = 0
        self._depth_lock = threading.Lock()

    def prepare(self) -> None:
        """Create and migrate the schema if needed; make it the connection's search path."""
        link, schema = self.connection, self.schema
        version = host_schema_version(link, schema)
        if version > len(MIGRATIONS):
            raise StoreUnavailable(f"{self.path}: the host tables are schema {version}, this Fold knows "
                                   f"{len(MIGRATIONS)}; upgrade Fold")
        if version < len(MIGRATIONS):
            self._migrate(schema)
        link.run(pg_sql.SQL("SET search_path TO {}").format(pg_sql.Identifier(schema)))
        link.run(f"SET lock_timeout = {int(OPEN_TIMEOUT * 1000)}")
        for name, value in (("tcp_keepalives_idle", KEEPALIVE_IDLE), ("tcp_keepalives_interval", KEEPALIVE_INTERVAL),
                            ("tcp_keepalives_count", KEEPALIVE_COUNT)):
            link.run(f"SET {name} = {value}")

    def _migrate(self, schema: str) -> None:
        """Apply the missing migrations in one transaction, one process at a time (a session advisory lock)."""
        link = self.connection
        key = migration_lock(schema)
        link.execute("SELECT pg_advisory_lock(?)", (key,))
        try:
            link.run(pg_sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(pg_sql.Identifier(schema)))
            link.run(pg_sql.SQL("SET search_path TO {}").format(pg_sql.Identifier(schema)))
            with self.transaction():
                for number in range(host_schema_version(link, schema), len(MIGRATIONS)):
                    for statement in statements(MIGRATIONS[number]):
                        link.run(statement)
                    link.execute("INSERT INTO host_schema_version (version) VALUES (?)", (number + 1,))
        finally:
            link.execute("SELECT pg_advisory_unlock(?)", (key,))

    def close(self) -> None:
        """Give the connection back to its pool (a host's), or close it."""
        if self._pool is not None and self._pool.take_back(self):
            return
        self.connection.raw.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[PgLink]:
        """A write transaction (in one pipeline, see ``PgLink``); inside another one it is part of that one."""
        with self._depth_lock:
            self._depth += 1
            outer = self._depth == 1
        link = self.connection
        try:
            if not outer:
                yield link
                return
            opened = link.raw.pipeline()
            link.pipeline, link.begin_pending = opened.__enter__(), True
            try:
                yield link
                if not link.begin_pending:  # something was said: commit it
                    link.run("COMMIT")
                link.sync()
            except BaseException as error:
                self._abandon(opened, error)
                raise
            opened.__exit__(None, None, None)
        finally:
            if outer:
                link.pipeline, link.begin_pending = None, False
            with self._depth_lock:
                self._depth -= 1

    def _abandon(self, opened: AbstractContextManager[psycopg.Pipeline], error: BaseException) -> None:
        """Leave the pipeline and roll back whatever the transaction did (errors on the way are the same error)."""
        link = self.connection
        link.pipeline = None
        try:
            opened.__exit__(type(error), error, error.__traceback__)
        except Exception:
            pass
        if not link.begin_pending:
            self._rollback()

    def _rollback(self) -> None:
        try:
            self.connection.raw.execute("ROLLBACK")
        except psycopg.Error:
            pass  # a broken connection: the server rolls back by itself

    @contextmanager
    def replayable(self) -> Iterator[PgLink]:
        """A transaction that commits without waiting for its WAL flush (see ``pg.shared``: what may do so)."""
        with self.transaction() as db:
            db.run("SET LOCAL synchronous_commit = off")
            yield db

    def claiming(self) -> AbstractContextManager[PgLink]:
        """The transaction in which a window's observations are chosen (``FOR UPDATE SKIP LOCKED``) and claimed."""
        return self.replayable()

    @staticmethod
    def _insert_seq(db: Link, statement: str, params: Iterable[Any]) -> int | None:
        row = db.execute(statement + " RETURNING seq", tuple(params)).fetchone()
        return row[0] if row is not None else None

    @staticmethod
    def reseed(db: Link, tables: Iterable[str]) -> None:
        """After rows came in with their own seq, the next one given is after the largest."""
        for table in tables:
            db.execute(f"SELECT setval(pg_get_serial_sequence(?, 'seq'), coalesce((SELECT max(seq) FROM {table}), 0) "
                       "+ 1, false)", (table,))

    @property
    def schema_version(self) -> int:
        return host_schema_version(self.connection, self.schema)

    def integrity(self) -> str:
        """``"ok"`` when the host tables answer (PostgreSQL checks its own pages)."""
        self.connection.execute("SELECT count(*) FROM host_meta").fetchone()
        return "ok"
