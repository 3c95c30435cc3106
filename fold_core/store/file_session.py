"""The sessions of a ``FileRecorder`` (see ``file``): what a caller holds while the lock is held.

``Hold`` is the context manager ``FileRecorder.session`` returns: it takes the
lock, recovers, and — for a reader that found no snapshot — writes one before
the caller reads, so that the answer comes from the new head rather than from
every item the log ever held; on leaving, a writer refreshes the snapshot
when due, then the lock is dropped. An ``OSError`` inside a session becomes
``StoreUnavailable``. ``FileSession`` is the ``Session`` of ``store.base``
over the recovered ``Cache``.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from types import TracebackType
from typing import Literal, Protocol

from fold_core.errors import StoreCorrupt
from fold_core.state import State
from fold_core.store.base import Session, mentions
from fold_core.store.cache import Cache, lookup, view_state
from fold_core.store.log import line_start, read_records, unavailable
from fold_core.text import ITEM_ID

__all__ = ["FileSession", "Hold", "Holder", "stat_or_none"]


class Holder(Protocol):
    """What a session asks of its recorder (``file.FileRecorder``): the lock, recovery, refresh, append."""

    path: str
    log_path: str
    _cache: Cache | None

    def _take_lock(self, write: bool) -> None: ...

    def _drop_lock(self) -> None: ...

    def _recover(self, write: bool) -> Cache: ...

    def _refresh_due(self, cache: Cache, write: bool) -> bool: ...

    def _refresh(self, cache: Cache, *, exclusive: bool) -> None: ...

    def _append(self, cache: Cache, record: dict, state: State | None) -> None: ...


def stat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


class Hold:
    """One session of a ``FileRecorder``: lock, recover, hand out the session; refresh when due, unlock."""

    __slots__ = ("recorder", "write", "cache")

    def __init__(self, recorder: Holder, write: bool) -> None:
        self.recorder, self.write = recorder, write
        self.cache: Cache | None = None

    def __enter__(self) -> FileSession:
        recorder = self.recorder
        recorder._take_lock(self.write)
        # A cold recovery holds a post-image of every item the log ever named until a
        # snapshot written from it lets them go: the cyclic GC stays off meanwhile, or
        # it walks them all again and again (JSON values hold no cycles).
        paused = gc.isenabled()
        if paused:
            gc.disable()
        try:
            try:
                cache = recorder._recover(self.write)
            except OSError as error:
                recorder._cache = None
                raise unavailable(error, f"cannot read the store {recorder.path}") from error
            if not self.write and recorder._refresh_due(cache, False):
                # A reader writes a missing snapshot before it answers: the answer then
                # comes from the new head, not from every item the log ever held.
                recorder._refresh(cache, exclusive=False)
        except BaseException:
            recorder._drop_lock()
            raise
        finally:
            if paused:
                gc.enable()
        self.cache = cache
        return FileSession(recorder, cache)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> Literal[False]:
        recorder, cache = self.recorder, self.cache
        try:
            if kind is None and self.write and cache is not None and recorder._cache is cache \
                    and recorder._refresh_due(cache, True):
                recorder._refresh(cache, exclusive=True)
        finally:
            recorder._drop_lock()
        if isinstance(error, OSError):
            raise unavailable(error, f"cannot read the store {recorder.path}") from error
        return False


class FileSession(Session):
    """The recovered store while the lock is held."""

    def __init__(self, recorder: Holder, cache: Cache) -> None:
        self._recorder = recorder
        self.cache = cache

    @property
    def state(self) -> State:  # type: ignore[override]
        return self.cache.state

    def state_for_view(self, *, item: str | None, not_active: int | None) -> State:
        return view_state(self.cache, item=item, not_active=not_active)

    def lookup(self, batch_id: str) -> tuple[int, str | None] | None:
        cache = self.cache
        try:
            found = lookup(cache, batch_id, self._recorder.log_path)
        except ValueError as error:
            raise StoreCorrupt(f"{self._recorder.path}: {error}") from None
        if found is None:
            return None
        cache.offsets.setdefault(found[0], found[2])
        return found[0], found[1]

    def record(self, event_seq: int) -> dict:
        for record in self.records(event_seq - 1):
            return record
        raise KeyError(event_seq)

    def records(self, since: int = 0, only: bytes | None = None) -> Iterator[dict]:
        cache = self.cache
        since = max(since, 0)
        if since >= cache.state.event_seq:
            return iter(())
        start = cache.offsets.get(since + 1)
        if start is None:  # not a record this recorder has seen: find its line by bisection
            start = line_start(self._recorder.log_path, since + 1, cache.offset)
        if start is None:
            since_read, start = 0, 0
        else:
            since_read = since
        return read_records(self._recorder.log_path, start, since_read, since, cache.offset, only)

    def records_about(self, item: str, since: int = 0) -> Iterator[dict]:
        """Only the lines holding the item's id as a JSON string are parsed.

        A record names an item by its id, and an id ([a-z0-9-]) is written as
        itself between quotes, so every line about the item holds those bytes;
        the few others that do (a parent, a merge target) are parsed and left out.
        """
        if ITEM_ID.fullmatch(item) is None:
            return super().records_about(item, since)
        return (record for record in self.records(since, b'"' + item.encode("ascii") + b'"')
                if mentions(record, item))

    def append(self, record: dict, state: State) -> None:
        self._recorder._append(self.cache, record, state)
