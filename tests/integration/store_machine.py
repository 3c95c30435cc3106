"""A store against the in-memory model: one Hypothesis state machine for every recorder (contract §6, §7).

The protocol half of ``test_store_stateful`` (which also damages the file
store's files), written against ``tests/support/stores.Backend`` so that the
memory, file and PostgreSQL recorders all run it. The store under test and a
``MemoryRecorder`` (the model) receive the same operations — random valid and
invalid batches, annotations, replays and conflicting reuses of accepted
batch ids, many not-active items at once, state documents of every shape,
history reads — and must give the same answers (exit code and document).
Other rules act on the store only, as other processes and failures do:

* **reopen** — the recorder is dropped without ``close`` and a new one is
  opened on the same store (a new process);
* **another writer** — a second recorder on the same store commits; the
  long-lived ones must pick the record up;
* **injected failures** (durable recorders) — a write that fails before it
  is committed (nothing written: the model learns nothing) and one whose
  outcome is unknown after it was committed (the retry returns the receipt).

Invariant after every step: the state documents (default, and with every
not-active entry) through the store, a fresh recorder and a long-lived reader,
the full history and the state equal the model's.
"""

from __future__ import annotations

import copy
import os
import random

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from fold_core import kernel
from fold_core.errors import StoreUnavailable
from fold_core.store.base import Store
from fold_core.store.memory import MemoryRecorder
from random_batches import random_declaration

__all__ = ["run_machine"]

READ_AT = "2027-01-01T00:00:00+08:00"
TEXTS = ("看过了", "-dash", "two\nlines", "ok")


