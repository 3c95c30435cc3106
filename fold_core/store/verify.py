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
from fold_core.state import ITEM_FIELDS, State, empty_state, replay
from fold_core.store.meta import StoreMissing, read_meta
from fold_core.store.locking import StoreLock
from fold_core.store.log import scan
from fold_core.store.snapshot import read_snapshot
from fold_core.store.verify_head import head_problem

__all__ = ["verify_store"]

_TYPES = ("commit", "acknowledge", "checked", "annotation")


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
        checker = _Checker(walk, budget)
        records = checker.records()
        try:
            state = empty_state(budget)
            if snapshot is not None and snapshot.state.event_seq:
                state = replay(itertools.islice(records, snapshot.state.event_seq), state)
                checker.check_budgets(state)
                _compare(snapshot, state, checker)
            state = replay(records, state)
        except StoreCorrupt:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
            raise checker.corrupt(f"the record does not have the expected shape ({type(error).__name__}: {error})")
        checker.check_budgets(state)
        return _report(budget, state, snapshot, walk.torn)


class _Checker:
    """Checks each record before T applies it; knows the line being applied."""

    def __init__(self, walk, budget: int) -> None:
        self.walk = walk
        self.budget = budget
        self.line = 0
        self.revision = 0
        self.annotations: set[str] = set()
        self.batches: dict[str, list] = {}
        self.items: set[str] = set()

    def corrupt(self, message: str) -> StoreCorrupt:
        return StoreCorrupt(f"events.jsonl line {self.line}: {message}", line=self.line)

    def records(self) -> Iterator[dict]:
        for record, start in self.walk.records():
            self.line = record["event_seq"]
            self.check(record, start)
            yield record

    def check(self, record: dict, start: int) -> None:
        kind = record.get("type")
        if record.get("v") != 1 or kind not in _TYPES:
            raise self.corrupt(f"unknown record version or type ({record.get('v')!r}, {kind!r})")
        if kind == "annotation":
            note = record["annotation"]
            expected = f"ann-{len(self.annotations) + 1}"
            if note["id"] != expected:
                raise self.corrupt(f"annotation id {note['id']!r}, expected {expected!r} (save order)")
            self.annotations.add(note["id"])
            return
        bumps = 0 if kind == "checked" else 1
        if record["previous_revision"] != self.revision or record["revision"] != self.revision + bumps:
            raise self.corrupt(
                f"{kind} record with revision {record['previous_revision']!r} → {record['revision']!r}"
                f" after revision {self.revision}"
            )
        self.revision = record["revision"]
        batch_id = record["batch_id"]
        if batch_id in self.batches:
            raise self.corrupt(f"batch_id {batch_id!r} was already accepted at event_seq {self.batches[batch_id][0]}")
        self.batches[batch_id] = [record["event_seq"], record["request_digest"], start]
        for change in record["receipt"]["changes"]:
            if change["op"] == "created" and change["item"] in self.items:
                raise self.corrupt(f"creates {change['item']!r}, an id that already exists (ids are never reused)")
        for change in record["changes"]:
            missing = [name for name in ITEM_FIELDS if name not in change["item"]]
            if missing:
                raise self.corrupt(f"post-image of {change['item'].get('id')!r} lacks {', '.join(missing)}")
            self.items.add(change["item"]["id"])
        for ack in record["acks"]:
            if ack["annotation"] not in self.annotations:
                raise self.corrupt(f"acknowledges {ack['annotation']!r}, which was never saved")

    def check_budgets(self, state: State) -> None:
        for layer, members in state.active.items():
            used = sum(state.items[member]["share"] for member in members)
            if used > state.budget:
                name = "root" if layer is None else repr(layer)
                raise self.corrupt(f"after this record layer {name} uses {used} of budget {state.budget}")


def _compare(snapshot, state: State, checker: _Checker) -> None:
    head = snapshot.state
    try:
        items, notes = head.items.whole(), head.annotations.whole()
        batches = snapshot.archive.all_batches() if snapshot.archive is not None else {}
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
        raise _bad_snapshot(f"its archive cannot be read ({error})") from None
    if checker.walk.event_seq != head.event_seq:
        raise _bad_snapshot(f"it reflects event_seq {head.event_seq} but the log ends at {checker.walk.event_seq}")
    if checker.walk.offset != snapshot.offset:
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


def _report(budget: int, state: State, snapshot, torn) -> dict:
    return {
        "ok": True,
        "records": state.event_seq,
        "last_event_seq": state.event_seq,
        "revision": state.revision,
        "budget": budget,
        "snapshot": None if snapshot is None else {"last_event_seq": snapshot.state.event_seq, "consistent": True},
        "torn_tail": None if torn is None else {"offset": torn.offset, "bytes": torn.size, "nul_line": torn.nul_line},
    }
