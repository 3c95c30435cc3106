"""Reads and commits that stay flat as the history grows (contract §6.2, §8).

The not-active index grows forever; a state read and a commit must not. These
tests build a store where hundreds of items were withdrawn or merged, then
check that fresh and long-lived recorders answer every request exactly as
the in-memory model does — with the snapshot archive left unread (made to
fail if touched) where the issue says it must be, and read when a request
asks for history.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fold_core.store import memory_store
from fold_core.store.base import Store
from fold_core.store.file import FileRecorder
from fold_core.store.parts import Parts
from fold_core.store.snapshot import HEAD_RECENT, RECENT
from fold_core.store.verify import verify_store

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

    def annotate(item: str, now: str) -> str:
        answers = [store.annotate(item=item, text="note", author="user", now=now) for store in (file_store, model)]
        assert answers[0].document == answers[1].document
        return answers[0].document["annotation"]

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
        if n in (1, 5):
            acked = annotate(f"i{n}", _minute(10 + n))
            commit({"batch_id": f"ack{n}", "declarations": [], "acknowledges": [acked]}, _minute(10 + n))
    annotate("i3", _minute(10 + count))


LAST = RECENT + 149


@pytest.fixture
def churned(tmp_path):
    path = tmp_path / "store"
    file_store, model, commit, annotate = _both(path)
    _churn(commit, annotate, LAST + 1)
    file_store.recorder.close()  # a clean shutdown writes the snapshot
    return path, model, commit, annotate


@pytest.fixture
def sealed(monkeypatch):
    """Make any whole-archive read fail (``load``); with ``lookups=True`` every archive read."""

    def seal(lookups: bool = False) -> None:
        def refuse(*_args, **_kwargs):
            raise AssertionError("the archive was read")

        monkeypatch.setattr(Parts, "load", refuse)
        if lookups:
            monkeypatch.setattr(Parts, "entry", refuse)
            monkeypatch.setattr(Parts, "note", refuse)
            monkeypatch.setattr(Parts, "batch", refuse)

    return seal


def _head(path) -> dict:
    return json.loads((path / "snapshot.json").read_bytes())


def _fresh_reader(path) -> tuple[Store, FileRecorder]:
    recorder = FileRecorder(path)
    return Store(recorder), recorder


def _same(mine, theirs) -> None:
    assert (mine.exit_code, json.dumps(mine.document, sort_keys=True)) == (
        theirs.exit_code, json.dumps(theirs.document, sort_keys=True))


def test_the_head_holds_what_a_read_needs_and_no_more(churned):
    path, model, _commit, _annotate = churned
    head = _head(path)
    assert head["version"] == 3
    inactive = [item for item in head["items"].values() if item["status"] != "active"]
    assert len(inactive) <= HEAD_RECENT + 4  # the recent ones, and the merge chain of a pending note
    assert head["item_total"] == len(model.state().items) and head["inactive_total"] == LAST + 3
    notes = head["annotations"]
    assert sorted(notes) == ["ann-1", "ann-4"], "pending notes stay; acknowledged notes of archived items go"
    assert {"a", "ab"} <= set(head["items"]), "the merge chain of the pending note on a"


def test_a_default_read_uses_only_the_head_and_matches_the_model(churned, sealed):
    path, model, _commit, _annotate = churned
    sealed(lookups=True)
    reader, _recorder = _fresh_reader(path)
    document = reader.state_document(now=LATER).document
    assert document == model.state_document(now=LATER).document
    assert document["not_active_total"] == LAST + 3


ABOVE_THE_HEAD = HEAD_RECENT + 24  # more not-active entries than the head keeps: the archive must answer

@pytest.mark.parametrize("request_", [
    {"not_active": None}, {"not_active": RECENT + 1}, {"not_active": 5}, {"not_active": ABOVE_THE_HEAD},
    {"not_active": LAST}, {"not_active": LAST + 3}, {"not_active": LAST + 100},
    {"item": "i0"}, {"item": "a"}, {"item": f"i{LAST}"}, {"item": "nope"},
])
def test_every_kind_of_read_matches_the_model(churned, request_):
    path, model, _commit, _annotate = churned
    reader, _recorder = _fresh_reader(path)
    _same(reader.state_document(now=LATER, **request_), model.state_document(now=LATER, **request_))


def _tail(kind: str, commit, annotate) -> None:
    if kind == "restore-archived":
        commit({"batch_id": "t", "declarations": [
            {"id": "i1", "relation": "supersedes:i1", "weight": "normal", "kind": "fyi"}]}, LATER)
    elif kind == "restore-recent":
        commit({"batch_id": "t", "declarations": [
            {"id": f"i{LAST - 1}", "relation": f"supersedes:i{LAST - 1}", "weight": "normal", "kind": "fyi"}]},
            LATER)
    elif kind == "withdraw":
        commit({"batch_id": "t", "declarations": [{"id": f"i{LAST}", "relation": "withdraw", "reason": "done"}]},
               LATER)
    elif kind == "create-then-withdraw":
        for n in range(3):
            commit({"batch_id": f"t{n}", "declarations": [
                {"id": f"t{n}", "title": "short-lived", "weight": "low", "kind": "fyi"}]}, LATER)
            commit({"batch_id": f"u{n}", "declarations": [
                {"id": f"t{n}", "relation": "withdraw", "reason": "gone"}]}, LATER)
    else:
        annotate("i2", LATER)


TAILS = ("restore-archived", "restore-recent", "withdraw", "annotate-archived", "create-then-withdraw")


@pytest.mark.parametrize("tail", TAILS)
def test_a_tail_after_the_snapshot_is_applied_without_reading_the_whole_archive(churned, sealed, tail):
    path, model, commit, annotate = churned
    _tail(tail, commit, annotate)
    sealed()  # look-ups of single items are fine; loading the archive is not
    reader, _recorder = _fresh_reader(path)
    _same(reader.state_document(now=LATER), model.state_document(now=LATER))


@pytest.mark.parametrize("tail", TAILS)
def test_every_read_after_a_tail_matches_the_model(churned, tail):
    path, model, commit, annotate = churned
    _tail(tail, commit, annotate)
    reader, _recorder = _fresh_reader(path)
    for request_ in ({}, {"not_active": None}, {"not_active": ABOVE_THE_HEAD}, {"item": "i1"}):
        _same(reader.state_document(now=LATER, **request_), model.state_document(now=LATER, **request_))
    assert reader.state() == model.state()


def test_a_restored_item_brings_its_archived_annotations_back(churned):
    """i1 and i5 carry acknowledged notes that live in the archive; restoring them shows the notes again."""
    path, model, commit, _annotate = churned
    assert "ann-2" not in _head(path)["annotations"]
    for round_, item in enumerate(("i1", "i5")):
        commit({"batch_id": f"back-{item}", "declarations": [
            {"id": item, "relation": f"supersedes:{item}", "weight": "normal", "kind": "fyi"}]}, LATER)
        reader, _recorder = _fresh_reader(path)
        mine = reader.state_document(now=LATER)
        _same(mine, model.state_document(now=LATER))
        shown = {note["id"] for view in mine.document["root"]["items"] for note in view["annotations"]}
        assert shown >= ({"ann-2"} if round_ == 0 else {"ann-2", "ann-3"})
        if round_ == 0:  # a refresh in between: the note moves back into the head
            Store(FileRecorder(path)).recorder.close()
            commit({"batch_id": "again", "declarations": [{"id": "i1", "relation": "withdraw", "reason": "x"}]},
                   LATER)
            commit({"batch_id": "back-again", "declarations": [
                {"id": "i1", "relation": "supersedes:i1", "weight": "normal", "kind": "fyi"}]}, LATER)
    assert verify_store(str(path))["ok"]


def test_a_commit_never_reads_the_whole_archive(churned, sealed):
    path, model, commit, _annotate = churned
    sealed()
    writer = Store(FileRecorder(path))
    for n in range(3):  # new ids, archived ids (item_exists), restores, withdrawals
        for batch in ({"batch_id": f"w{n}", "declarations": [
                          {"id": f"w{n}", "title": "new", "weight": "low", "kind": "fyi"}]},
                      {"batch_id": f"x{n}", "declarations": [
                          {"id": f"i{n}", "title": "again", "weight": "low", "kind": "fyi"}]},
                      {"batch_id": f"y{n}", "declarations": [
                          {"id": f"i{10 + n}", "relation": f"supersedes:i{10 + n}", "weight": "low", "kind": "fyi"}]},
                      {"batch_id": f"z{n}", "declarations": [
                          {"id": f"w{n}", "relation": "withdraw", "reason": "done"}]}):
            for store in (writer, Store(FileRecorder(path))):
                mine = store.commit(batch, actor="agent", now=LATER)
                theirs = model.commit(batch, actor="agent", now=LATER)
                assert mine.document == theirs.document
    _same(writer.state_document(now=LATER), model.state_document(now=LATER))


def test_refreshes_append_to_the_parts_and_never_rewrite_them(churned, monkeypatch):
    path, model, commit, annotate = churned
    monkeypatch.setenv("FOLD_SNAPSHOT_EVERY", "1")
    generation = _head(path)["parts"]["generation"]
    before = {kind: (path / f"snapshot.{generation}.{kind}").read_bytes() for kind in ("items", "index", "batches")}
    for n in range(5):
        commit({"batch_id": f"n{n}", "declarations": [
            {"id": f"n{n}", "title": "next", "weight": "normal", "kind": "fyi"},
            {"id": f"i{LAST}" if n == 0 else f"n{n - 1}", "relation": "withdraw", "reason": "next"}]}, LATER)
        annotate(f"n{n}", LATER)
    head = _head(path)
    assert head["parts"]["generation"] == generation and head["last_event_seq"] == model.state().event_seq
    for kind, old in before.items():
        now = (path / f"snapshot.{generation}.{kind}").read_bytes()
        assert now.startswith(old) and len(now) > len(old), kind
    assert verify_store(str(path))["ok"]


def test_an_interrupted_refresh_leaves_bytes_the_next_writer_cuts_or_skips(churned, monkeypatch):
    path, model, commit, _annotate = churned
    monkeypatch.setenv("FOLD_SNAPSHOT_EVERY", "1")
    batch = {"batch_id": "crash", "declarations": [
        {"id": f"i{LAST}", "relation": "withdraw", "reason": "gone"},
        {"id": "crash", "title": "crash", "weight": "low", "kind": "fyi"}]}
    env = {**os.environ, "FOLD_FAULT": "mid_snapshot"}  # parts appended and fsynced, head not replaced
    done = subprocess.run([sys.executable, "-m", "fold_core", "commit", "--store", str(path), "--actor", "agent",
                           "--now", LATER, "-"], input=json.dumps(batch).encode(), env=env, capture_output=True)
    assert done.returncode == 137, done.stderr
    assert model.commit(batch, actor="agent", now=LATER).exit_code == 0
    generation = _head(path)["parts"]["generation"]
    for kind, junk in (("items", b'{"item":{"id":"i0","par'), ("index", b'["i","i2'),
                       ("batches", b'["c1",3')):  # and a torn last line in every part
        with open(path / f"snapshot.{generation}.{kind}", "ab") as part:
            part.write(junk)
    _same(Store(FileRecorder(path)).state_document(now=LATER), model.state_document(now=LATER))
    commit({"batch_id": "after", "declarations": [
        {"id": "after", "title": "after", "weight": "low", "kind": "fyi"}]}, LATER)
    assert verify_store(str(path))["ok"]
    for kind in ("items", "index", "batches"):  # the torn last lines were cut
        assert all(json.loads(line) for line in (path / f"snapshot.{generation}.{kind}").read_bytes().splitlines())
    reader, _recorder = _fresh_reader(path)
    for request_ in ({}, {"not_active": None}, {"item": "i1"}):
        _same(reader.state_document(now=LATER, **request_), model.state_document(now=LATER, **request_))


def test_restores_beyond_the_margin_refill_the_head_from_the_archive(churned, monkeypatch):
    path, model, commit, _annotate = churned
    monkeypatch.setenv("FOLD_SNAPSHOT_EVERY", "1")
    commit({"batch_id": "empty-root", "declarations": [
        {"id": f"i{LAST}", "relation": "withdraw", "reason": "r"}]}, LATER)
    for n in range(HEAD_RECENT - RECENT + 4):  # restore the most recent not-active items, one by one
        item = f"i{LAST - 1 - n}"
        commit({"batch_id": f"r{n}", "declarations": [
            {"id": item, "relation": f"supersedes:{item}", "weight": "trace", "kind": "fyi", "reason": "back"}]},
            LATER)
    reader, _recorder = _fresh_reader(path)
    for request_ in ({}, {"not_active": None}):
        _same(reader.state_document(now=LATER, **request_), model.state_document(now=LATER, **request_))
    assert verify_store(str(path))["ok"]
    inactive = [item for item in _head(path)["items"].values() if item["status"] != "active"]
    assert len(inactive) >= RECENT, "the refill brought older not-active items into the head"


def test_replays_and_conflicts_are_found_through_the_batch_index(churned, monkeypatch):
    """A retry of an old batch is answered from the snapshot's batch index (and a refresh appends to it)."""
    path, model, commit, _annotate = churned
    old = {"batch_id": "c5", "declarations": [{"id": "i5", "title": "item 5", "weight": "normal", "kind": "fyi"},
                                              {"id": "i4", "relation": "withdraw", "reason": "superseded"}]}
    for round_ in range(2):
        reader, _recorder = _fresh_reader(path)
        mine = reader.commit(old, actor="agent", now=LATER)
        assert mine.document == model.commit(old, actor="agent", now=LATER).document
        assert mine.document["replayed"] is True
        other = dict(old, declarations=old["declarations"][:1])
        assert reader.commit(other, actor="agent", now=LATER).document["errors"][0]["code"] == "batch_conflict"
        for n in range(70):  # enough new batches for a refresh that appends to the batch index
            commit({"batch_id": f"r{round_}-{n}", "declarations": []}, LATER)
    report = verify_store(str(path))
    assert report["ok"] and report["snapshot"]["consistent"], report


