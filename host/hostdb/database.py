"""``HostDB``: one connection to host.db with every table's operations; ``open_host_db`` (a directory's
host.db, or a store URL's host tables in PostgreSQL) and ``host_db_exists``."""

from __future__ import annotations

import os

from fold_core.store.location import is_url
from fold_host.hostdb.calls import CallTables
from fold_host.hostdb.cited import CitedTables
from fold_host.hostdb.connection import Connection
from fold_host.hostdb.consumers import ConsumerMemory, ConsumerTables
from fold_host.hostdb.dispositions import DispositionTables
from fold_host.hostdb.entries import EntryTables
from fold_host.hostdb.inbox import InboxTables, retry_pause
from fold_host.hostdb.learning import LearningTables
from fold_host.hostdb.one_host import OneHost
from fold_host.hostdb.retention import RetentionTables
from fold_host.hostdb.schema import FILE_NAME
from fold_host.hostdb.search import SearchTables
from fold_host.hostdb.sources import SourceTables
from fold_host.hostdb.watch import WatchTables

__all__ = ["ConsumerMemory", "HostDB", "host_db_exists", "open_host_db", "retry_pause"]


class HostDB(InboxTables, DispositionTables, EntryTables, LearningTables, SearchTables, SourceTables,
             ConsumerTables, CallTables, WatchTables, RetentionTables, CitedTables, OneHost, Connection):
    """One connection to host.db with every table's operations; use from one thread (open one per thread)."""


def open_host_db(store_dir: str | os.PathLike, *, create: bool = True):
    """Open (creating and migrating as needed) ``host.db`` in the store directory — or, for a store URL,
    the host's tables in the store's PostgreSQL database (a ``PgHostDB``).

    ``create=False``: only an existing host.db (``StoreUnavailable`` when there is none).
    """
    if is_url(store_dir):
        from fold_host.hostdb.pg.database import open_pg_host_db

        return open_pg_host_db(store_dir)
    if create:
        os.makedirs(store_dir, exist_ok=True)
    return HostDB(os.path.join(store_dir, FILE_NAME), create=create)


def host_db_exists(location: str | os.PathLike) -> bool:
    """Whether the store at ``location`` has a host database yet (nothing is created)."""
    if is_url(location):
        from fold_host.hostdb.pg.database import pg_host_db_exists

        return pg_host_db_exists(location)
    return os.path.exists(os.path.join(location, FILE_NAME))
