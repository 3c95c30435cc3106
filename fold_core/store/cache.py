"""The recovered view of a file store, kept between sessions (contract §6.2).

``Cache`` is what a ``FileRecorder`` knows after recovery: the state, where
the log ends, the snapshot it started from, and the batch index entries of
the records after that snapshot. The state's tables hold the snapshot head
and what changed since in memory; everything else stays in the snapshot's
archive and is looked up one item at a time (``table``), so neither a read
nor a commit pays for the store's age:

* ``view_state`` is the state a state document needs: the in-memory items
  and annotations only — plus, for restored items, the annotations archived
  with them — when that is enough (the head keeps every not-active item
  above its ``recent_floor``), else the whole state;
* ``lookup`` finds a batch in the tail entries, then in the snapshot's batch
  index, then (when that is unreadable) in the log itself.
"""

from __future__ import annotations

from fold_core.state import State
from fold_core.table import Table, in_memory
from fold_core.store.log import read_line_at, scan
from fold_core.store.snapshot import floor_key, recent_key
from fold_core.store.snapshot_parsed import Snapshot

__all__ = ["SNAP_BAD", "SNAP_MISSING", "SNAP_OK", "Cache", "lookup", "view_state"]

SNAP_OK, SNAP_MISSING, SNAP_BAD = "ok", "missing", "bad"


class Cache:
    """The recovered view of the log, kept between sessions of one recorder.

    (A plain class, not a dataclass: building dataclasses costs import time on
    the read path.)
    """

    __slots__ = ("state", "offset", "last_offset", "identity", "snap_seq", "snap_offset", "snap", "snapshot",
                 "tail_batches", "log_batches", "offsets", "snap_stat", "memo")

    def __init__(self, state: State, offset: int, last_offset: int, identity: tuple | None,
                 snap: str, snapshot: Snapshot | None, snap_stat: tuple | None = None) -> None:
        self.state = state
        self.offset = offset  # end of the last complete record
        self.last_offset = last_offset  # start of that record's line
        self.identity = identity  # (st_dev, st_ino) of events.jsonl; None while it does not exist
        self.snap = snap  # the snapshot file: SNAP_OK, SNAP_MISSING or SNAP_BAD (kept aside, then rewritten)
        self.snapshot = snapshot  # the snapshot the state started from (None: the whole log was replayed)
        self.snap_seq = snapshot.state.event_seq if snapshot is not None else 0
        self.snap_offset = snapshot.offset if snapshot is not None else 0
        self.snap_stat = snap_stat  # stat of the snapshot.json this cache agrees with (None: no file)
        self.tail_batches: dict = {}  # batch_id -> (event_seq, digest, offset) beyond the snapshot
        self.log_batches: dict | None = None  # the index read from the log when the snapshot's is unusable
        self.offsets: dict = {}  # event_seq -> line start, where known
        self.memo: tuple[dict, dict] = ({}, {})  # the head's items and annotations as last encoded


def lookup(cache: Cache, batch_id: str, log_path: str) -> tuple[int, str | None, int] | None:
    """``(event_seq, request_digest, offset)`` of an accepted batch, or None."""
    entry = cache.tail_batches.get(batch_id)
    if entry is not None:
        return entry[0], entry[1], entry[2]
    if cache.snapshot is None or cache.snap_seq == 0:
        return None
    found = None
    if cache.log_batches is None:
        try:
            found = cache.snapshot.archive.batch(batch_id)
        except (OSError, ValueError, KeyError, TypeError, IndexError, RecursionError):
            cache.log_batches = _index_from_log(log_path, cache.snap_offset, cache.snap_seq)
    if cache.log_batches is not None:
        found = cache.log_batches.get(batch_id)
    if found is None:
        return None
    seq, offset = found
    record = read_line_at(log_path, offset)
    if type(record) is not dict or record.get("event_seq") != seq or record.get("batch_id") != batch_id:
        raise ValueError(f"the batch index points {batch_id} at another record")
    return seq, record.get("request_digest"), offset


def snapshot_batches(cache: Cache, log_path: str) -> dict:
    """The batch index up to the snapshot: ``{batch_id: (event_seq, offset)}`` (for a full rewrite)."""
    if cache.snapshot is None or cache.snap_seq == 0:
        return {}
    if cache.log_batches is None:
        try:
            return cache.snapshot.archive.all_batches()
        except (OSError, ValueError, KeyError, TypeError, IndexError, RecursionError):
            cache.log_batches = _index_from_log(log_path, cache.snap_offset, cache.snap_seq)
    return cache.log_batches


def _index_from_log(log_path: str, end: int, end_seq: int) -> dict:
    """The batch index of the records before ``end`` (when the snapshot's is unusable)."""
    batches: dict = {}
    with open(log_path, "rb") as log:
        walk = scan(log, 0, 0)
        walk.size = end
        for record, start in walk.records():
            batch_id = record.get("batch_id")
            if batch_id is not None:
                batches[batch_id] = (record["event_seq"], start)
    return batches


def view_state(cache: Cache, *, item: str | None, not_active: int | None) -> State:
    """A state good enough for this state document (see the module docstring)."""
    state = cache.state
    items, notes = state.items, state.annotations
    snapshot = cache.snapshot
    if not_active is None or not isinstance(items, Table) or items.source is None or snapshot is None:
        return state
    memory = items.in_memory()
    threshold = floor_key(snapshot.floor)
    if threshold is not None:
        above = sum(1 for x in memory.values() if x["status"] != "active" and recent_key(x) >= threshold)
        if above < not_active:
            return state  # the most recent not-active entries may be in the archive
    archive = snapshot.archive
    extra_items: dict = {}
    extra_notes: dict = {}
    for item_id, image in items.top.items():
        if image["status"] == "active" and item_id not in items.base:
            entry = archive.cached_entry(item_id)  # restored since the snapshot: its notes were archived
            for note in entry["notes"] if entry is not None else ():
                extra_notes.setdefault(note["id"], note)
                current = note["item"]
                while current not in memory and current not in extra_items:  # its merge chain
                    found = items.get(current)
                    if found is None:
                        break
                    extra_items[current] = found
                    current = found["merged_into"]
    if item is not None and item not in memory:
        found = items.get(item)
        if found is not None:
            extra_items[item] = found
    view_notes = in_memory(notes)
    return state.replace(items=Table(memory, extra_items) if extra_items else Table(memory),
                         annotations=Table(view_notes, extra_notes) if extra_notes else Table(view_notes))
