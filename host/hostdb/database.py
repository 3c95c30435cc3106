"""``SqliteHostDB``: one connection to host.db in a store directory, with every table's operations."""

from __future__ import annotations

from fold_host.hostdb.calls import CallTables
from fold_host.hostdb.cited import CitedTables
from fold_host.hostdb.connection import Connection
from fold_host.hostdb.consumers import ConsumerTables
from fold_host.hostdb.dispositions import DispositionTables
from fold_host.hostdb.entries import EntryTables
from fold_host.hostdb.inbox import InboxTables
from fold_host.hostdb.learning import LearningTables
from fold_host.hostdb.one_host import OneHost
from fold_host.hostdb.retention import RetentionTables
from fold_host.hostdb.search import SearchTables
from fold_host.hostdb.sources import SourceTables
from fold_host.hostdb.watch import WatchTables

__all__ = ["SqliteHostDB"]


class SqliteHostDB(InboxTables, DispositionTables, EntryTables, LearningTables, SearchTables, SourceTables,
                   ConsumerTables, CallTables, WatchTables, RetentionTables, CitedTables, OneHost, Connection):
    """One connection to host.db with every table's operations; use from one thread (open one per thread)."""
