"""What goes wrong with host.db, said as a user would say it: damaged, full, read-only, gone.

Every SQLite error on host.db leaves ``HostDB`` as a Fold error (never a raw
``sqlite3`` exception, so never an "internal error"):

* ``HostDBCorrupt`` (a ``StoreCorrupt``, exit 4) — SQLite says the file is
  damaged or not a database; the message says how to rebuild it;
* ``HostDBLost`` (a ``StoreUnavailable``, exit 3) — the daemon's host.db was
  removed or replaced under it (``guard``);
* ``StoreUnavailable`` (exit 3) for the rest, with ``disk full`` when the
  device has no space left (SQLite may call that "disk I/O error"),
  ``read-only`` when it cannot write.

With several hosts on a PostgreSQL host database (``pg.shared``), a host
that lost the window or lease it worked under learns it by ``ClaimLost``
(exit 3).

``GuardedConnection`` is the ``sqlite3.Connection`` factory that does this for
every statement and every fetch.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from typing import Any, Self, TypeVar

from fold_core.errors import FoldError, StoreCorrupt, StoreUnavailable

__all__ = ["ClaimLost", "GuardedConnection", "HostDBCorrupt", "HostDBLost", "REBUILD_HINT", "disk_full", "read_only",
           "translated"]

REBUILD_HINT = ("stop the daemon, move host.db (and host.db-wal, host.db-shm) aside and start it again: a new "
                "host.db is built and nothing the store's records cite is offered again (docs/operating.md, "
                "\"Rebuilding host.db\"); the store itself is not affected")
T = TypeVar("T")
_CORRUPT, _NOTADB, _FULL, _IOERR, _READONLY, _BUSY, _LOCKED, _CANTOPEN = 11, 26, 13, 10, 8, 5, 6, 14


class HostDBCorrupt(StoreCorrupt):
    """host.db is damaged: SQLite cannot read it as a database."""

    def to_error(self) -> dict:
        return {"code": "host_db_corrupt", "message": str(self), "line": None}


class HostDBLost(StoreUnavailable):
    """The daemon's host.db was removed or replaced while it ran."""

    def to_error(self) -> dict:
        return {"code": "host_db_lost", "message": str(self)}


class ClaimLost(FoldError):
    """This host no longer holds the window or lease it was working under (another host took it over)."""

    exit_code = 3

    def to_error(self) -> dict:
        return {"code": "store_unavailable", "message": str(self)}


def disk_full(path: str) -> bool:
    """Whether the device holding ``path`` has no space left for an ordinary user."""
    try:
        stats = os.statvfs(os.path.dirname(os.path.abspath(path)) or ".")
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < 64 * 1024


def read_only(path: str) -> bool:
    """Whether the file system holding ``path`` is mounted read-only."""
    try:
        return bool(os.statvfs(os.path.dirname(os.path.abspath(path)) or ".").f_flag & os.ST_RDONLY)
    except OSError:
        return False


def translated(error: sqlite3.Error, path: str) -> StoreUnavailable | StoreCorrupt:
    """The Fold error for an SQLite error on the host database at ``path``."""
    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF
    text = str(error)
    if code in (_CORRUPT, _NOTADB) or "malformed" in text or "not a database" in text:
        return HostDBCorrupt(f"{path}: the host database is damaged ({text}); {REBUILD_HINT}")
    if code == _FULL or (code == _IOERR and disk_full(path)):
        return StoreUnavailable(f"{path}: disk full: no space left on the device for the host database "
                                f"(SQLite: {text}); free some space, nothing was lost")
    if code == _READONLY or (code == _CANTOPEN and read_only(path)):
        return StoreUnavailable(f"{path}: the host database cannot be written: read-only file system "
                                f"(SQLite: {text})")
    if code in (_BUSY, _LOCKED):
        return StoreUnavailable(f"{path}: the host database is busy ({text}); another process holds it")
    return StoreUnavailable(f"{path}: the host database failed: {text}")


class _GuardedCursor(sqlite3.Cursor):
    connection: GuardedConnection  # made only by ``GuardedConnection.cursor``

    def _guard(self, call: Callable[..., T], *args: Any) -> T:
        try:
            return call(*args)
        except sqlite3.Error as error:
            raise translated(error, self.connection.fold_path) from None

    def execute(self, *args: Any) -> Self:
        return self._guard(super().execute, *args)

    def executemany(self, *args: Any) -> Self:
        return self._guard(super().executemany, *args)

    def fetchone(self) -> Any:
        return self._guard(super().fetchone)

    def fetchmany(self, *args: Any) -> list[Any]:
        return self._guard(super().fetchmany, *args)

    def fetchall(self) -> list[Any]:
        return self._guard(super().fetchall)

    def __next__(self) -> Any:
        return self._guard(super().__next__)


class GuardedConnection(sqlite3.Connection):
    """A connection whose statements and fetches raise Fold errors (``translated``) instead of SQLite's.

    ``raw = True`` lets SQLite's own errors through (the opening steps retry on "database is locked").
    """

    fold_path = "host.db"
    raw = False

    def cursor(self, factory=None):  # untyped: sqlite3 types it by overloads on the factory given
        return super().cursor(factory or (sqlite3.Cursor if self.raw else _GuardedCursor))

    def execute(self, sql: str, parameters: Any = ()) -> sqlite3.Cursor:
        return self.cursor().execute(sql, parameters)
