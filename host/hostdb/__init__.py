"""The host database: ``host.db`` in the store directory (contract §9–§11), and its only owner.

No SQL on host.db is written anywhere else (a test holds this). What it keeps
(the store keeps the state; this keeps the host's work):

* ``observations`` — the inbox, deduplicated by id, in arrival order, each
  pending / processed / deferred / expired with its disposition and why;
  ``cursors``, ``polls``; ``reminders`` (``inbox``); ``dispositions``, every
  disposition of each observation, and deferral and expiry
  (``dispositions``); ``observation_text``, the full-text index (``search``);
* ``sources`` — per-source health and backoff (``sources``);
* ``consumers`` and ``consumer_memory`` — consumer cursors, failures, memory
  (``consumers``);
* ``agent_calls`` — every editor call (``calls``);
* ``feedback_learning`` — what feedback teaches, per sender and thread (``learning``);
* an observation added once under its id (``entries``: an agent's report);
* ``counters`` and the daemon's heartbeat — what monitoring reads (``watch``);
* retention of old observations' text (``retention``);
* ``cited`` — the observation ids the store's records cite, so that a
  rebuilt host.db never offers them again as new (``cited``);
* ``host_meta`` — small facts such as the last window (``connection``).

The schema and its ordered migrations are in ``schema``.
"""

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
from fold_host.hostdb.schema import FILE_NAME, MIGRATIONS
from fold_host.hostdb.search import SearchTables
from fold_host.hostdb.sources import SourceTables
from fold_host.hostdb.watch import WatchTables

__all__ = ["FILE_NAME", "MIGRATIONS", "ConsumerMemory", "HostDB", "open_host_db", "retry_pause"]


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
