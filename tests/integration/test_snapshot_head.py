"""A state read of an old store parses only the snapshot head (contract §6.2, §8).

The not-active index grows forever; a state read must not. These tests build
a store where hundreds of items were withdrawn or merged, then check that a
fresh reader answers every state document exactly as the in-memory model does
— with the archive left unread for a default read, and read when a request
or the log tail needs it.
"""

from __future__ import annotations

import json

import pytest

from fold_core.store import memory_store
from fold_core.store.base import Store
from fold_core.store.file import FileRecorder
from fold_core.store.snapshot import RECENT, parse_snapshot

NOW = "2026-10-09T08:00:00+08:00"
LATER = "2026-11-01T08:00:00+08:00"


def _minute(n: int) -> str:
    return f"2026-10-{9 + n // 1440:02d}T{(n // 60) % 24:02d}:{n % 60:02d}:00+08:00"


def _both(path):
    """A file store and the memory model, fed the same requests."""
    file_store = Store(FileRecorder(path, budget=64))
    model = memory_store(64)

    def commit(batch: dict, now: str) -> dict:
        answers = [store.commit(batch, actor="agent", now=now) for store in (file_store, model)]
        assert answers[0].document == answers[1].document
        assert answers[0].exit_code == 0, answers[0].document
        return answers[0].document

    def annotate(item: str, now: str) -> None:
        answers = [store.annotate(item=item, text="note", author="user", now=now) for store in (file_store, model)]
        assert answers[0].document == answers[1].document

    return file_store, model, commit, annotate


def _churn(commit, annotate, count: int) -> None:
    """Each batch creates one item and withdraws the previous one; a merge and notes on old items."""
    commit({"batch_id": "m0", "declarations": [
        {"id": "a", "title": "A", "weight": "low", "kind": "fyi"},
        {"id": "b", "title": "B", "weight": "low", "kind": "fyi"}]}, _minute(0))
    annotate("a", _minute(1))
    commit({"batch_id": "m1", "declarations": [
        {"id": "ab", "relation": "merges:[a, b]", "title": "A+B", "weight": "low", "kind": "fyi"}]}, _minute(2))
    commit({"batch_id": "m2", "declarations": [{"id": "ab", "relation": "withdraw", "reason": "old"}]}, _minute(3))
    for n in range(count):
        declarations = [{"id": f"i{n}", "title": f"item {n}", "weight": "normal", "kind": "fyi"}]
        if n:
            declarations.append({"id": f"i{n - 1}", "relation": "withdraw", "reason": "superseded"})
        commit({"batch_id": f"c{n}", "declarations": declarations}, _minute(10 + n))
    annotate("i3", _minute(10 + count))


def _fresh_reader(path) -> tuple[Store, FileRecorder]:
    recorder = FileRecorder(path)
    return Store(recorder), recorder


@pytest.fixture
def churned(tmp_path):
    path = tmp_path / "store"
    file_store, model, commit, annotate = _both(path)
    _churn(commit, annotate, RECENT + 150)
    file_store.recorder.close()  # a clean shutdown writes the snapshot
    return path, model, commit, annotate


def test_a_default_read_uses_only_the_head_and_matches_the_model(churned):
    path, model, _commit, _annotate = churned
    snapshot = parse_snapshot((path / "snapshot.json").read_bytes(), 64)
    assert snapshot.partial and len(snapshot.state.items) < RECENT + 20
    reader, recorder = _fresh_reader(path)
    document = reader.state_document(now=LATER).document
    assert document == model.state_document(now=LATER).document
    assert document["not_active_total"] == RECENT + 149 + 3
    assert recorder._cache.archive is not None, "a default read must not load the archive"


@pytest.mark.parametrize("request_", [
    {"not_active": None}, {"not_active": RECENT + 1}, {"not_active": 5},
    {"item": "i0"}, {"item": "a"}, {"item": f"i{RECENT + 149}"}, {"item": "nope"},
])
def test_every_kind_of_read_matches_the_model(churned, request_):
    path, model, _commit, _annotate = churned
    reader, _recorder = _fresh_reader(path)
    mine = reader.state_document(now=LATER, **request_)
    theirs = model.state_document(now=LATER, **request_)
    assert (mine.exit_code, mine.document) == (theirs.exit_code, theirs.document)


