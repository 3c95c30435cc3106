"""The durable file store (contract §6).

A store is a directory::

    meta.json       {"format": "fold-store", "version": 1, "budget": 64, "created_at": ...}
    events.jsonl    the truth: record n on line n (see ``log``)
    snapshot.json   a cache: the head of the snapshot, what a state read needs (see ``snapshot``)
    snapshot.<generation>.{items,index,batches}
                    the rest of that cache, append-only (see ``parts``)
    lock            the flock target (see ``locking``)

``FileRecorder`` is the ``Recorder`` of ``store.base``: every session takes the
lock (exclusive to write, shared to read) and recovers before anything else —
the snapshot head (ignored and rebuilt from the log when missing, unreadable or
ahead of the log), then only the log tail after the snapshot's offset; a writer
repairs a torn tail under the lock. The recovered state holds the head and the
tail in memory and looks archived items up one at a time (``cache``), so
neither a read nor a commit pays for the store's age. An unusable snapshot is
never deleted by a reader; the next writer keeps it as ``snapshot.json.bad``
(it may be the last trace of lost records) and writes a fresh one. Records that
recovery finds beyond what this recorder already knew are fsynced (file and
directory) before they are answered: their writer may have died between its
write and its fsync.

``append`` writes one line, then fsyncs the file (and the directory when the
log was just created): from then on the batch is committed, whatever fails
later. The snapshot is refreshed (``refresh``: appended to, not rewritten) at
the end of a writer's session only when the tail beyond it reaches
``FOLD_SNAPSHOT_EVERY`` records (default 32) or 1 MiB, and by ``close()`` (a
long-lived process's clean shutdown; a ``foldctl`` process does not refresh on
exit, which would write it on every commit); a failed refresh is only logged.
A reader writes a snapshot only when there is none, before it answers.

A failed write or fsync is never retried and never reported as success:
``StoreUnavailable`` (outcome unknown, retry with the same batch_id). A failed
append is truncated away so nothing partial stays; after a failed fsync the
in-memory cache is dropped and the next session recovers from the file.

One ``FileRecorder`` keeps the recovered state between its sessions, so a
long-lived process (the host, a benchmark) reads only what other processes
appended since its last session. It also keeps the lock file and the log
open and ``meta.json`` in memory: a session that finds the identity (inode,
size, times) of ``meta.json``, ``events.jsonl`` and ``snapshot.json`` as it
left them reads nothing at all; the directory is swept for what killed
processes left only in its first write session and whenever it starts over
from a snapshot (``file_session`` holds the session objects).
"""

from __future__ import annotations

import gc
import os
from _thread import allocate_lock
from typing import IO

from fold_core.errors import StoreCorrupt, StoreUnavailable
from fold_core.state import Replayer, State, apply_record, empty_state
from fold_core.store.base import Recorder, Store
from fold_core.store.faults import crash_at, environ_value
from fold_core.store.locking import HeldLock, lock_timeout
from fold_core.store.append import LogAppender
from fold_core.store.log import Torn, bulk_loads, encode_record, fsync_dir, repair_tail, scan
from fold_core.store.log import unavailable
from fold_core.store.meta import DEFAULT_BUDGET, StoreMissing, create_store, read_meta, write_meta
from fold_core.store.cache import SNAP_BAD, SNAP_MISSING, SNAP_OK, Cache
from fold_core.store.parts import Parts
from fold_core.store.file_session import Hold, stat_or_none
from fold_core.store.snapshot import file_stat, read_snapshot, remove_stale_temps

__all__ = [
    "DEFAULT_BUDGET",
    "FileRecorder",
    "StoreMissing",
    "create_store",
    "file_store",
    "read_meta",
    "snapshot_bound",
]

SNAPSHOT_RECORDS, SNAPSHOT_BYTES = 32, 1 << 20  # 32: see docs/decisions.md, "Snapshot refresh"


def snapshot_bound() -> int:
    """Records the log may hold beyond the snapshot (``FOLD_SNAPSHOT_EVERY`` overrides 32)."""
    text = environ_value("FOLD_SNAPSHOT_EVERY")
    if text and text.isdigit() and int(text) >= 1:
        return int(text)
    return SNAPSHOT_RECORDS


