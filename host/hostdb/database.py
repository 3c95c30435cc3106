"""``HostDB``: one connection to host.db with every table's operations, and ``open_host_db``."""

from __future__ import annotations

import os

from fold_host.hostdb.calls import CallTables
from fold_host.hostdb.cited import CitedTables
from fold_host.hostdb.connection import Connection
from fold_host.hostdb.consumers import ConsumerMemory, ConsumerTables
from fold_host.hostdb.dispositions import DispositionTables
from fold_host.hostdb.entries import EntryTables
from fold_host.hostdb.inbox import InboxTables, retry_pause
from fold_host.hostdb.learning import LearningTables
from fold_host.hostdb.retention import RetentionTables
from fold_host.hostdb.schema import FILE_NAME
from fold_host.hostdb.search import SearchTables
from fold_host.hostdb.sources import SourceTables
from fold_host.hostdb.watch import WatchTables

__all__ = ["ConsumerMemory", "HostDB", "open_host_db", "retry_pause"]


class HostDB(InboxTables, DispositionTables, EntryTables, LearningTables, SearchTables, SourceTables,
             ConsumerTables, CallTables, WatchTables, RetentionTables, CitedTables, Connection):
    """One connection to host.db with every table's operations; use from one thread (open one per thread)."""


def open_host_db(store_dir: str | os.PathLike, *, create: bool = True) -> HostDB:
    """Open (creating and migrating as needed) ``host.db`` in the store directory.

    ``create=False``: only an existing host.db (``StoreUnavailable`` when there is none).
    """
    if create:
        os.makedirs(store_dir, exist_ok=True)
    return HostDB(os.path.join(store_dir, FILE_NAME), create=create)