# Tails that leave the head enough (True) and tails that need the archive (False).
TAILS = {"restore-archived": False, "restore-recent": False, "withdraw": True, "annotate-archived": True,
         "create-then-withdraw": True}


@pytest.mark.parametrize("tail", sorted(TAILS))
def test_a_tail_after_the_snapshot_is_applied_correctly(churned, tail):
    path, model, commit, annotate = churned
    last = RECENT + 149
    if tail == "restore-archived":
        commit({"batch_id": "t", "declarations": [
            {"id": "i1", "relation": "supersedes:i1", "weight": "normal", "kind": "fyi"}]}, LATER)
    elif tail == "restore-recent":
        commit({"batch_id": "t", "declarations": [
            {"id": f"i{last - 1}", "relation": "supersedes:i" + str(last - 1), "weight": "normal", "kind": "fyi"}]},
            LATER)
    elif tail == "withdraw":
        commit({"batch_id": "t", "declarations": [{"id": f"i{last}", "relation": "withdraw", "reason": "done"}]},
               LATER)
    elif tail == "create-then-withdraw":
        for n in range(3):
            commit({"batch_id": f"t{n}", "declarations": [
                {"id": f"t{n}", "title": "short-lived", "weight": "low", "kind": "fyi"}]}, LATER)
            commit({"batch_id": f"u{n}", "declarations": [
                {"id": f"t{n}", "relation": "withdraw", "reason": "gone"}]}, LATER)
    else:
        annotate("i2", LATER)
    reader, recorder = _fresh_reader(path)
    reader.state_document(now=LATER)
    assert (recorder._cache.archive is not None) == TAILS[tail], "head-only read when (and only when) it suffices"
    for request_ in ({}, {"not_active": None}):
        mine = reader.state_document(now=LATER, **request_).document
        assert json.dumps(mine, sort_keys=True) == json.dumps(
            model.state_document(now=LATER, **request_).document, sort_keys=True)


def test_a_writer_after_a_partial_read_sees_every_item(churned):
    path, model, _commit, _annotate = churned
    reader, recorder = _fresh_reader(path)
    reader.state_document(now=LATER)  # partial
    batch = {"batch_id": "w", "declarations": [{"id": "i0", "title": "again", "weight": "low", "kind": "fyi"}]}
    mine = reader.commit(batch, actor="agent", now=LATER)
    theirs = model.commit(batch, actor="agent", now=LATER)
    assert mine.document == theirs.document
    assert mine.document["errors"][0]["code"] == "item_exists"


def test_replays_and_conflicts_are_found_through_the_raw_index(churned):
    """A retry of an old batch is answered from the snapshot's index line (and a refresh appends to it)."""
    path, model, commit, _annotate = churned
    old = {"batch_id": "c5", "declarations": [{"id": "i5", "title": "item 5", "weight": "normal", "kind": "fyi"},
                                              {"id": "i4", "relation": "withdraw", "reason": "superseded"}]}
    for _round in range(2):
        reader, recorder = _fresh_reader(path)
        mine = reader.commit(old, actor="agent", now=LATER)
        assert mine.document == model.commit(old, actor="agent", now=LATER).document
        assert mine.document["replayed"] is True
        assert recorder._cache.batches is None, "one lookup must not load the whole batch index"
        other = dict(old, declarations=old["declarations"][:1])
        assert reader.commit(other, actor="agent", now=LATER).document["errors"][0]["code"] == "batch_conflict"
        for n in range(70):  # enough new batches for a refresh that appends to the index line
            commit({"batch_id": f"r{_round}-{n}", "declarations": []}, LATER)
    from fold_core.store.verify import verify_store

    report = verify_store(str(path))
    assert report["ok"] and report["snapshot"]["consistent"], report