def test_another_process_refreshing_does_not_confuse_a_long_lived_writer(churned, monkeypatch):
    path, model, _commit, _annotate = churned
    monkeypatch.setenv("FOLD_SNAPSHOT_EVERY", "1")
    first, second = Store(FileRecorder(path)), Store(FileRecorder(path))
    for n in range(6):
        store = first if n % 2 else second
        batch = {"batch_id": f"p{n}", "declarations": [
            {"id": f"p{n}", "title": "p", "weight": "trace", "kind": "fyi"}]}
        assert store.commit(batch, actor="agent", now=LATER).document == \
            model.commit(batch, actor="agent", now=LATER).document
    os.remove(path / "snapshot.json")  # and a reader writes a new generation
    _same(Store(FileRecorder(path)).state_document(now=LATER), model.state_document(now=LATER))
    batch = {"batch_id": "last", "declarations": []}
    assert first.commit(batch, actor="agent", now=LATER).document == \
        model.commit(batch, actor="agent", now=LATER).document
    assert verify_store(str(path))["ok"]
    generations = {name.split(".")[1] for name in os.listdir(path) if name.count(".") == 2
                   and name.startswith("snapshot.") and not name.endswith(".json")}
    assert generations == {_head(path)["parts"]["generation"]}, "a writer removes parts no head names"
    _same(first.state_document(now=LATER, not_active=None), model.state_document(now=LATER, not_active=None))


