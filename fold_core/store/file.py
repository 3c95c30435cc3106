"""The durable file store (contract §6, seed 002 "本地提交与恢复").

A store is a directory::

    meta.json       {"format": "fold-store", "version": 1, "budget": 64, "created_at": ...}
    events.jsonl    the truth: record n on line n (see ``log``)
    snapshot.json   a cache of the state and the batch index (see ``snapshot``)
    lock            the flock target (see ``locking``)

``FileRecorder`` is the ``Recorder`` of ``store.base``: every session takes the
lock (exclusive to write, shared to read) and recovers before anything else —
snapshot (ignored and rebuilt from the log when missing, unreadable or ahead of
the log), then only the log tail after the snapshot's offset; a writer repairs
a torn tail under the lock. An unusable snapshot is never deleted by a reader;
the next writer keeps it as ``snapshot.json.bad`` (it may be the last trace of
lost records) and writes a fresh one. Records that recovery finds beyond what
this recorder already knew are fsynced (file and directory) before they are
answered: their writer may have died between its write and its fsync.

``append`` writes one line, then fsyncs the file (and the directory when the
log was just created): from then on the batch is committed, whatever fails
later. The snapshot is refreshed at the end of a session only when the tail
beyond it reaches ``FOLD_SNAPSHOT_EVERY`` records (default 64) or 1 MiB, and by
``close()`` (a long-lived process's clean shutdown; a ``foldctl`` process does
not refresh on exit, which would rewrite it on every commit); a failed refresh
is only logged.

A failed write or fsync is never retried and never reported as success:
``StoreUnavailable`` (outcome unknown, retry with the same batch_id). A failed
append is truncated away so nothing partial stays; after a failed fsync the
in-memory cache is dropped and the next session recovers from the file.

One ``FileRecorder`` keeps the recovered state between its sessions, so a
long-lived process (the host, a benchmark) reads only what other processes
appended since its last session.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager

from fold_core.errors import StoreCorrupt, StoreError, StoreUnavailable
from fold_core.state import State, apply_record, empty_state, replay
from fold_core.store.base import Recorder, Session, Store
from fold_core.store.faults import crash_at
from fold_core.store.locking import StoreLock
from fold_core.store.log import Torn, append_line, encode_record, fsync_dir, read_records, repair_tail, scan
from fold_core.store.log import unavailable
from fold_core.store.meta import DEFAULT_BUDGET, StoreMissing, create_store, read_meta, write_meta
from fold_core.store.snapshot import RECENT, Snapshot, batches_line, encode_snapshot, find_batch, parse_snapshot
from fold_core.store.snapshot import write_snapshot
from fold_core.store.snapshot import remove_stale_temps

__all__ = [
    "DEFAULT_BUDGET",
    "FileRecorder",
    "StoreMissing",
    "create_store",
    "file_store",
    "read_meta",
    "snapshot_bound",
]

SNAPSHOT_RECORDS, SNAPSHOT_BYTES = 64, 1 << 20
SNAP_OK, SNAP_MISSING, SNAP_BAD = "ok", "missing", "bad"


def snapshot_bound() -> int:
    """Records the log may hold beyond the snapshot (``FOLD_SNAPSHOT_EVERY`` overrides 64)."""
    text = os.environ.get("FOLD_SNAPSHOT_EVERY")
    if text and text.isdigit() and int(text) >= 1:
        return int(text)
    return SNAPSHOT_RECORDS


class _Cache:
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


class FileRecorder(Recorder):
    """Records in ``<path>/events.jsonl``, cached in ``snapshot.json``, under ``<path>/lock``."""

    def __init__(self, path: str | os.PathLike, budget: int | None = None) -> None:
        self.path = os.fspath(path)
        self.budget = budget  # used only when a write creates the store
        self.log_path = os.path.join(self.path, "events.jsonl")
        self._cache: _Cache | None = None
        self._meta: dict | None = None

    # -- sessions -----------------------------------------------------------

    @contextmanager
    def session(self, *, write: bool) -> Iterator[Session]:
        lock = self._lock(write)
        try:
            try:
                cache = self._recover(write)
            except OSError as error:
                self._cache = None
                raise unavailable(error, f"cannot read the store {self.path}") from error
            try:
                yield _FileSession(self, cache)
            except OSError as error:
                raise unavailable(error, f"cannot read the store {self.path}") from error
            if self._cache is cache and self._refresh_due(cache):
                self._refresh(cache, exclusive=write)
        finally:
            lock.release()

    def close(self) -> None:
        """Clean shutdown: bring the snapshot up to date with the log (best effort)."""
        if self._cache is None or not os.path.exists(os.path.join(self.path, "meta.json")):
            return
        try:
            with self.session(write=True) as session:
                cache = session.cache
                if cache.state.event_seq > cache.snap_seq or cache.snap != SNAP_OK:
                    self._refresh(cache, exclusive=True)
        except StoreUnavailable:
            pass

    def _lock(self, write: bool) -> StoreLock:
        lock_path = os.path.join(self.path, "lock")
        if not write and not os.path.exists(os.path.join(self.path, "meta.json")):
            raise StoreMissing(f"no store at {self.path} (no meta.json): create one with `foldctl init`")
        try:
            if write:
                os.makedirs(self.path, exist_ok=True)
            return StoreLock(lock_path, exclusive=write, create=True)
        except OSError as error:
            raise unavailable(error, f"cannot lock the store {self.path}") from error

    # -- recovery -----------------------------------------------------------

    def _recover(self, write: bool) -> _Cache:
        meta = read_meta(self.path)
        try:
            stat = os.stat(self.log_path)
        except FileNotFoundError:
            stat = None
        if meta is None:
            if not write:
                raise StoreMissing(f"no store at {self.path} (no meta.json): create one with `foldctl init`")
            if stat is not None:
                raise StoreCorrupt(f"{self.path}: events.jsonl exists but meta.json is missing")
            self._meta, self._cache = None, None
            budget = self.budget or DEFAULT_BUDGET
            return _Cache(empty_state(budget), 0, 0, None, 0, 0, SNAP_OK, None)
        if self._meta is None or self._meta != meta:
            self._meta, self._cache = meta, None
        budget = meta["budget"]
        if stat is None:
            snap = SNAP_BAD if os.path.exists(os.path.join(self.path, "snapshot.json")) else SNAP_OK
            self._cache = _Cache(empty_state(budget), 0, 0, None, 0, 0, snap, None)
            return self._cache
        identity = (stat.st_dev, stat.st_ino)
        with open(self.log_path, "rb") as log:
            cache = self._cache
            if cache is None or cache.identity != identity or stat.st_size < cache.offset:
                cache = self._from_snapshot(log, budget, identity)
            self._cache = None  # until the tail is applied
            if cache.archive is not None and (write or not _tail_fits_partial(scan(log, cache.offset,
                                                                                cache.state.event_seq), cache)):
                cache = self._complete(cache, budget, identity)
            seen = cache.state.event_seq
            torn = self._apply_tail(log, cache)
            if cache.state.event_seq != seen:
                # Seed 002: a complete record found by recovery is synced before it is
                # answered as saved — its writer may have died between write and fsync.
                os.fsync(log.fileno())
                fsync_dir(self.path)
        if write:
            if torn is not None:
                repair_tail(self.log_path, torn)
            remove_stale_temps(self.path)  # left by a process killed mid-snapshot
        self._cache = cache
        return cache

    def _from_snapshot(self, log, budget: int, identity: tuple) -> _Cache:
        snapshot_path = os.path.join(self.path, "snapshot.json")
        try:
            file = open(snapshot_path, "rb")  # kept open by the Snapshot for its lazy sections
        except FileNotFoundError:
            return _Cache(empty_state(budget), 0, 0, identity, 0, 0, SNAP_MISSING, None)
        try:
            snap = parse_snapshot(file, budget)
            if snap.state.event_seq and not snap.matches(log):
                snap.close()
                raise ValueError("ahead of the log")
        except (ValueError, KeyError, TypeError, RecursionError):
            file.close()
            return _Cache(empty_state(budget), 0, 0, identity, 0, 0, SNAP_BAD, None)
        seq = snap.state.event_seq
        return _Cache(snap.state, snap.offset, snap.last_offset, identity, seq, snap.offset, SNAP_OK, snap)

    def _complete(self, cache: _Cache, budget: int, identity: tuple) -> _Cache:
        """Merge the snapshot's archive into a partial state (or rebuild from the log if unreadable)."""
        try:
            archive = cache.archive.archive()
        except (ValueError, KeyError, TypeError, RecursionError):
            return _Cache(empty_state(budget), 0, 0, identity, 0, 0, SNAP_BAD, None)
        # The head's items win: they may be newer than the snapshot (tail applied).
        cache.state = cache.state.replace(items={**archive, **cache.state.items})
        cache.archive = None
        return cache

    def _apply_tail(self, log, cache: _Cache) -> Torn | None:
        walk = scan(log, cache.offset, cache.state.event_seq)
        if walk.size == cache.offset:
            return None
        tail_batches, offsets = cache.tail_batches, cache.offsets
        batches = cache.batches
        last = [cache.last_offset]

        def indexed() -> Iterator[dict]:
            for record, start in walk.records():
                offsets[record["event_seq"]] = start
                batch_id = record.get("batch_id")
                if batch_id is not None:
                    entry = [record["event_seq"], record.get("request_digest"), start]
                    tail_batches[batch_id] = entry
                    if batches is not None:
                        batches[batch_id] = entry
                last[0] = start
                yield record

        try:
            cache.state = replay(indexed(), cache.state)
        except StoreCorrupt:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
            line = walk.event_seq
            raise StoreCorrupt(
                f"events.jsonl line {line}: the record does not have the expected shape"
                f" ({type(error).__name__}: {error})",
                line=line,
            ) from None
        cache.offset, cache.last_offset = walk.offset, last[0]
        return walk.torn

    def _refresh_due(self, cache: _Cache) -> bool:
        if cache.snap == SNAP_BAD:
            return True
        if cache.snap == SNAP_MISSING:
            return cache.state.event_seq > 0
        return (
            cache.state.event_seq - cache.snap_seq >= snapshot_bound()
            or cache.offset - cache.snap_offset >= SNAPSHOT_BYTES
        )

    def _refresh(self, cache: _Cache, *, exclusive: bool) -> None:
        directory = self.path
        if cache.archive is not None:
            return  # a partial state (a reader's) cannot write a whole snapshot
        if cache.snap == SNAP_BAD:
            # A snapshot that disagrees with the log may be the last trace of lost
            # records: a writer keeps it as snapshot.json.bad; readers leave it alone.
            if not exclusive:
                return
            target = os.path.join(directory, "snapshot.json")
            try:
                os.replace(target, target + ".bad")
            except FileNotFoundError:
                pass
            except OSError:
                return
            cache.snap = SNAP_MISSING
        if cache.state.event_seq == 0:
            cache.snap = SNAP_OK
            return
        try:
            if cache.batches is not None:
                line = batches_line(cache.batches)
            else:
                base = self._index_line(cache)
                line = batches_line(self._batches(cache)) if base is None else batches_line(cache.tail_batches, base)
        except StoreError:
            return
        data = encode_snapshot(cache.state, cache.offset, cache.last_offset, line)
        if write_snapshot(directory, data, exclusive=exclusive, quiet=not exclusive):
            cache.snap_seq, cache.snap_offset, cache.snap = cache.state.event_seq, cache.offset, SNAP_OK
            cache.snapshot, cache.tail_batches = None, {}
            cache.index_line = line if cache.batches is None else None

    # -- the batch index ------------------------------------------------------

    def _index_line(self, cache: _Cache) -> bytes | None:
        """The raw index line of the snapshot the cache started from (None: unusable)."""
        if cache.index_line is None and cache.snapshot is not None:
            try:
                cache.index_line = cache.snapshot.batches_line()
            except (OSError, ValueError):
                cache.snapshot = None
        return cache.index_line

    def _entry(self, cache: _Cache, batch_id: str) -> list | None:
        """``[event_seq, digest, offset]`` of an accepted batch, without loading the whole index."""
        entry = cache.tail_batches.get(batch_id)
        if entry is not None:
            return entry
        if cache.batches is None:
            line = self._index_line(cache)
            if line is not None:
                try:
                    return find_batch(line, batch_id)
                except ValueError:
                    cache.index_line, cache.snapshot = None, None
        return self._batches(cache).get(batch_id)

    def _batches(self, cache: _Cache) -> dict:
        if cache.batches is None:
            batches = None
            line = self._index_line(cache)
            if line is not None:
                try:
                    batches = json.loads(b"{" + line)["batches"]
                except (ValueError, KeyError, TypeError, RecursionError):
                    batches = None
            if type(batches) is not dict:
                batches = self._index_from_log(cache.snap_offset, cache.snap_seq)
            batches.update(cache.tail_batches)
            cache.batches, cache.snapshot, cache.index_line = batches, None, None
        return cache.batches

    def _index_from_log(self, end: int, end_seq: int) -> dict:
        """The batch index of the records before ``end`` (when the snapshot's is unusable)."""
        batches: dict = {}
        if end_seq == 0:
            return batches
        with open(self.log_path, "rb") as log:
            walk = scan(log, 0, 0)
            walk.size = end
            for record, start in walk.records():
                batch_id = record.get("batch_id")
                if batch_id is not None:
                    batches[batch_id] = [record["event_seq"], record.get("request_digest"), start]
        return batches

    # -- appending --------------------------------------------------------------

    def _append(self, cache: _Cache, record: dict, state: State | None) -> None:
        event_seq = cache.state.event_seq + 1
        if record.get("event_seq") != event_seq:
            raise ValueError(f"record {record.get('event_seq')!r} does not follow {event_seq - 1}")
        if state is None or state.event_seq != event_seq:
            state = apply_record(cache.state, record)  # the kernel's state is T's already
        data = encode_record(record)
        try:
            if self._meta is None:
                self._meta = write_meta(self.path, cache.state.budget)
        except OSError as error:
            raise unavailable(error, f"cannot create the store {self.path}; nothing was written") from error
        crash_at("before_append")
        try:
            identity = append_line(self.log_path, data, cache.offset, created=cache.identity is None)
        except BaseException:
            self._cache = None  # recover from the file next time, never from this memory
            raise
        # Committed: only bookkeeping from here on.
        start = cache.offset
        cache.state, cache.last_offset, cache.offset = state, start, start + len(data)
        cache.identity = identity
        cache.offsets[event_seq] = start
        batch_id = record.get("batch_id")
        if batch_id is not None:
            entry = [event_seq, record.get("request_digest"), start]
            cache.tail_batches[batch_id] = entry
            if cache.batches is not None:
                cache.batches[batch_id] = entry
        self._cache = cache

