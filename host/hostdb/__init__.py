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
* ``host_meta`` — small facts such as the last window (``part``);
  the open window and its commit intent (``one_host``).

The schema and its ordered migrations are in ``schema``. ``HostDB``
(``protocol``) is what a host database offers, one Protocol per role; the
tables' operations come together in ``SqliteHostDB`` (``database``). When the
store is in PostgreSQL, the same tables (and those several hosts share the
work through) live in the store's database: ``PgHostDB`` (``pg``). Both are
opened by ``open_host_db`` (``opening``), given a directory or the store's
URL, which loads an engine only when it opens one: what needs only the
file's name or a pinned copy (``foldctl backup``) loads neither the inbox's
models nor a database driver. So does ``retry_pause``, from the inbox, here
on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fold_host.hostdb.consumers import ConsumerMemory
from fold_host.hostdb.failures import ClaimLost
from fold_host.hostdb.opening import host_db_exists, open_host_db
from fold_host.hostdb.protocol import HostDB
from fold_host.hostdb.schema import FILE_NAME, MIGRATIONS

if TYPE_CHECKING:
    from fold_host.hostdb.inbox import retry_pause

__all__ = ["FILE_NAME", "MIGRATIONS", "ClaimLost", "ConsumerMemory", "HostDB", "host_db_exists", "open_host_db",
           "retry_pause"]


def __getattr__(name: str) -> Any:
    if name == "retry_pause":
        # lazy: the inbox's models (pydantic)
        from fold_host.hostdb.inbox import retry_pause

        return retry_pause
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
