"""Copying a store's host state to another host database, either way between SQLite and PostgreSQL.

``foldctl migrate`` moves the store (``fold_core.store.migrate``) and then
this: every row of host.db's tables — observations and their dispositions,
cursors, polls, sources, reminders, consumers and their memory, the call
log, what feedback taught, the counters, the records' citations,
``host_meta`` — with its own ``seq`` and values, written into an empty
target in one transaction; the search index is rebuilt from the
observations. The open windows go their target's way: host.db keeps one
(``one_host``), PostgreSQL one row each, given to no host and already
expired, so the first host to look takes it over and finishes it with its
kept answer. A PostgreSQL source with more than one window holding a kept
answer cannot become a host.db (it has room for one): settle them first
(one ``foldctl tick``). A window without a kept answer committed nothing and
is left out (its observations stay pending). Hosts and leases are the
running hosts' own and are not copied.

``compare_host_state`` reads both sides again and raises ``StoreCorrupt``
at the first row that differs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import zip_longest

from fold_core.errors import StoreCorrupt, UsageError
from fold_host.hostdb.one_host import INTENT_KEY, WINDOW_KEY
from fold_host.hostdb.protocol import HostDB

__all__ = ["HOST_TABLES", "compare_host_state", "copy_host_state", "host_state_empty"]

HOST_TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {  # table: (columns, key)
    "observations": (("seq", "id", "source", "channel", "at", "observed_at", "body", "status", "disposition", "why",
                      "related", "batch_id", "processed_at", "failed_windows", "thread", "failed_at", "deferred_at",
                      "deferred_times"), ("seq",)),
    "dispositions": (("seq", "observation", "at", "batch_id", "disposition", "why", "related"), ("seq",)),
    "cursors": (("source", "cursor", "updated_at"), ("source",)),
    "polls": (("seq", "source", "at", "status", "error_class", "message", "observations", "notes"), ("seq",)),
    "sources": (("source", "failures", "last_poll_at", "last_ok_at", "next_poll_at", "last_error", "disabled",
                 "min_interval", "settings_digest"), ("source",)),
    "reminders": (("id", "target", "feedback", "due_at", "requested_at", "fired_at"), ("id",)),
    "consumers": (("name", "event_seq", "failures", "next_try_at", "last_error", "last_error_at", "updated_at"),
                  ("name",)),
    "consumer_memory": (("consumer", "key", "value"), ("consumer", "key")),
    "agent_calls": (("seq", "batch_id", "attempt", "backend", "at", "latency_ms", "request", "response", "stderr",
                     "input_tokens", "output_tokens", "outcome", "error", "model", "skill", "tools", "fallback",
                     "cached_tokens", "cost"), ("seq",)),
    "host_meta": (("key", "value"), ("key",)),
    "feedback_learning": (("feedback", "at", "item", "meaning", "by", "key"), ("feedback", "by", "key")),
    "counters": (("name", "labels", "value"), ("name", "labels")),
    "cited": (("event", "item"), ("event", "item")),
}
CHUNK = 2000  # rows read and written at once
_WINDOW_KEYS = (WINDOW_KEY, INTENT_KEY)
_COUNTED = {"counters": " WHERE value <> 0"}  # a new host database starts its token counters at zero


def host_state_empty(db: HostDB) -> bool:
    """Whether ``db`` holds no row of any host table (a target must be)."""
    return all(db.connection.execute(f"SELECT count(*) FROM {table}{_COUNTED.get(table, '')}").fetchone()[0] == 0
               for table in HOST_TABLES) and not db.open_windows()


def _chunks(db: HostDB, table: str) -> Iterator[list[tuple]]:
    """The table's rows in chunks: ``seq`` tables by seq, the others (small) at once."""
    columns, key = HOST_TABLES[table]
    names = ", ".join(columns)
    if key != ("seq",):
        rows = db.connection.execute(f"SELECT {names} FROM {table}").fetchall()
        if table == "host_meta":
            rows = [row for row in rows if row[0] not in _WINDOW_KEYS]
        yield [tuple(row) for row in rows]
        return
    after = -1
    while True:
        rows = db.connection.execute(f"SELECT {names} FROM {table} WHERE seq > ? ORDER BY seq LIMIT ?",
                                     (after, CHUNK)).fetchall()
        if not rows:
            return
        yield [tuple(row) for row in rows]
        after = rows[-1][0]


def _windows_to_move(source: HostDB) -> list[tuple[dict, dict | None]]:
    """The source's open windows that carry a kept answer (the others committed nothing)."""
    return [(window, intent) for window, intent in source.open_windows()
            if intent is not None and intent.get("batch_id") == window["batch_id"]]


def copy_host_state(source: HostDB, target: HostDB) -> dict:
    """Copy every host table of ``source`` into the empty ``target`` (one transaction); what was copied."""
    if not host_state_empty(target):
        raise UsageError(f"{target.path}: the target already holds host state (observations, cursors, …): "
                         "move into a new store")
    windows = _windows_to_move(source)
    if len(windows) > 1 and not target.shared:
        raise UsageError(f"{source.path}: {len(windows)} windows hold an answer not yet settled and a store "
                         "directory keeps one: let one host settle them first (`foldctl tick`), then move")
    copied = {}
    with target.transaction() as db:
        db.execute("DELETE FROM counters")  # its zeros: the source's counters replace them
        for table, (columns, _) in HOST_TABLES.items():
            statement = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
            copied[table] = 0
            for rows in _chunks(source, table):
                db.executemany(statement, rows)
                copied[table] += len(rows)
                if table == "observations":
                    target.index_texts(db, [(row[0], *_title_text(row[6])) for row in rows])
        target.reseed(db, [table for table, (_, key) in HOST_TABLES.items() if key == ("seq",)])
        for window, intent in windows:
            target.adopt_window(db, window, intent)
    return {"tables": copied, "windows": len(windows)}


def _title_text(body: str) -> tuple[str, str]:
    observation = json.loads(body)
    return observation.get("title") or "", observation.get("text") or ""


def compare_host_state(source: HostDB, target: HostDB) -> None:
    """Raise ``StoreCorrupt`` naming the first table and row where ``target`` differs from ``source``."""
    for table, (columns, key) in HOST_TABLES.items():
        positions = [columns.index(name) for name in key]
        left, right = _rows(source, table), _rows(target, table)
        if key != ("seq",):  # small tables, whose text keys the two engines may order differently
            left = iter(sorted(left, key=lambda row: _order(row, positions)))
            right = iter(sorted(right, key=lambda row: _order(row, positions)))
        for mine, theirs in zip_longest(left, right):
            if mine != theirs:
                where = _order(mine if mine is not None else theirs, positions)
                raise StoreCorrupt(f"{target.path}: table {table}, row {where}: {theirs!r} after the copy, "
                                   f"{mine!r} in the source")
    if _windows_to_move(source) != _windows_to_move(target):
        raise StoreCorrupt(f"{target.path}: the open windows differ from the source's after the copy")


def _rows(db: HostDB, table: str) -> Iterator[tuple]:
    return (row for rows in _chunks(db, table) for row in rows)


def _order(row: tuple, positions: list[int]) -> tuple:
    return tuple(str(row[p]) for p in positions)
