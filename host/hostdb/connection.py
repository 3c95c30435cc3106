"""One connection to host.db: opening, migrations, transactions and the ``host_meta`` facts.

SQLite in WAL mode, so the daemon, ``foldctl feedback`` and the Pinboard can
write beside each other; ``synchronous=FULL`` and ``BEGIN IMMEDIATE`` write
transactions. Every SQLite error leaves as a Fold error (``failures``:
damaged, disk full, read-only, busy). ``create=False`` opens an existing
host.db only (the daemon's guard: a missing one is not silently made anew).
The table parts of ``SqliteHostDB`` build on it (``part.TablePart``); their
SQL is shared with the PostgreSQL connection (``pg.connection``), and the few
places where the two dialects differ read the attributes set here
(``_unclaimed``, ``_skip_locked``, ``_distinct``, ``_insert_seq``).
"""

from __future__ import annotations

import os
import sqlite3
import time
from urllib.parse import quote
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, Self

from fold_core.errors import StoreError, StoreUnavailable
from fold_host.hostdb.failures import GuardedConnection, HostDBCorrupt, translated
from fold_host.hostdb.part import TablePart
from fold_host.hostdb.protocol import Link
from fold_host.hostdb.schema import MIGRATIONS, OPEN_TIMEOUT, statements

__all__ = ["Connection"]


class Connection(TablePart):
    """One connection to host.db; use from one thread (open one per thread)."""

    # One host per store directory (``hostlock``): nothing is shared, nothing is claimed.
    shared = False
    _unclaimed = ""  # PostgreSQL: observations a live window of another host holds are left out
    _skip_locked = ""  # PostgreSQL: FOR UPDATE SKIP LOCKED on the rows a window takes
    _distinct = "IS NOT"  # null-safe inequality
    connection: GuardedConnection

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self.path = str(path)
        target = self.path if create else f"file:{quote(os.path.abspath(self.path))}?mode=rw"
        try:
            self.connection = sqlite3.connect(target, timeout=OPEN_TIMEOUT, isolation_level=None,
                                              check_same_thread=False, factory=GuardedConnection, uri=not create)
        except sqlite3.Error as error:
            raise StoreUnavailable(f"{self.path}: the host database cannot be opened: {error}") from None
        self.connection.fold_path = self.path
        try:
            self.connection.raw = True
            self._prepare()
            self.connection.raw = False
        except sqlite3.Error as error:
            self.connection.close()
            failure = translated(error, self.path)
            if isinstance(failure, HostDBCorrupt):
                raise failure from None
            said = str(failure).removeprefix(f"{self.path}: ")
            raise StoreUnavailable(f"{self.path}: the host database cannot be opened: {said}") from None

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

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[GuardedConnection]:
        """One write transaction (BEGIN IMMEDIATE … COMMIT, rolled back on error)."""
        self.connection.execute("BEGIN IMMEDIATE")  # a failure is already a Fold error (``failures``)
        try:
            yield self.connection
        except BaseException:
            try:
                self.connection.execute("ROLLBACK")
            except (StoreError, sqlite3.Error):  # the first failure is the one to report
                pass
            raise
        else:
            self.connection.execute("COMMIT")

    def claiming(self) -> nullcontext[None]:
        """The transaction a window is chosen and claimed in (SQLite: none is needed; one host)."""
        return nullcontext()

    @staticmethod
    def _insert_seq(db: Link, sql: str, params: Iterable[Any]) -> int | None:
        """Run an INSERT into a table keyed by ``seq``; the new row's seq (None when nothing was inserted)."""
        cursor = db.execute(sql, tuple(params))
        assert isinstance(cursor, sqlite3.Cursor), "a transaction on host.db is one of its own connections"
        return cursor.lastrowid if cursor.rowcount else None

    @staticmethod
    def reseed(db: Link, tables: Iterable[str]) -> None:
        """After rows came in with their own seq: nothing to do (AUTOINCREMENT follows the largest)."""

    def _migrate(self) -> None:
        version = self.connection.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise StoreUnavailable(f"{self.path}: written by a newer Fold (schema {version}, this one knows "
                                   f"{len(MIGRATIONS)}); upgrade Fold")
        for number in range(version, len(MIGRATIONS)):
            with self.transaction() as db:
                if db.execute("PRAGMA user_version").fetchone()[0] > number:
                    continue  # another connection (the daemon's, the Pinboard's) applied it meanwhile
                for statement in statements(MIGRATIONS[number]):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {number + 1}")

    @property
    def schema_version(self) -> int:
        return self.connection.execute("PRAGMA user_version").fetchone()[0]

    def integrity(self) -> str:
        """SQLite's ``quick_check``: ``"ok"`` or what it found."""
        return self.connection.execute("PRAGMA quick_check").fetchone()[0]