def test_a_batch_restoring_more_than_the_margin_is_answered_from_the_archive(churned):
    """Between two refreshes one batch takes back more recent not-active items than the head's
    margin: the head then holds fewer than ``RECENT`` of them and a read must look further."""
    path, model, commit, _annotate = churned
    writer = Store(FileRecorder(path))
    restored = [f"i{LAST - 1 - n}" for n in range(HEAD_RECENT - RECENT + 4)]
    for batch in ({"batch_id": "empty-root", "declarations": [
                       {"id": f"i{LAST}", "relation": "withdraw", "reason": "r"}]},
                  {"batch_id": "many-back", "declarations": [
                      {"id": item, "relation": f"supersedes:{item}", "weight": "trace", "kind": "fyi",
                       "reason": "back"} for item in restored]}):
        mine, theirs = writer.commit(batch, actor="agent", now=LATER), model.commit(batch, actor="agent", now=LATER)
        assert mine.document == theirs.document and mine.exit_code == 0, mine.document
    assert _head(path)["last_event_seq"] < model.state().event_seq, "no refresh in between"
    reader, _recorder = _fresh_reader(path)
    for store in (writer, reader):
        for request_ in ({}, {"not_active": RECENT + 1}, {"not_active": ABOVE_THE_HEAD}, {"not_active": None}):
            _same(store.state_document(now=LATER, **request_), model.state_document(now=LATER, **request_))


