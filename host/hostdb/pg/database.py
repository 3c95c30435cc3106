"""The host's state in PostgreSQL: ``PgHostDB``, a ``HostDB`` as ``SqliteHostDB`` is (contract §6.4, §11).

When the store is a ``postgresql://`` URL, the host database is the store's
own database: the store's host schema (``pg.schema``). ``PgHostDB`` is made
of the same table parts as ``SqliteHostDB`` (the SQL written once, see
``pg.connection``), with search by ``ILIKE`` and marks in one round trip
(``pg.dialect``), retention and the daemon record (``pg.watch``) and the parts
several hosts need (``pg.shared``, ``pg.hosts``).

A host keeps its connections in a ``PgHostPool`` (the daemon opens one per
job; a connection set up once is used again), each carrying the host's id
and lease. A command that is not a host (``inbox``, ``calls``,
``feedback``) opens one connection with ``open_pg_host_db``.
"""

from __future__ import annotations

import threading

import psycopg

from fold_core.store.location import PgLocation, parse_url
from fold_core.store.pg.recorder import pg_connect
from fold_host.hostdb.calls import CallTables
from fold_host.hostdb.cited import CitedTables
from fold_host.hostdb.consumers import ConsumerTables
from fold_host.hostdb.dispositions import DispositionTables
from fold_host.hostdb.entries import EntryTables
from fold_host.hostdb.inbox import InboxTables
from fold_host.hostdb.learning import LearningTables
from fold_host.hostdb.pg.connection import PgConnection, PgLink, host_schema_version
from fold_host.hostdb.pg.hosts import HostRows
from fold_host.hostdb.pg.learning import PgLearning
from fold_host.hostdb.pg.schema import schema_name
from fold_host.hostdb.pg.dialect import PgDialect
from fold_host.hostdb.pg.shared import SharedWork
from fold_host.hostdb.pg.watch import PgWatch
from fold_host.hostdb.sources import SourceTables
from fold_host.hostdb.watch import WatchTables

__all__ = ["PgHostDB", "PgHostPool", "open_pg_host_db", "pg_host_db_exists"]

POOL_SIZE = 4  # idle connections a host keeps


class PgHostDB(SharedWork, HostRows, PgDialect, PgLearning, PgWatch, InboxTables, DispositionTables, EntryTables,
               LearningTables, SourceTables, ConsumerTables, CallTables, WatchTables, CitedTables, PgConnection):
    """One connection to a store's host tables in PostgreSQL, with every table's operations."""


def _location(location: str | PgLocation) -> PgLocation:
    return parse_url(location) if isinstance(location, str) else location


def _connect(location: PgLocation) -> psycopg.Connection:
    return pg_connect(location, application_name="fold-host", doing="cannot connect to the host database of")


def open_pg_host_db(location: str | PgLocation, *, holder: str | None = None, lease: float = 30.0,
                    pool: "PgHostPool | None" = None) -> PgHostDB:
    """A connection to the host tables of the store at ``location`` (creating and migrating them as needed)."""
    location = _location(location)
    db = PgHostDB(_connect(location), location.name, location.display, holder=holder, lease=lease, pool=pool)
    try:
        db.prepare()
    except BaseException:
        db.connection.raw.close()
        raise
    return db


def pg_host_db_exists(location: str | PgLocation) -> bool:
    """Whether the store at ``location`` has host tables yet (nothing is created)."""
    location = _location(location)
    raw = _connect(location)
    try:
        return host_schema_version(PgLink(raw, location.display), schema_name(location.name)) > 0
    finally:
        raw.close()


class PgHostPool:
    """A host's connections to its host tables: ``open`` one, ``close`` gives it back (thread-safe)."""

    def __init__(self, location: str | PgLocation, *, holder: str | None, lease: float,
                 size: int = POOL_SIZE) -> None:
        self.location = _location(location)
        self.holder, self.lease, self.size = holder, lease, size
        self._idle: list[PgHostDB] = []
        self._lock = threading.Lock()
        self._closed = False

    def open(self) -> PgHostDB:
        with self._lock:
            while self._idle:
                db = self._idle.pop()
                if db.connection.usable:
                    return db
                db.connection.raw.close()
        return open_pg_host_db(self.location, holder=self.holder, lease=self.lease, pool=self)

    def take_back(self, db: PgHostDB) -> bool:
        """Keep ``db`` for the next ``open`` (False: the caller closes it)."""
        with self._lock:
            if self._closed or len(self._idle) >= self.size or not db.connection.usable:
                return False
            self._idle.append(db)
            return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for db in idle:
            db.connection.raw.close()
