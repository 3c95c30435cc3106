"""The recovered view of a file store, kept between sessions (contract §6.2).

``Cache`` is what a ``FileRecorder`` knows after recovery: the state, where
the log ends, what the snapshot file reflects, and the batch index. Two
things in it are loaded lazily, because an old store's not-active items and
batch index grow forever and most reads need neither:

* a *partial* state — the snapshot head's items only — is completed with the
  snapshot's archive (``complete``) when a write, a wide read or an unsafe log
  tail needs every item (``tail_fits_partial``);
* the batch index is looked up in the snapshot's raw index line
  (``index_entry``) and loaded whole (``full_index``) only when that line is
  unusable or a refresh must rewrite it without a previous line.
"""

from __future__ import annotations

import json

from fold_core.state import State, empty_state, replay
from fold_core.store.log import read_records, scan
from fold_core.store.snapshot import Snapshot, find_batch

__all__ = ["SNAP_BAD", "SNAP_MISSING", "SNAP_OK", "Cache", "complete", "full_index", "index_entry", "index_line",
           "tail_fits_partial"]

SNAP_OK, SNAP_MISSING, SNAP_BAD = "ok", "missing", "bad"


class Cache:
    """The recovered view of the log, kept between sessions of one recorder.

    (A plain class, not a dataclass: building dataclasses costs import time on
    the read path.)
    """

    __slots__ = ("state", "offset", "last_offset", "identity", "snap_seq", "snap_offset", "snap",
                 "snapshot", "batches", "tail_batches", "offsets", "archive", "index_line")

    def __init__(self, state: State, offset: int, last_offset: int, identity: tuple | None,
                 snap_seq: int, snap_offset: int, snap: str, snapshot: Snapshot | None) -> None:
        self.state = state
        self.offset = offset  # end of the last complete record
        self.last_offset = last_offset  # start of that record's line
        self.identity = identity  # (st_dev, st_ino) of events.jsonl; None while it does not exist
        self.snap_seq = snap_seq  # event_seq the snapshot file reflects (0: none usable)
        self.snap_offset = snap_offset
        self.snap = snap  # the snapshot file: SNAP_OK, SNAP_MISSING or SNAP_BAD (kept aside, then rewritten)
        self.snapshot = snapshot  # kept for its raw batch index until a lookup needs it
        self.batches: dict | None = None  # the full index, once loaded
        self.tail_batches: dict = {}  # index entries beyond the snapshot
        self.index_line: bytes | None = None  # the snapshot's raw index line, once read
        self.offsets: dict = {}  # event_seq -> line start, where known
        # While not None, ``state`` holds only the snapshot head's items (a
        # partial state, enough for a default state read); this snapshot
        # holds the rest as raw bytes.
        self.archive: Snapshot | None = snapshot if snapshot is not None and snapshot.partial else None


def complete(cache: Cache, log_path: str) -> None:
    """Merge the snapshot's archive into a partial state (under the lock).

    The head's items win: they may be newer than the snapshot (tail applied).
    An archive that cannot be read is not trusted: the state up to
    ``cache.offset`` is rebuilt from the log, and the snapshot marked bad.
    """
    try:
        archive = cache.archive.archive()
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        records = read_records(log_path, 0, 0, 0, cache.offset)
        cache.state, cache.snap = replay(records, empty_state(cache.state.budget)), SNAP_BAD
    else:
        cache.state = cache.state.replace(items={**archive, **cache.state.items})
    cache.archive = None


def index_line(cache: Cache) -> bytes | None:
    """The raw index line of the snapshot the cache started from (None: unusable)."""
    if cache.index_line is None and cache.snapshot is not None:
        try:
            cache.index_line = cache.snapshot.batches_line()
        except (OSError, ValueError):
            cache.snapshot = None
    return cache.index_line


def index_entry(cache: Cache, batch_id: str, log_path: str) -> list | None:
    """``[event_seq, digest, offset]`` of an accepted batch, without loading the whole index."""
    entry = cache.tail_batches.get(batch_id)
    if entry is not None:
        return entry
    if cache.batches is None:
        line = index_line(cache)
        if line is not None:
            try:
                return find_batch(line, batch_id)
            except ValueError:
                cache.index_line, cache.snapshot = None, None
    return full_index(cache, log_path).get(batch_id)


def full_index(cache: Cache, log_path: str) -> dict:
    """The whole batch index (loaded once, then kept up to date by the recorder)."""
    if cache.batches is None:
        batches = None
        line = index_line(cache)
        if line is not None:
            try:
                batches = json.loads(b"{" + line)["batches"]
            except (ValueError, KeyError, TypeError, RecursionError):
                batches = None
        if type(batches) is not dict:
            batches = _index_from_log(log_path, cache.snap_offset, cache.snap_seq)
        batches.update(cache.tail_batches)
        cache.batches, cache.snapshot, cache.index_line = batches, None, None
    return cache.batches


def _index_from_log(log_path: str, end: int, end_seq: int) -> dict:
    """The batch index of the records before ``end`` (when the snapshot's is unusable)."""
    batches: dict = {}
    if end_seq == 0:
        return batches
    with open(log_path, "rb") as log:
        walk = scan(log, 0, 0)
        walk.size = end
        for record, start in walk.records():
            batch_id = record.get("batch_id")
            if batch_id is not None:
                batches[batch_id] = [record["event_seq"], record.get("request_digest"), start]
    return batches


def tail_fits_partial(walk, cache: Cache) -> bool:
    """Whether the log tail can be applied to a partial state without its archive.

    True when every change in the tail is to an item the head holds or to an
    item the record creates, and nothing becomes active again: a restore could
    pull an archived item into the most recent ``not_active`` entries.
    """
    items = cache.state.items
    in_tail: dict[str, str] = {}  # status of items the tail itself created or changed
    for record, _start in walk.records():
        if record.get("type") == "annotation":
            continue
        created = {change["item"] for change in record["receipt"]["changes"] if change["op"] == "created"}
        for change in record["changes"]:
            image = change["item"]
            item_id = image["id"]
            status = in_tail.get(item_id)
            if status is None:
                before = items.get(item_id)
                if before is None and item_id not in created:
                    return False  # an archived item
                status = before["status"] if before is not None else "active"
            if status != "active" and image["status"] == "active":
                return False
            in_tail[item_id] = image["status"]
    return True