def test_a_long_lived_writer_finds_batches_and_items_its_own_refreshes_archived(churned, monkeypatch):
    """A writer that has collected the index keys (after a few look-ups) learns the keys its refreshes
    append: a retry of a batch that is only in the snapshot's batch index is answered as a replay, and
    an item that only the archive holds is found (that one also through the entries it archived)."""
    path, model, _commit, _annotate = churned
    monkeypatch.setenv("FOLD_SNAPSHOT_EVERY", "1")
    writer = Store(FileRecorder(path))
    for n in range(8):  # new ids and batch_ids: misses, enough of them to collect the keys
        batch = {"batch_id": f"k{n}", "declarations": [{"id": f"k{n}", "title": "key", "weight": "trace",
                                                         "kind": "fyi"}]}
        assert writer.commit(batch, actor="agent", now=LATER).document == \
            model.commit(batch, actor="agent", now=LATER).document
    withdraw = {"batch_id": "k-gone", "declarations": [{"id": "k0", "relation": "withdraw", "reason": "r"}]}
    assert writer.commit(withdraw, actor="agent", now=LATER).document == \
        model.commit(withdraw, actor="agent", now=LATER).document
    for n in range(300):  # push k0 out of the head into the archive, refreshing after every commit
        batch = {"batch_id": f"z{n}", "declarations": [
            {"id": f"z{n}", "title": "z", "weight": "trace", "kind": "fyi"},
            *([{"id": f"z{n - 1}", "relation": "withdraw", "reason": "r"}] if n else [])]}
        assert writer.commit(batch, actor="agent", now=LATER).exit_code == 0
        model.commit(batch, actor="agent", now=LATER)
    assert "k0" not in _head(path)["items"], "k0 left the head"
    early = {"batch_id": "k1", "declarations": [{"id": "k1", "title": "key", "weight": "trace", "kind": "fyi"}]}
    late = {"batch_id": "z150", "declarations": [{"id": "z150", "title": "z", "weight": "trace", "kind": "fyi"},
                                                 {"id": "z149", "relation": "withdraw", "reason": "r"}]}
    for retry in (early, late):  # from before the keys were collected, and appended after
        mine = writer.commit(retry, actor="agent", now=LATER).document
        assert mine == model.commit(retry, actor="agent", now=LATER).document and mine["replayed"] is True
    again = {"batch_id": "k0-again", "declarations": [{"id": "k0", "title": "again", "weight": "trace",
                                                        "kind": "fyi"}]}
    mine = writer.commit(again, actor="agent", now=LATER).document
    assert mine == model.commit(again, actor="agent", now=LATER).document
    assert mine["errors"][0]["code"] == "item_exists"
