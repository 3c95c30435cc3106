"""The file store against the in-memory model: a Hypothesis state machine (contract §6).

One ``Store`` over a ``FileRecorder`` on a temporary directory (in process)
and one ``Store`` over a ``MemoryRecorder`` (the model) receive the same
operations: random valid and invalid batches, annotations, replays and
conflicting reuses of accepted batch ids. Every answer (exit code and document)
must be equal. Other rules disturb only the file store, the way crashes and
other processes do:

* **crash and reopen** — the recorder is dropped without ``close`` and a new
  one is opened on the same directory; before reopening, optionally a torn
  fragment (no newline) or a NUL-filled line is left at the end of the log, the
  snapshot is deleted or garbled, an older (still valid) snapshot is put back,
  or a temporary snapshot of a process killed mid-snapshot is left behind;
* **another process appended** — a record the model accepted is written to the
  log directly, as a writer that died after its write would leave it;
* **injected I/O errors** — ENOSPC on append (nothing written: the model
  learns nothing), EIO on fsync (the record is on disk: outcome unknown, the
  model learns it), ENOSPC on the snapshot (only logged);
* **clean close**, and a random snapshot bound (``FOLD_SNAPSHOT_EVERY``).

A ``bulk`` rule withdraws a parent with 30 children at a time, so that the
store passes the snapshot head's 200 most recent not-active items and keeps
the rest in the snapshot's archive; a ``restore`` declaration can bring back
an archived item, and ``restore_many`` brings back whole bulk families in one
batch — more than the head's margin between two refreshes, so that the head
alone no longer holds the 200 most recent.

Invariant after every step: the store's state documents (at a fixed ``now``;
the default one also through a fresh recorder and through a long-lived
recorder that only reads, both of which may answer from the snapshot head
alone; the long-lived reader's with more not-active entries than the head
keeps; and the one with every not-active entry), its full history and its
state equal the model's.
"""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
import tempfile

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from fold_core import kernel
from fold_core.errors import StoreUnavailable
from fold_core.store.base import Store
from fold_core.store.file import FileRecorder
from fold_core.store.log import encode_record
from fold_core.store.memory import MemoryRecorder
from fold_core.store.meta import create_store
from fold_core.store.snapshot import HEAD_RECENT, RECENT
from random_batches import random_declaration

READ_AT = "2027-01-01T00:00:00+08:00"
TEXTS = ("看过了", "-dash", "two\nlines", "ok")
ENV_KEYS = ("FOLD_SNAPSHOT_EVERY", "FOLD_INJECT", "FOLD_FAULT")


class FileStoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.saved_env = {key: os.environ.pop(key, None) for key in ENV_KEYS}
        self.directory = tempfile.mkdtemp(prefix="fold-stateful-")
        self.path = os.path.join(self.directory, "store")
        self.log = os.path.join(self.path, "events.jsonl")
        self.snapshot = os.path.join(self.path, "snapshot.json")
        self.budget = 64
        self.model = MemoryRecorder(self.budget)
        self.oracle = Store(self.model)
        create_store(self.path, self.budget)  # `foldctl init`: reads of a missing store are exit 3
        self.store = Store(FileRecorder(self.path))
        self.reader = Store(FileRecorder(self.path))  # long-lived, only ever reads: keeps a partial state
        self.minutes = 0
        self.bulks = 0
        self.fresh = 0
        self.accepted: dict[str, tuple[dict, str]] = {}  # batch_id -> (batch, actor)
        self.torn = False  # a torn tail waits for the next writer
        self.old_snapshot: bytes | None = None

    def teardown(self) -> None:
        for key, value in self.saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(self.directory, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------

    def now(self, rng: random.Random) -> str:
        self.minutes += rng.randint(1, 300)
        hours, minutes = divmod(self.minutes, 60)
        days, hours = divmod(hours, 24)
        return f"2026-10-{9 + days % 19:02d}T{hours:02d}:{minutes:02d}:00+08:00"

    def new_id(self) -> str:
        self.fresh += 1
        return f"i{self.fresh}"

    def declaration(self, rng: random.Random, used: set) -> dict | None:
        items = self.model.state.items
        decl = random_declaration(rng, items, used, self.new_id, lambda: self.now(rng))
        if decl is not None and decl["id"].startswith("bulk") and items.get(decl["id"], {}).get("status") == "withdrawn":
            event("restore of a bulk item")
        return decl

    def random_batch(self, rng: random.Random) -> dict:
        used: set = set()
        declarations = [d for d in (self.declaration(rng, used) for _ in range(rng.choice((0, 1, 1, 2, 3))))
                        if d is not None]
        batch = {"batch_id": f"b{rng.randint(0, 10_000)}", "declarations": declarations}
        annotations = sorted(self.model.state.annotations)
        if annotations and rng.random() < 0.4:
            batch["acknowledges"] = rng.sample(annotations, rng.randint(1, len(annotations)))
        if rng.random() < 0.1:
            batch["base_revision"] = max(0, self.model.state.revision - rng.randint(0, 1))
        return batch

    def commit_both(self, batch: object, actor: str, now: str) -> None:
        got = self.store.commit(copy.deepcopy(batch), actor=actor, now=now)
        expected = self.oracle.commit(copy.deepcopy(batch), actor=actor, now=now)
        assert (got.exit_code, got.document) == (expected.exit_code, expected.document)
        self.torn = False  # every write session repairs a torn tail first
        self.no_temporary_snapshots()
        if got.exit_code == 0 and not got.document["replayed"]:
            self.accepted[got.document["batch_id"]] = (batch, actor)

    def no_temporary_snapshots(self) -> None:
        """A writer removes what a process killed mid-snapshot left behind."""
        assert [name for name in os.listdir(self.path) if name.startswith(".snapshot")] == []

    # -- operations on both --------------------------------------------------------------

    @rule(rng=st.randoms(use_true_random=False), actor=st.sampled_from(("agent", "host")))
    def commit(self, rng, actor):
        self.commit_both(self.random_batch(rng), actor, self.now(rng))

    @rule(rng=st.randoms(use_true_random=False))
    def annotate(self, rng):
        item = rng.choice(sorted(self.model.state.items) + ["ghost"])
        text, now = rng.choice(TEXTS), self.now(rng)
        got = self.store.annotate(item=item, text=text, author="user", now=now)
        expected = self.oracle.annotate(item=item, text=text, author="user", now=now)
        assert (got.exit_code, got.document) == (expected.exit_code, expected.document)
        self.torn = False
        self.no_temporary_snapshots()

    @precondition(lambda self: self.accepted)
    @rule(rng=st.randoms(use_true_random=False), conflicting=st.booleans())
    def reuse_batch_id(self, rng, conflicting):
        batch_id = rng.choice(sorted(self.accepted))
        batch, actor = self.accepted[batch_id]
        if conflicting:
            batch, actor = {"batch_id": batch_id, "declarations": []}, "someone-else"
        self.commit_both(batch, actor, self.now(rng))

    @rule(cycles=st.integers(1, 6), rng=st.randoms(use_true_random=False))
    def bulk(self, cycles, rng):
        """Many not-active items at once (a parent with 30 children, then its withdraw): past the
        snapshot head's 200 most recent, the rest goes to the archive."""
        for _ in range(cycles):
            self.bulks += 1
            parent = f"bulk{self.bulks}"
            children = [{"id": f"{parent}-c{k}", "title": f"子项 {k}", "weight": "trace", "kind": "fyi"}
                        for k in range(30)]
            self.commit_both({"batch_id": f"{parent}-new", "declarations": [
                {"id": parent, "title": "批量", "summary": "很多子项", "weight": "trace", "kind": "fyi",
                 "children": children}]}, "agent", self.now(rng))
            self.commit_both({"batch_id": f"{parent}-wd", "declarations": [
                {"id": parent, "relation": "withdraw", "reason": "清理"}]}, "agent", self.now(rng))

    @precondition(lambda self: self.bulks >= 2)
    @rule(families=st.integers(2, 3))
    def restore_many(self, families):
        """One batch takes back the latest withdrawn bulk families (31 items each): more than the
        snapshot head's margin above its 200 most recent not-active items, between two refreshes."""
        items = self.model.state.items
        declarations = []
        for number in range(self.bulks, 0, -1):
            parent = f"bulk{number}"
            if items[parent]["status"] != "withdrawn" or len(declarations) >= 31 * families:
                continue
            for item_id in [parent] + [f"{parent}-c{k}" for k in range(30)]:
                if items[item_id]["status"] == "withdrawn":
                    declarations.append({"id": item_id, "relation": f"supersedes:{item_id}", "weight": "trace",
                                         "kind": "fyi", "reason": "又回来了"})
        if declarations:
            event("many restores in one batch")
            self.commit_both({"batch_id": f"back-{self.bulks}-{len(declarations)}", "declarations": declarations},
                             "agent", self.now(random.Random(len(declarations))))

    @rule(rng=st.randoms(use_true_random=False), depth=st.sampled_from((None, 0, 1)),
          not_active=st.sampled_from((0, 3, RECENT, RECENT + 1, HEAD_RECENT + 1, HEAD_RECENT + 24, None)),
          via=st.sampled_from(("store", "reader", "fresh")))
    def state_view(self, rng, depth, not_active, via):
        """Item views, depths and not-active bounds (also beyond what the snapshot head keeps);
        the readers may hold only the snapshot head."""
        target = {"store": self.store, "reader": self.reader, "fresh": Store(FileRecorder(self.path))}[via]
        item = rng.choice(sorted(self.model.state.items) + ["ghost", None])
        got = target.state_document(now=READ_AT, item=item, depth=depth, not_active=not_active)
        expected = self.oracle.state_document(now=READ_AT, item=item, depth=depth, not_active=not_active)
        assert (got.exit_code, got.document) == (expected.exit_code, expected.document)

    @rule(since=st.integers(0, 30), limit=st.one_of(st.none(), st.integers(0, 5)), by_item=st.booleans(),
          rng=st.randoms(use_true_random=False))
    def history(self, since, limit, by_item, rng):
        item = rng.choice(sorted(self.model.state.items) + ["ghost"]) if by_item else None
        got = self.store.history(since=since, limit=limit, item=item)
        assert got.document == self.oracle.history(since=since, limit=limit, item=item).document
        batch_id = rng.choice(sorted(self.accepted) + ["never"])
        assert self.store.history(batch=batch_id).document == self.oracle.history(batch=batch_id).document

    # -- what happens to the files only -------------------------------------------------

    @rule(bound=st.sampled_from((None, "1", "2", "64")))
    def snapshot_bound(self, bound):
        if bound is None:
            os.environ.pop("FOLD_SNAPSHOT_EVERY", None)
        else:
            os.environ["FOLD_SNAPSHOT_EVERY"] = bound

    @rule(damage=st.sampled_from(("none", "torn", "nul", "no_snapshot", "bad_snapshot", "old_snapshot", "temp")),
          size=st.integers(1, 200))
    def crash_and_reopen(self, damage, size):
        self.store = None  # dropped without close(): nothing pending survives but the files
        exists = os.path.exists(self.log)
        if damage in ("torn", "nul") and exists and not self.torn:
            with open(self.log, "ab") as log:
                if damage == "torn":
                    log.write((b'{"v":1,"event_seq":99,"type":"commit","at":"' + b"x" * size)[:size])
                else:
                    log.write(b"\0" * size + b"\n")
            self.torn = True
        elif damage == "no_snapshot":
            if os.path.exists(self.snapshot):
                os.remove(self.snapshot)
        elif damage == "bad_snapshot" and os.path.exists(self.snapshot):
            with open(self.snapshot, "r+b") as snapshot:
                snapshot.truncate(min(size, os.path.getsize(self.snapshot) - 1))
        elif damage == "old_snapshot" and self.old_snapshot is not None:
            with open(self.snapshot, "wb") as snapshot:
                snapshot.write(self.old_snapshot)
        elif damage == "temp" and exists:  # a snapshot is only ever written for records
            with open(os.path.join(self.path, ".snapshot.json.tmp-999999"), "wb") as temp:
                temp.write(b'{"format": "fold-snap')
        self.store = Store(FileRecorder(self.path))

    @precondition(lambda self: not self.torn)
    @rule()
    def keep_an_old_snapshot(self):
        """Remember a valid snapshot; putting it back later must only cost a longer tail."""
        if os.path.exists(self.snapshot):
            with open(self.snapshot, "rb") as snapshot:
                self.old_snapshot = snapshot.read()

    @rule(rng=st.randoms(use_true_random=False))
    def another_process_appended(self, rng):
        """A record written by a writer that died before its fsync (or just another process)."""
        if self.torn:
            return
        batch = self.random_batch(rng)
        answer = self.oracle.commit(copy.deepcopy(batch), actor="other", now=self.now(rng))
        if answer.exit_code != 0 or answer.document["replayed"]:
            return
        with open(self.log, "ab") as log:
            log.write(encode_record(self.model.log[-1]))
        self.accepted[answer.document["batch_id"]] = (batch, "other")

    @rule(rng=st.randoms(use_true_random=False), injection=st.sampled_from(("enospc_append", "eio_fsync",
                                                                              "enospc_snapshot")))
    def commit_with_injected_error(self, rng, injection):
        batch, actor, now = self.random_batch(rng), "agent", self.now(rng)
        expected = kernel.apply_batch(self.model.state, copy.deepcopy(batch), actor=actor, now=now)
        if isinstance(expected, kernel.Rejected) or batch["batch_id"] in self.accepted:
            return
        os.environ["FOLD_INJECT"] = injection
        saved = os.environ.get("FOLD_SNAPSHOT_EVERY")
        if injection == "enospc_snapshot":
            os.environ["FOLD_SNAPSHOT_EVERY"] = "1"
        try:
            try:
                got = self.store.commit(copy.deepcopy(batch), actor=actor, now=now)
            except StoreUnavailable:
                got = None
        finally:
            del os.environ["FOLD_INJECT"]
            if saved is None:
                os.environ.pop("FOLD_SNAPSHOT_EVERY", None)
            else:
                os.environ["FOLD_SNAPSHOT_EVERY"] = saved
        self.torn = False
        if injection == "enospc_append":
            assert got is None  # nothing written, outcome reported unknown
            return
        receipt = self.oracle.commit(copy.deepcopy(batch), actor=actor, now=now).document
        self.accepted[batch["batch_id"]] = (batch, actor)
        if injection == "eio_fsync":
            assert got is None  # the record is on disk, but the caller was told "unknown"
            retry = self.store.commit(copy.deepcopy(batch), actor=actor, now=self.now(rng))
            assert retry.document == {**receipt, "replayed": True}
        else:
            assert got is not None and got.document == receipt

    @rule()
    def close(self):
        self.store.recorder.close()

    # -- the invariant ---------------------------------------------------------------------

    @invariant()
    def same_documents_as_the_model(self):
        # Default reads (the 200 most recent not-active entries) may be answered from the
        # snapshot head alone: by a fresh recorder, and by a long-lived one that only reads.
        expected = self.oracle.state_document(now=READ_AT).document
        assert Store(FileRecorder(self.path)).state_document(now=READ_AT).document == expected
        assert self.reader.state_document(now=READ_AT).document == expected
        beyond = self.oracle.state_document(now=READ_AT, not_active=HEAD_RECENT + 24).document
        assert self.reader.state_document(now=READ_AT, not_active=HEAD_RECENT + 24).document == beyond
        got = self.store.state_document(now=READ_AT, not_active=None)
        assert got.document == self.oracle.state_document(now=READ_AT, not_active=None).document
        assert self.store.state() == self.model.state
        assert self.store.history().document == self.oracle.history().document
        if self.model.state.inactive_total > HEAD_RECENT:
            event("more not-active items than the snapshot head keeps")
            if os.path.exists(self.snapshot):
                with open(self.snapshot, "rb") as snapshot:
                    head = snapshot.readline()
                if head.endswith(b",\n") and json.loads(head[:-2] + b"}").get("archive_count"):
                    event("snapshot with an archive")


FileStoreMachine.TestCase.settings = settings(
    max_examples=80, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestFileStoreAgainstModel = FileStoreMachine.TestCase