class _FileSession(Session):
    """The recovered store while the lock is held."""

    def __init__(self, recorder: FileRecorder, cache: _Cache) -> None:
        self._recorder = recorder
        self.cache = cache

    @property
    def state(self) -> State:  # type: ignore[override]
        cache = self.cache
        if cache.archive is not None:
            self._complete()
        return cache.state

    def state_for_view(self, *, item: str | None, not_active: int | None) -> State:
        cache = self.cache
        if cache.archive is not None:
            wide = not_active is None or not_active > RECENT
            if wide or (item is not None and item not in cache.state.items):
                self._complete()
        return cache.state

    def _complete(self) -> None:
        """Load the archive into this session's partial state (under the lock)."""
        recorder, cache = self._recorder, self.cache
        try:
            archive = cache.archive.archive()
        except (ValueError, KeyError, TypeError, RecursionError):
            budget = cache.state.budget
            records = read_records(recorder.log_path, 0, 0, 0, cache.offset)
            cache.state, cache.snap = replay(records, empty_state(budget)), SNAP_BAD
        else:
            cache.state = cache.state.replace(items={**archive, **cache.state.items})
        cache.archive = None

    def lookup(self, batch_id: str) -> tuple[int, str] | None:
        cache = self.cache
        entry = self._recorder._entry(cache, batch_id)
        if entry is None:
            return None
        cache.offsets.setdefault(entry[0], entry[2])
        return entry[0], entry[1]

    def record(self, event_seq: int) -> dict:
        for record in self.records(event_seq - 1):
            return record
        raise KeyError(event_seq)

    def records(self, since: int = 0) -> Iterator[dict]:
        cache = self.cache
        since = max(since, 0)
        if since >= cache.state.event_seq:
            return iter(())
        start = cache.offsets.get(since + 1)
        if start is None:
            since_read, start = 0, 0
        else:
            since_read = since
        return read_records(self._recorder.log_path, start, since_read, since, cache.offset)

    def append(self, record: dict, state: State) -> None:
        self._recorder._append(self.cache, record, state)


def file_store(path: str | os.PathLike, budget: int | None = None) -> Store:
    """A ``Store`` over the directory at ``path``."""
    return Store(FileRecorder(path, budget))


def _tail_fits_partial(walk, cache: _Cache) -> bool:
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