class ProtocolMachine(RuleBasedStateMachine):
    backend = None  # set by run_machine
    tmp_path = None

    def __init__(self) -> None:
        super().__init__()
        self.saved_env = {key: os.environ.pop(key, None) for key in ("FOLD_INJECT", "FOLD_FAULT")}
        self.location = self.backend.new_location(self.tmp_path)
        self.backend.create(self.location, 64)
        self.model = MemoryRecorder(64)
        self.oracle = Store(self.model)
        self.store = self.backend.store(self.location)
        self.reader = self.backend.store(self.location)  # long-lived, only reads
        self.minutes = self.fresh = self.bulks = 0
        self.accepted: dict[str, tuple[dict, str]] = {}

    def teardown(self) -> None:
        for key, value in self.saved_env.items():
            if value is not None:
                os.environ[key] = value
        for store in (self.store, self.reader):
            close = getattr(store.recorder, "close", None)
            if close is not None:
                close()

    # -- helpers ---------------------------------------------------------------------

    def now(self, rng: random.Random) -> str:
        self.minutes += rng.randint(1, 300)
        hours, minutes = divmod(self.minutes, 60)
        days, hours = divmod(hours, 24)
        return f"2026-10-{9 + days % 19:02d}T{hours:02d}:{minutes:02d}:00+08:00"

    def new_id(self) -> str:
        self.fresh += 1
        return f"i{self.fresh}"

    def random_batch(self, rng: random.Random) -> dict:
        used: set = set()
        items = self.model.state.items
        declarations = [d for d in (random_declaration(rng, items, used, self.new_id, lambda: self.now(rng))
                                    for _ in range(rng.choice((0, 1, 1, 2, 3)))) if d is not None]
        batch = {"batch_id": f"b{rng.randint(0, 10_000)}", "declarations": declarations}
        annotations = sorted(self.model.state.annotations)
        if annotations and rng.random() < 0.4:
            batch["acknowledges"] = rng.sample(annotations, rng.randint(1, len(annotations)))
        if rng.random() < 0.1:
            batch["base_revision"] = max(0, self.model.state.revision - rng.randint(0, 1))
        return batch

    def commit_both(self, batch: object, actor: str, now: str, store: Store | None = None) -> None:
        got = (store or self.store).commit(copy.deepcopy(batch), actor=actor, now=now)
        expected = self.oracle.commit(copy.deepcopy(batch), actor=actor, now=now)
        assert (got.exit_code, got.document) == (expected.exit_code, expected.document)
        if got.exit_code == 0 and not got.document["replayed"]:
            self.accepted[got.document["batch_id"]] = (batch, actor)

    # -- operations on both ----------------------------------------------------------------

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

    @precondition(lambda self: self.accepted)
    @rule(rng=st.randoms(use_true_random=False), conflicting=st.booleans())
    def reuse_batch_id(self, rng, conflicting):
        batch_id = rng.choice(sorted(self.accepted))
        batch, actor = self.accepted[batch_id]
        if conflicting:
            batch, actor = {"batch_id": batch_id, "declarations": []}, "someone-else"
        self.commit_both(batch, actor, self.now(rng))

    @rule(cycles=st.integers(1, 4), rng=st.randoms(use_true_random=False))
    def bulk(self, cycles, rng):
        """A parent with 30 children, then its withdraw: past the 200 most recent not-active items."""
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

    @rule(rng=st.randoms(use_true_random=False), depth=st.sampled_from((None, 0, 1)),
          not_active=st.sampled_from((0, 3, 200, 201, None)), via=st.sampled_from(("store", "reader", "fresh")))
    def state_view(self, rng, depth, not_active, via):
        target = {"store": self.store, "reader": self.reader,
                  "fresh": None}[via] or self.backend.store(self.location)
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

    # -- what happens to the store only ------------------------------------------------------

    @rule()
    def reopen(self):
        self.store = self.backend.store(self.location)

    @rule(rng=st.randoms(use_true_random=False))
    def another_writer(self, rng):
        self.commit_both(self.random_batch(rng), "other", self.now(rng), store=self.backend.store(self.location))

    @precondition(lambda self: self.backend.durable)
    @rule(rng=st.randoms(use_true_random=False), injection=st.sampled_from(("enospc_append", "eio_fsync")))
    def commit_with_injected_failure(self, rng, injection):
        batch, actor, now = self.random_batch(rng), "agent", self.now(rng)
        expected = kernel.apply_batch(self.model.state, copy.deepcopy(batch), actor=actor, now=now)
        if isinstance(expected, kernel.Rejected) or batch["batch_id"] in self.accepted:
            return
        os.environ["FOLD_INJECT"] = injection
        try:
            try:
                got = self.store.commit(copy.deepcopy(batch), actor=actor, now=now)
            except StoreUnavailable:
                got = None
        finally:
            del os.environ["FOLD_INJECT"]
        assert got is None  # either way the caller hears "outcome unknown"
        if injection == "enospc_append":
            return  # nothing was written
        receipt = self.oracle.commit(copy.deepcopy(batch), actor=actor, now=now).document
        self.accepted[batch["batch_id"]] = (batch, actor)
        retry = self.store.commit(copy.deepcopy(batch), actor=actor, now=self.now(rng))
        assert retry.document == {**receipt, "replayed": True}

    # -- the invariant ------------------------------------------------------------------------

    @invariant()
    def same_answers_as_the_model(self):
        expected = self.oracle.state_document(now=READ_AT).document
        assert self.backend.store(self.location).state_document(now=READ_AT).document == expected
        assert self.reader.state_document(now=READ_AT).document == expected
        got = self.store.state_document(now=READ_AT, not_active=None)
        assert got.document == self.oracle.state_document(now=READ_AT, not_active=None).document
        assert self.store.state() == self.model.state
        assert self.store.history().document == self.oracle.history().document


def run_machine(backend, tmp_path, *, examples: int = 40, steps: int = 25) -> None:
    """Run the machine against ``backend`` (a ``tests/support/stores.Backend``)."""
    machine = type(f"ProtocolMachine_{backend.name}", (ProtocolMachine,),
                   {"backend": backend, "tmp_path": tmp_path})
    run_state_machine_as_test(machine, settings=settings(
        max_examples=examples, stateful_step_count=steps, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
    ))
