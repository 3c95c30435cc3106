"""Move a store between a directory and a PostgreSQL database, either way (``migrate_store``).

The records are the truth and move byte for byte: each record's line as the
source holds it (a file store's ``events.jsonl`` line, a PostgreSQL record
row plus its newline — the same bytes) is written unchanged to the target,
with the store's budget and ``created_at``. The target's cache is then built
from them the target's own way: a PostgreSQL store gets its cached-state
tables in the same transaction as the records (``pg_bulk``); a file store
gets ``meta.json`` and ``events.jsonl`` (fsynced), then its snapshot from a
recovery of the new log.

The source is read in one read session (the file store's shared lock, or
one REPEATABLE READ snapshot), so a store that is being written to moves as
of one moment. The target must hold no records: a new directory or store
name, or one just made by ``init`` with the same budget. Afterwards the copy
is checked — the target's records are the source's bytes, ``verify`` passes
on it and its state equals the source's — and the report says so; any
difference raises ``StoreCorrupt`` and names it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Protocol, runtime_checkable

from fold_core.errors import StoreCorrupt, UsageError
from fold_core.store.base import Session
from fold_core.store.file import FileRecorder
from fold_core.store.locate import describe, open_store, verify
from fold_core.store.location import is_url
from fold_core.store.locking import StoreLock
from fold_core.store.log import fsync_dir
from fold_core.store.meta import StoreMissing, read_meta, write_meta
from fold_core.store.pg.state import Head

__all__ = ["RowSession", "migrate_store", "record_lines"]


def migrate_store(source: str, target: str) -> dict:
    """Copy the store at ``source`` to ``target`` (directories or ``postgresql://`` URLs); the report."""
    if describe(source) == describe(target):
        raise UsageError(f"the source and the target are the same store: {describe(source)}")
    reader = open_store(source)
    with reader.recorder.session(write=False) as session:
        meta = _meta(source, session)
        count = session.state.event_seq
        lines = record_lines(source, session)
        if is_url(target):
            # lazy: psycopg loads only for a postgresql:// target
            from fold_core.store.pg.bulk import load_records

            load_records(target, meta["budget"], meta["created_at"], lines)
        else:
            _write_file_store(os.fspath(target), meta, lines)
    copied = open_store(target)
    report = verify(target)
    with reader.recorder.session(write=False) as left, copied.recorder.session(write=False) as right:
        if left.state.event_seq != count or right.state.event_seq != count:
            raise StoreCorrupt(f"{describe(target)}: {right.state.event_seq} records after the copy, expected"
                               f" {count}")
        for number, (a, b) in enumerate(zip(record_lines(source, left), record_lines(target, right)), 1):
            if a != b:
                raise StoreCorrupt(f"{describe(target)}: record {number} differs from the source's bytes", line=number)
        if left.state != right.state:
            raise StoreCorrupt(f"{describe(target)}: the state differs from the source's after the copy")
    return {"ok": True, "from": describe(source), "to": describe(target), "records": count,
            "last_event_seq": count, "revision": report["revision"], "budget": meta["budget"],
            "created_at": meta["created_at"], "verified": True}


@runtime_checkable
class RowSession(Protocol):
    """A session of a PostgreSQL store (``pg.session.PgSession``), as moving a store reads it."""

    @property
    def head(self) -> Head | None: ...

    def record_lines(self) -> Iterator[bytes]: ...


def _meta(location: str, session: Session) -> dict:
    if isinstance(session, RowSession):
        head = session.head
        return head.meta() if head is not None else {"budget": session.state.budget, "created_at": None}
    meta = read_meta(os.fspath(location))
    if meta is None:
        raise StoreMissing(f"no store at {location} (no meta.json)")
    return meta


def record_lines(location: str, session: Session) -> Iterator[bytes]:
    """The records of ``session`` (a read session on ``location``) as their exact stored lines."""
    if isinstance(session, RowSession):
        return session.record_lines()
    return _log_lines(os.path.join(os.fspath(location), "events.jsonl"), session.state.event_seq)


def _log_lines(path: str, count: int) -> Iterator[bytes]:
    if count == 0:
        return
    with open(path, "rb") as log:
        for number, line in enumerate(log, 1):
            yield line
            if number == count:
                return


def _write_file_store(path: str, meta: dict, lines: Iterable[bytes]) -> None:
    """A new file store at ``path`` holding exactly ``lines``, then its snapshot."""
    os.makedirs(path, exist_ok=True)
    lock = StoreLock(os.path.join(path, "lock"), exclusive=True, create=True)
    try:
        existing = read_meta(path)
        log_path = os.path.join(path, "events.jsonl")
        if os.path.exists(log_path) and os.path.getsize(log_path) > 0 or (
                existing is not None and existing["budget"] != meta["budget"]):
            raise UsageError(f"{path} already holds a store: move into a new directory")
        write_meta(path, meta["budget"], meta["created_at"])
        with open(log_path, "wb") as log:
            for line in lines:
                log.write(line)
            log.flush()
            os.fsync(log.fileno())
        fsync_dir(path)
    finally:
        lock.release()
    recorder = FileRecorder(path)
    with recorder.session(write=True):  # recovers the new log once and writes its snapshot
        pass
    recorder.close()
