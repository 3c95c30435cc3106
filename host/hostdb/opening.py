"""``open_host_db`` (a directory's host.db, or a store URL's host tables in PostgreSQL) and ``host_db_exists``.

Cheap to import: the engine's classes are loaded when a host database is
opened, so a module that only may open one (``foldctl backup``, doctor)
loads neither the inbox's models nor a database driver before it does.
"""

from __future__ import annotations

import os

from fold_core.store.location import is_url
from fold_host.hostdb.protocol import HostDB
from fold_host.hostdb.schema import FILE_NAME

__all__ = ["host_db_exists", "open_host_db"]


def open_host_db(store_dir: str | os.PathLike[str], *, create: bool = True) -> HostDB:
    """Open (creating and migrating as needed) ``host.db`` in the store directory — or, for a store URL,
    the host's tables in the store's PostgreSQL database (a ``PgHostDB``).

    ``create=False``: only an existing host.db (``StoreUnavailable`` when there is none).
    """
    if isinstance(store_dir, str) and is_url(store_dir):
        # lazy: psycopg
        from fold_host.hostdb.pg.database import open_pg_host_db

        return open_pg_host_db(store_dir)
    # lazy: the inbox's models (pydantic)
    from fold_host.hostdb.database import SqliteHostDB

    if create:
        os.makedirs(store_dir, exist_ok=True)
    return SqliteHostDB(os.path.join(store_dir, FILE_NAME), create=create)


def host_db_exists(location: str | os.PathLike[str]) -> bool:
    """Whether the store at ``location`` has a host database yet (nothing is created)."""
    if isinstance(location, str) and is_url(location):
        # lazy: psycopg
        from fold_host.hostdb.pg.database import pg_host_db_exists

        return pg_host_db_exists(location)
    return os.path.exists(os.path.join(location, FILE_NAME))
