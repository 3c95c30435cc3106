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
* ``host_meta`` — small facts such as the last window (``connection``);
  the open window and its commit intent (``one_host``).

The schema and its ordered migrations are in ``schema``. The tables'
operations come together in ``HostDB`` (``database``), imported on first
use: what needs only the file's name or a pinned copy (``foldctl backup``)
does not load the inbox's models.
When the store is in PostgreSQL, the same tables (and those several hosts
share the work through) live in the store's database: ``PgHostDB`` (``pg``),
opened by the same ``open_host_db`` given the store's URL.
"""

from __future__ import annotations

from fold_host.hostdb.schema import FILE_NAME, MIGRATIONS

__all__ = ["FILE_NAME", "MIGRATIONS", "ClaimLost", "ConsumerMemory", "HostDB", "host_db_exists", "open_host_db",
           "retry_pause"]

_LAZY = {"ConsumerMemory": "database", "HostDB": "database", "host_db_exists": "database",
         "open_host_db": "database", "retry_pause": "database", "ClaimLost": "pg.shared"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"fold_host.hostdb.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