class FileRecorder(Recorder):
    """Records in ``<path>/events.jsonl``, cached in ``snapshot.json``, under ``<path>/lock``."""

    def __init__(self, path: str | os.PathLike, budget: int | None = None) -> None:
        self.path = os.fspath(path)
        self.budget = budget  # used only when a write creates the store
        self.log_path = os.path.join(self.path, "events.jsonl")
        self._meta_path = os.path.join(self.path, "meta.json")
        self._snapshot_path = os.path.join(self.path, "snapshot.json")
        self._cache: Cache | None = None
        self._meta: dict | None = None
        self._meta_stat: tuple | None = None  # the meta.json that ``_meta`` was read from
        self._swept = False  # the directory was swept for what killed processes left (see _recover)
        self._lock = HeldLock(os.path.join(self.path, "lock"))
        self._log = LogAppender(self.log_path)
        self._mutex = allocate_lock()  # one session at a time: the flock does not exclude our own threads

    # -- sessions -----------------------------------------------------------

    def session(self, *, write: bool) -> Hold:
        return Hold(self, write)

    def close(self) -> None:
        """Clean shutdown: bring the snapshot up to date with the log (best effort); close the files.

        The recorder stays usable: a later session opens them again.
        """
        try:
            if self._cache is None or not os.path.exists(self._meta_path):
                return
            with self.session(write=True) as session:
                cache = session.cache
                if cache.state.event_seq > cache.snap_seq or self._refresh_due(cache, True):
                    self._refresh(cache, exclusive=True)
        except StoreUnavailable:
            pass
        finally:
            self._log.close()
            self._lock.close()

    def _take_lock(self, write: bool) -> None:
        if not self._mutex.acquire(timeout=lock_timeout()):
            raise StoreUnavailable(f"the store is busy: {self.path} is in use by another thread of this process")
        try:
            if not write and not os.path.exists(self._meta_path):
                raise StoreMissing(f"no store at {self.path} (no meta.json): create one with `foldctl init`")
            try:
                self._lock.acquire(exclusive=write, create=True)
            except FileNotFoundError:
                if not write:
                    raise StoreMissing(f"no store at {self.path} (no meta.json): create one with `foldctl init`")
                os.makedirs(self.path, exist_ok=True)
                self._lock.acquire(exclusive=write, create=True)
        except OSError as error:
            self._mutex.release()
            raise unavailable(error, f"cannot lock the store {self.path}") from error
        except BaseException:
            self._mutex.release()
            raise

    def _drop_lock(self) -> None:
        try:
            self._lock.release()
        finally:
            self._mutex.release()

    # -- recovery -----------------------------------------------------------

    def _recover(self, write: bool) -> Cache:
        meta = self._read_meta()
        stat = stat_or_none(self.log_path)
        if meta is None:
            if not write:
                raise StoreMissing(f"no store at {self.path} (no meta.json): create one with `foldctl init`")
            if stat is not None:
                raise StoreCorrupt(f"{self.path}: events.jsonl exists but meta.json is missing")
            self._cache = None
            budget = self.budget or DEFAULT_BUDGET
            return Cache(empty_state(budget), 0, 0, None, SNAP_OK, None)
        budget = meta["budget"]
        snap_stat = file_stat(self._snapshot_path)
        cache = self._cache
        if stat is None:
            cache = self._cache = Cache(empty_state(budget), 0, 0, None,
                                        SNAP_OK if snap_stat is None else SNAP_BAD, None, snap_stat)
            return cache
        identity = (stat.st_dev, stat.st_ino)
        if cache is not None and cache.identity == identity and cache.snap_stat == snap_stat \
                and stat.st_size == cache.offset and (self._swept or not write):
            return cache  # nothing happened since our last session: the log is read only when it grew
        with open(self.log_path, "rb") as log:
            if cache is None or cache.identity != identity or stat.st_size < cache.offset \
                    or cache.snap_stat != snap_stat:
                # Another process replaced the snapshot: start from it (a writer only
                # ever appends to the parts of the snapshot.json it has read).
                cache = self._from_snapshot(log, budget, identity)
            self._cache = None  # until the tail is applied
            seen = cache.state.event_seq
            torn = self._apply_tail(log, cache)
            if cache.state.event_seq != seen:
                # A complete record found by recovery is synced before it is
                # answered as saved — its writer may have died between write and fsync.
                os.fsync(log.fileno())
                fsync_dir(self.path)
        if write:
            if torn is not None:
                repair_tail(self.log_path, torn)
            if not self._swept:
                self._sweep(cache)
        self._cache = cache
        return cache

    def _read_meta(self) -> dict | None:
        """``meta.json``, read again only when the file changed (it is replaced, never edited)."""
        stat = file_stat(self._meta_path)
        if stat is None or stat != self._meta_stat:
            meta = read_meta(self.path)
            if meta is None or meta != self._meta:
                self._meta, self._cache = meta, None
            self._meta_stat = stat if meta is not None else None
        return self._meta

    def _sweep(self, cache: Cache) -> None:
        """Remove what killed processes left: temporary snapshots, parts no head names.

        Once per recorder, and again whenever it starts over from a snapshot:
        a killed writer of another process leaves at most a few files, which
        the next sweep (or a refresh) removes.
        """
        generations = remove_stale_temps(self.path)
        if generations - {cache.snapshot.generation if cache.snapshot is not None else None}:
            # lazy: the snapshot writer is for writes only; a state read never loads it
            from fold_core.store.refresh import clean_generations

            clean_generations(self.path, None)
        self._swept = True

    def _from_snapshot(self, log: IO[bytes], budget: int, identity: tuple[int, int]) -> Cache:
        self._swept = False
        try:
            snapshot = read_snapshot(self.path, budget)
            if snapshot is None:
                return Cache(empty_state(budget), 0, 0, identity, SNAP_MISSING, None)
            if snapshot.state.event_seq and not snapshot.matches(log):
                raise ValueError("ahead of the log")
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return Cache(empty_state(budget), 0, 0, identity, SNAP_BAD, None,
                         file_stat(os.path.join(self.path, "snapshot.json")))
        return Cache(snapshot.state, snapshot.offset, snapshot.last_offset, identity, SNAP_OK, snapshot,
                     snapshot.stat)

    def _apply_tail(self, log: IO[bytes], cache: Cache) -> Torn | None:
        walk = scan(log, cache.offset, cache.state.event_seq)
        if walk.size == cache.offset:
            return None
        tail_batches, offsets = cache.tail_batches, cache.offsets
        last = cache.last_offset
        replayer = Replayer(cache.state)
        apply = replayer.apply
        # A long tail (a cold recovery) keeps a post-image of every item alive: the
        # cyclic GC would walk them again and again (JSON values hold no cycles).
        long_tail = walk.size - cache.offset > SNAPSHOT_BYTES
        paused = long_tail and gc.isenabled()
        if paused:
            gc.disable()
        try:
            # Line starts are kept for a short tail only; ``records`` finds any other by bisection.
            keep_offsets = not long_tail
            for record, start in walk.records(bulk_loads() if long_tail else None):
                batch_id = record.get("batch_id")
                if batch_id is not None:
                    tail_batches[batch_id] = (record["event_seq"], record.get("request_digest"), start)
                if keep_offsets:
                    offsets[record["event_seq"]] = start
                last = start
                apply(record)
        except StoreCorrupt:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
            line = walk.event_seq
            raise StoreCorrupt(
                f"events.jsonl line {line}: the record does not have the expected shape"
                f" ({type(error).__name__}: {error})",
                line=line,
            ) from None
        finally:
            if paused:
                gc.enable()
        cache.state = replayer.freeze()
        cache.offset, cache.last_offset = walk.offset, last
        offsets[cache.state.event_seq] = last
        return walk.torn

    def _refresh_due(self, cache: Cache, write: bool) -> bool:
        if cache.snap == SNAP_BAD:
            return write  # a reader leaves a bad snapshot alone: it may be the last trace of lost records
        if cache.snap == SNAP_MISSING:
            return cache.state.event_seq > 0
        if cache.snapshot is not None and cache.snapshot.version < 3:
            return write  # upgraded by the next writer
        return write and (
            cache.state.event_seq - cache.snap_seq >= snapshot_bound()
            or cache.offset - cache.snap_offset >= SNAPSHOT_BYTES
        )

    def _refresh(self, cache: Cache, *, exclusive: bool) -> None:
        # lazy: the snapshot writer loads only when a snapshot is written, never on a plain state read
        from fold_core.store import refresh

        directory = self.path
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
            cache.snap, cache.snapshot, cache.snap_stat = SNAP_MISSING, None, None
        if cache.state.event_seq == 0:
            cache.snap = SNAP_OK
            return
        snapshot = cache.snapshot
        parts = snapshot.archive if snapshot is not None else None
        if exclusive and cache.snap == SNAP_OK and snapshot is not None and isinstance(parts, Parts):  # format 3
            refresh.append(cache, directory, parts, snapshot.floor)
        else:
            refresh.rewrite(cache, directory, self.log_path, exclusive=exclusive)

    # -- appending --------------------------------------------------------------

    def _append(self, cache: Cache, record: dict, state: State | None) -> None:
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
            identity = self._log.append(data, cache.offset, cache.identity)
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
            cache.tail_batches[batch_id] = (event_seq, record.get("request_digest"), start)
        self._cache = cache

def file_store(path: str | os.PathLike, budget: int | None = None) -> Store:
    """A ``Store`` over the directory at ``path``."""
    return Store(FileRecorder(path, budget))
