"""``foldctl verify``: the full integrity check of a file store (contract §7, §6.1).

Like SQLite's ``integrity_check``: replay the **whole** log — every line
parses, event_seq runs 1, 2, 3 …, every record has the shape T needs, revisions
follow the record types (§4), annotation ids follow save order, acks name
saved annotations, batch_ids are unique, every post-image carries every item
field, every layer's active shares fit the budget — then compare the result
with the snapshot at the snapshot's ``last_event_seq`` (state, offsets, batch
index). The first problem raises ``StoreCorrupt`` (exit 4) naming the 1-based
log line, or ``snapshot.json`` for a bad cache. A torn tail is not corruption:
it is reported, and repaired by the next write.

Read-only: it takes the shared lock and writes nothing.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

from fold_core.errors import StoreCorrupt
from fold_core.state import State, empty_state, replay
from fold_core.table import whole
from fold_core.store.meta import StoreMissing, read_meta
from fold_core.store.locking import StoreLock
from fold_core.store.log import Scan, Torn, scan
from fold_core.store.record_checks import RecordChecker
from fold_core.store.snapshot import read_snapshot
from fold_core.store.snapshot_parsed import Snapshot
from fold_core.store.verify_head import head_problem

__all__ = ["verify_store"]


def verify_store(path: str) -> dict:
    """The report of a clean store; raises ``StoreCorrupt`` at the first problem."""
    if not os.path.exists(os.path.join(path, "meta.json")):
        raise StoreMissing(f"no store at {path} (no meta.json)")
    lock = StoreLock(os.path.join(path, "lock"), exclusive=False, create=True)
    try:
        return _verify(path)
    finally:
        lock.release()


def _verify(path: str) -> dict:
    meta = read_meta(path)
    if meta is None:
        raise StoreMissing(f"no store at {path} (no meta.json)")
    budget = meta["budget"]
    log_path = os.path.join(path, "events.jsonl")
    try:
        snapshot = read_snapshot(path, budget)
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
        raise _bad_snapshot(f"it cannot be read ({error})") from None
    if not os.path.exists(log_path):
        if snapshot is not None and snapshot.state.event_seq:
            raise _bad_snapshot("it holds records but events.jsonl does not exist")
        return _report(budget, empty_state(budget), snapshot, None)
    with open(log_path, "rb") as log:
        walk = scan(log, 0, 0)
        checker = RecordChecker(budget, "events.jsonl line")
        records = _checked(walk, checker)
        try:
            state = empty_state(budget)
            if snapshot is not None and snapshot.state.event_seq:
                state = replay(itertools.islice(records, snapshot.state.event_seq), state)
                checker.check_budgets(state)
                _compare(snapshot, state, checker, walk)
            state = replay(records, state)
        except StoreCorrupt:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
            raise checker.corrupt(f"the record does not have the expected shape ({type(error).__name__}: {error})")
        checker.check_budgets(state)
        return _report(budget, state, snapshot, walk.torn)


def _checked(walk: Scan, checker: RecordChecker) -> Iterator[dict]:
    """The log's records, each checked before it is yielded (``checker.line`` is its line)."""
    for record, start in walk.records():
        checker.line = record["event_seq"]
        checker.check(record, start)
        yield record


def _compare(snapshot: Snapshot, state: State, checker: RecordChecker, walk: Scan) -> None:
    head = snapshot.state
    try:
        items, notes = whole(head.items), whole(head.annotations)
        batches = snapshot.archive.all_batches() if snapshot.archive is not None else {}
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
        raise _bad_snapshot(f"its archive cannot be read ({error})") from None
    if walk.event_seq != head.event_seq:
        raise _bad_snapshot(f"it reflects event_seq {head.event_seq} but the log ends at {walk.event_seq}")
    if walk.offset != snapshot.offset:
        raise _bad_snapshot(f"its offset {snapshot.offset} is not the end of record {head.event_seq}")
    expected = {"items": dict(state.items.items()), "annotations": dict(state.annotations.items())}
    for name, value in (("items", items), ("annotations", notes)):
        if value != expected[name] or len(getattr(head, name)) != len(value):
            raise _bad_snapshot(f"its {name} differ from a replay of the log up to event_seq {head.event_seq}")
    for name in ("revision", "last_checked_at", "inactive_total"):
        if getattr(head, name) != getattr(state, name):
            raise _bad_snapshot(f"its {name} differ from a replay of the log up to event_seq {head.event_seq}")
    if {k: set(v) for k, v in head.active.items()} != {k: set(v) for k, v in state.active.items()}:
        raise _bad_snapshot("its active layers differ from a replay of the log")
    if {key: tuple(entry) for key, entry in batches.items()} != \
            {key: (entry[0], entry[2]) for key, entry in checker.batches.items()}:
        raise _bad_snapshot("its batch index differs from the log")
    if snapshot.version >= 3:
        problem = head_problem(snapshot, items)
        if problem:
            raise _bad_snapshot(problem)


def _bad_snapshot(why: str) -> StoreCorrupt:
    return StoreCorrupt(
        f"snapshot.json: {why}. It is only a cache: delete it and the next read rebuilds it from the log"
    )


def _report(budget: int, state: State, snapshot: Snapshot | None, torn: Torn | None) -> dict:
    return {
        "ok": True,
        "records": state.event_seq,
        "last_event_seq": state.event_seq,
        "revision": state.revision,
        "budget": budget,
        "snapshot": None if snapshot is None else {"last_event_seq": snapshot.state.event_seq, "consistent": True},
        "torn_tail": None if torn is None else {"offset": torn.offset, "bytes": torn.size, "nul_line": torn.nul_line},
    }
