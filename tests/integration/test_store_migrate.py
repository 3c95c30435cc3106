"""Moving a store between a directory and PostgreSQL, both ways (``fold_core.store.migrate``).

A file store with a varied history — random valid and invalid batches,
annotations and acknowledgements, merges, restores, more than 200 not-active
items (so the file store's snapshot keeps an archive) — is moved to a new
PostgreSQL store and from there to a new directory. At each hop: the records
are the same bytes, ``verify`` passes, the state, the state documents and the
history equal the source's, and the moved store goes on accepting commits
and replaying old batch ids exactly as the source would.
"""

from __future__ import annotations

import copy
import json
import random

import pytest

from fold_core.errors import UsageError
from fold_core.store.base import Store
from fold_core.store.file import FileRecorder
from fold_core.store.locate import open_store
from fold_core.store.memory import MemoryRecorder
from fold_core.store.migrate import migrate_store
from random_batches import random_declaration
from tests.support.stores import FileBackend, PostgresBackend

READ_AT = "2027-01-01T00:00:00+08:00"


def _history(store: Store, model: Store, seed: int = 5, steps: int = 120) -> list[str]:
    rng = random.Random(seed)
    minutes, fresh, accepted = [0], [0], []

    def now():
        minutes[0] += rng.randint(1, 200)
        hours, minute = divmod(minutes[0], 60)
        return f"2026-10-{9 + (hours // 24) % 19:02d}T{hours % 24:02d}:{minute:02d}:00+08:00"

    def new_id():
        fresh[0] += 1
        return f"i{fresh[0]}"

    for step in range(steps):
        if step < 7:  # a parent with 30 children, then its withdraw: > 200 not-active items in all
            children = [{"id": f"bulk{step}-{k}", "title": "子项", "weight": "trace", "kind": "fyi"} for k in range(30)]
            for body in ({"batch_id": f"bulk{step}", "declarations": [
                    {"id": f"bulk{step}", "title": "批量", "summary": "很多", "weight": "trace", "kind": "fyi",
                     "children": children}]},
                    {"batch_id": f"bulk{step}-wd", "declarations": [
                        {"id": f"bulk{step}", "relation": "withdraw", "reason": "清理"}]}):
                assert store.commit(copy.deepcopy(body), actor="agent", now=now()).exit_code == 0
                model.commit(body, actor="agent", now=now())
            continue
        if rng.random() < 0.2:
            items = sorted(model.recorder.state.items) or ["ghost"]
            when = now()
            args = {"item": rng.choice(items), "text": rng.choice(("看过了", "two\nlines")), "author": "user",
                    "now": when}
            assert store.annotate(**args).document == model.annotate(**args).document
            continue
        used: set = set()
        state = model.recorder.state
        declarations = [d for d in (random_declaration(rng, state.items, used, new_id, now) for _ in range(3)) if d]
        body = {"batch_id": f"b{step}", "declarations": declarations}
        if state.annotations and rng.random() < 0.5:
            body["acknowledges"] = sorted(state.annotations)[: rng.randint(1, len(state.annotations))]
        when = now()
        got = store.commit(copy.deepcopy(body), actor="agent", now=when)
        assert got.document == model.commit(body, actor="agent", now=when).document
        if got.exit_code == 0:
            accepted.append(body["batch_id"])
    return accepted


def _same_store(left: Store, right: Store) -> None:
    assert right.state() == left.state()
    for options in ({}, {"not_active": None}, {"depth": 1}):
        assert right.state_document(now=READ_AT, **options).document == \
            left.state_document(now=READ_AT, **options).document
    assert right.history().document == left.history().document


def test_file_to_postgres_and_back(postgres_cluster, tmp_path):
    files, postgres = FileBackend(), PostgresBackend(postgres_cluster)
    source = str(tmp_path / "source")
    model = Store(MemoryRecorder(64))
    accepted = _history(Store(FileRecorder(source, 64)), model)
    assert model.recorder.state.inactive_total > 200 and model.recorder.state.annotations

    database = postgres.new_location(tmp_path)
    report = migrate_store(source, database)
    assert report["verified"] is True and report["records"] == model.recorder.state.event_seq
    assert postgres.raw_records(database) == files.raw_records(source)
    _same_store(open_store(source), open_store(database))

    back = str(tmp_path / "back")
    migrate_store(database, back)
    assert files.raw_records(back) == files.raw_records(source)
    with open(f"{source}/meta.json") as a, open(f"{back}/meta.json") as b:
        assert json.load(a) == json.load(b)  # budget and created_at kept
    _same_store(open_store(source), open_store(back))

    for location in (database, back):  # the moved stores go on as the source would
        moved = open_store(location)
        old = accepted[len(accepted) // 2]
        assert moved.commit({"batch_id": old, "declarations": []}, actor="agent", now=READ_AT).document["errors"][0][
            "code"] == "batch_conflict"
        next_batch = {"batch_id": "after-move", "declarations": [
            {"id": "moved", "title": "搬家之后", "weight": "low", "kind": "fyi"}]}
        expected = Store(MemoryRecorder(64))
        expected.recorder.state, expected.recorder.log = model.recorder.state, list(model.recorder.log)
        expected.recorder.batches = dict(model.recorder.batches)
        assert moved.commit(copy.deepcopy(next_batch), actor="agent", now=READ_AT).document == \
            expected.commit(next_batch, actor="agent", now=READ_AT).document


def test_a_target_with_records_is_refused(postgres_cluster, tmp_path):
    postgres = PostgresBackend(postgres_cluster)
    source = str(tmp_path / "source")
    Store(FileRecorder(source, 64)).commit({"batch_id": "b1", "declarations": [
        {"id": "a", "title": "A", "weight": "low", "kind": "fyi"}]}, actor="agent", now=READ_AT)
    taken = postgres.new_location(tmp_path)
    open_store(taken).commit({"batch_id": "x", "declarations": []}, actor="agent", now=READ_AT)
    with pytest.raises(UsageError, match="already holds a store"):
        migrate_store(source, taken)
    assert len(postgres.raw_records(taken)) == 1
    with pytest.raises(UsageError, match="already holds a store"):
        migrate_store(taken, source)
    with pytest.raises(UsageError, match="the same store"):
        migrate_store(source, source)
    empty = postgres.new_location(tmp_path)
    postgres.create(empty, 64)  # `foldctl init` with the same budget: an empty store may be the target
    assert migrate_store(source, empty)["records"] == 1
