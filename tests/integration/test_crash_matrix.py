"""The crash matrix (contract §6.2, §6.3): every fault point × 20 randomized histories.

Each history is reproducible from its seed (``random.Random(seed)``): a fresh
store with a random budget (or none at all: the first accepted write creates
it); in about a third of the histories a prefix of more than 200 not-active
items written in process, so that the snapshot keeps the older ones in its
archive; a few random operations through real ``foldctl`` subprocesses —
valid and invalid batches, annotations, replays and conflicting reuses of
earlier batch ids, restores of withdrawn (maybe archived) items, now and then
a torn tail or a deleted snapshot, random snapshot bounds — and then one
accepted batch committed with ``FOLD_FAULT=<point>`` (``FOLD_SNAPSHOT_EVERY=1``
for ``mid_snapshot``), which must die with exit 137. The in-memory store is the model: it is fed every
operation in process and every CLI answer must equal its answer.

After the crash:

* ``history --batch`` finds the killed batch exactly when the fault point lies
  after the append (``after_append``, ``after_fsync``, ``mid_snapshot``), with
  the receipt the model gives; every batch whose receipt was printed before
  the crash is found with that receipt;
* ``foldctl state --now T`` (with every not-active entry, and the default one
  that may be answered from the snapshot head) equals the model's, ``foldctl
  verify`` exits 0 (reporting a torn tail only for ``mid_append``), and a clean
  replay of the log's complete lines (``fold_core.state.replay``) equals a fresh
  ``FileRecorder``'s state and the model's state; the log's records equal the
  model's records, so nothing is lost or applied twice (event_seq 1…n, each
  batch_id once);
* retrying the killed batch with its batch_id (at a later ``--now``) returns the
  original receipt with ``replayed: true`` when it had been committed, and
  otherwise commits it exactly once (a second retry is then the replay).

A failure names the fault point and the seed; ``run_history(fault, seed,
directory)`` replays that one history.
"""

from __future__ import annotations

import copy
import json
import os
import random
import traceback
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from fold_core import kernel
from fold_core.state import State, replay
from fold_core.store.base import Store
from fold_core.store.file import FileRecorder
from fold_core.store.memory import MemoryRecorder
from random_batches import random_declaration
from tests.support.forked_cli import run_fold_core

FAULTS = {  # fault point -> whether the killed batch is committed (it was written before the crash)
    "before_append": False,
    "mid_append": False,
    "after_append": True,
    "after_fsync": True,
    "mid_snapshot": True,
}
HISTORIES = 20
WORKERS = max(2, min(4, 2 * (os.cpu_count() or 1)))
EPOCH = datetime(2026, 10, 9, 8, 0, tzinfo=timezone(timedelta(hours=8)))
READ_AT = "2026-12-01T09:30:00+08:00"  # the --now of every state read

TEXTS = ("看过了", "-starts with a dash", "two\nlines", "流水已补 ✓", "ok")


# -- running foldctl ---------------------------------------------------------------------------


def _environment(extra: dict | None) -> dict:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FOLD_")}
    environment.update(extra or {})
    return environment


def foldctl(store: Path, *args: str, stdin: str | None = None, env: dict | None = None):
    """``python -m fold_core --store STORE ARGS``: (exit code, parsed stdout or None, stderr)."""
    code, stdout, stderr = run_fold_core(["--store", str(store), *args], stdin=(stdin or "").encode("utf-8"),
                                         env=_environment(env), timeout=120)
    err = stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    out = stdout.decode("utf-8")
    return code, (json.loads(out) if out.strip() else None), err


# -- random operations -------------------------------------------------------------------------


class History:
    """One randomized history against a file store and the in-memory model."""

    COMMITTED = FAULTS  # fault point -> whether the killed batch survives the crash
    TORN_AFTER = "mid_append"  # the fault point that leaves a torn tail for `verify` to report

    def __init__(self, fault: str, seed: int, directory: Path) -> None:
        self.fault, self.seed = fault, seed
        self.rng = random.Random(seed)
        self.store = directory / "store"
        # A quarter of the stores are not `init`-ed: the first accepted write creates them (budget 64).
        self.init = self.rng.random() < 0.75
        self.budget = self.rng.choice((16, 32, 64)) if self.init else 64
        self.model = MemoryRecorder(self.budget)
        self.oracle = Store(self.model)
        self.minutes = 0
        self.fresh = 0
        self.printed: dict[str, dict] = {}  # batch_id -> receipt foldctl printed (accepted)
        self.sent: dict[str, tuple[dict, str]] = {}  # batch_id -> (batch, actor) accepted
        self.receipts: dict[str, dict] = {}  # batch_id -> receipt, also of batches written in process

    # -- small helpers

    def foldctl(self, *args: str, stdin: str | None = None, env: dict | None = None):
        """One real ``foldctl`` process on this history's store."""
        return foldctl(self.store, *args, stdin=stdin, env=env)

    def now(self) -> str:
        self.minutes += self.rng.randint(1, 600)
        return (EPOCH + timedelta(minutes=self.minutes)).isoformat(timespec="seconds")

    def new_id(self) -> str:
        self.fresh += 1
        return f"i{self.fresh}"

    @property
    def state(self) -> State:
        return self.model.state

    def snapshot_env(self) -> dict:
        every = self.rng.choice((None, None, "1", "2", "3"))
        return {} if every is None else {"FOLD_SNAPSHOT_EVERY": every}

    # -- batches

    def declaration(self, used: set[str]) -> dict | None:
        return random_declaration(self.rng, self.state.items, used, self.new_id, self.now)

    def random_batch(self, batch_id: str) -> dict:
        rng = self.rng
        used: set[str] = set()
        declarations = []
        for _ in range(rng.choice((0, 1, 1, 2, 2, 3))):
            decl = self.declaration(used)
            if decl is not None:
                declarations.append(decl)
        batch = {"batch_id": batch_id, "declarations": declarations}
        annotations = sorted(self.state.annotations)
        if annotations and rng.random() < 0.4:
            batch["acknowledges"] = rng.sample(annotations, rng.randint(1, len(annotations)))
        elif rng.random() < 0.05:
            batch["acknowledges"] = ["ann-999"]
        if rng.random() < 0.1:
            batch["base_revision"] = max(0, self.state.revision - rng.randint(0, 1))
        return batch

    def accepted_batch(self, batch_id: str, actor: str, now: str) -> dict:
        """A random batch the model accepts (one that reaches the fault point)."""
        for _ in range(30):
            batch = self.random_batch(batch_id)
            outcome = kernel.apply_batch(self.state, copy.deepcopy(batch), actor=actor, now=now)
            if not isinstance(outcome, kernel.Rejected):
                return batch
        return {"batch_id": batch_id, "declarations": []}  # a `checked` batch is always accepted

    # -- operations before the crash

    def commit(self, batch: object, *, actor: str, now: str, flag_id: str | None = None,
               env: dict | None = None) -> tuple[int, dict]:
        args = ["commit", "--actor", actor, "--now", now]
        if flag_id is not None:
            args += ["--batch-id", flag_id]
        code, doc, err = self.foldctl(*args, stdin=json.dumps(batch, ensure_ascii=False), env=env)
        expected = self.oracle.commit(copy.deepcopy(batch), actor=actor, now=now, batch_id=flag_id)
        assert (code, doc) == (expected.exit_code, expected.document), err
        if code == 0 and not doc["replayed"]:
            self.printed[doc["batch_id"]] = self.receipts[doc["batch_id"]] = doc
            self.sent[doc["batch_id"]] = (batch, actor)
        return code, doc

    def operation(self) -> None:
        rng = self.rng
        what = rng.choices(("commit", "annotate", "replay", "conflict", "non-object", "tear", "unsnap"),
                           weights=(10, 4, 1, 1, 1, 1, 1))[0]
        env = self.snapshot_env()
        if what in ("replay", "conflict") and not self.sent:
            what = "commit"
        if what == "commit":
            batch_id = f"b{len(self.printed) + 1}-{rng.randint(0, 99)}"
            batch = self.random_batch(batch_id)
            flag = None
            if rng.random() < 0.3:
                flag = batch_id
                if rng.random() < 0.5:
                    del batch["batch_id"]
            self.commit(batch, actor=rng.choice(("agent", "host")), now=self.now(), flag_id=flag, env=env)
        elif what == "annotate":
            items = sorted(self.state.items) + ["ghost"]
            item, text, now = rng.choice(items), rng.choice(TEXTS), self.now()
            author = rng.choice(("user", "me"))
            code, doc, err = self.foldctl("annotate", "--item", item, f"--text={text}", "--author", author,
                                     "--now", now, env=env)
            expected = self.oracle.annotate(item=item, text=text, author=author, now=now)
            assert (code, doc) == (expected.exit_code, expected.document), err
        elif what == "replay":
            batch_id = rng.choice(sorted(self.sent))
            batch, actor = self.sent[batch_id]
            code, doc = self.commit(batch, actor=actor, now=self.now(), flag_id=batch_id, env=env)
            assert code == 0 and doc == {**self.receipts[batch_id], "replayed": True}
        elif what == "conflict":
            batch_id = rng.choice(sorted(self.sent))
            code, doc = self.commit({"batch_id": batch_id, "declarations": [], "acknowledges": ["ann-1"]},
                                    actor="someone-else", now=self.now(), env=env)
            assert code == 1 and doc["errors"][0]["code"] == "batch_conflict"
        elif what == "non-object":
            self.commit([1, 2], actor="agent", now=self.now(), flag_id=f"x{rng.randint(0, 9)}", env=env)
        elif what == "tear":  # a torn fragment from some earlier crash: ignored, repaired by the next writer
            if (self.store / "events.jsonl").exists():
                with open(self.store / "events.jsonl", "ab") as log:
                    log.write(b'{"v": 1, "event_seq": 99, "type": "comm'[: rng.randint(1, 38)])
        else:
            (self.store / "snapshot.json").unlink(missing_ok=True)

    def bulk_prefix(self) -> None:
        """More than 200 not-active items, written in process (the same store code, faster).

        Parents with children are created and withdrawn until the snapshot head's 200 most
        recent not-active items are passed; a clean close writes the snapshot, whose archive
        then holds the older ones. The CLI operations that follow read the head alone or
        restore archived items.
        """
        recorder = FileRecorder(self.store, budget=self.budget)
        store, children = Store(recorder), min(30, self.budget - 2)
        for cycle in range(-(-230 // (children + 1))):
            parent = f"bulk{cycle}"
            batches = ({"batch_id": f"{parent}-new", "declarations": [
                           {"id": parent, "title": "批量", "summary": "很多子项", "weight": "trace", "kind": "fyi",
                            "children": [{"id": f"{parent}-c{k}", "title": f"子项 {k}", "weight": "trace",
                                          "kind": "fyi"} for k in range(children)]}]},
                       {"batch_id": f"{parent}-wd", "declarations": [
                           {"id": parent, "relation": "withdraw", "reason": "清理"}]})
            for batch in batches:
                now = self.now()
                got = store.commit(copy.deepcopy(batch), actor="agent", now=now)
                expected = self.oracle.commit(copy.deepcopy(batch), actor="agent", now=now)
                assert got.exit_code == 0 and got.document == expected.document
                self.sent[batch["batch_id"]] = (batch, "agent")  # (checked through the full history)
                self.receipts[batch["batch_id"]] = got.document
        recorder.close()

    # -- the crash and the checks

    def run(self) -> None:
        rng = self.rng
        if self.init:
            code, doc, err = self.foldctl("init", "--budget", str(self.budget))
            assert code == 0 and doc["created"] is True, err
        if rng.random() < 0.3:
            self.bulk_prefix()
        for _ in range(rng.randint(2, 5)):
            self.operation()
        before = len(self.model.log)

        killed_id, actor, crash_now = f"killed-{self.seed}", rng.choice(("agent", "host")), self.now()
        killed = self.accepted_batch(killed_id, actor, crash_now)
        env = {"FOLD_FAULT": self.fault}
        if self.fault == "mid_snapshot" or rng.random() < 0.5:
            env["FOLD_SNAPSHOT_EVERY"] = "1"
        code, doc, err = self.foldctl("commit", "--actor", actor, "--now", crash_now,
                                 stdin=json.dumps(killed, ensure_ascii=False), env=env)
        assert code == 137 and doc is None, (code, doc, err)
        committed = self.COMMITTED[self.fault]
        original = None
        if committed:  # the model learns the batch the store holds now
            original = self.oracle.commit(copy.deepcopy(killed), actor=actor, now=crash_now).document
            assert original["event_seq"] == before + 1

        # Was the killed batch accepted? Never "not found" for a committed batch.
        code, found, err = self.foldctl("history", "--batch", killed_id)
        assert code == 0, err
        assert found["found"] is committed
        if committed:
            assert found["record"] == self.model.log[-1] and found["record"]["receipt"] == original

        # The state equals the model's and a clean replay of the log; the default read may
        # answer from the snapshot head alone.
        code, state_doc, err = self.foldctl("state", "--now", READ_AT, "--not-active", "all")
        assert code == 0, err
        assert state_doc == self.oracle.state_document(now=READ_AT, not_active=None).document
        code, state_doc, err = self.foldctl("state", "--now", READ_AT)
        assert code == 0, err
        assert state_doc == self.oracle.state_document(now=READ_AT).document
        code, report, err = self.foldctl("verify")
        assert code == 0, (report, err)
        assert report["records"] == len(self.model.log)
        assert (report["torn_tail"] is not None) is (self.fault == self.TORN_AFTER)
        self.check_log()

        # Every receipt printed before the crash is found, unchanged.
        for batch_id, receipt in self.printed.items():
            code, found, err = self.foldctl("history", "--batch", batch_id)
            assert code == 0 and found["found"] is True, err
            assert found["record"]["receipt"] == receipt

        # Retrying the killed batch: the original receipt, or committed exactly once.
        retry_now = self.now()
        code, receipt, err = self.foldctl("commit", "--actor", actor, "--now", retry_now,
                                     stdin=json.dumps(killed, ensure_ascii=False))
        assert code == 0, (receipt, err)
        if committed:
            assert receipt == {**original, "replayed": True}
        else:
            expected = self.oracle.commit(copy.deepcopy(killed), actor=actor, now=retry_now).document
            assert receipt == expected and receipt["replayed"] is False
            assert receipt["event_seq"] == before + 1 and receipt["at"] == retry_now
            code, again, err = self.foldctl("commit", "--actor", actor, "--batch-id", killed_id,
                                       "--now", self.now(), stdin=json.dumps(killed, ensure_ascii=False))
            assert code == 0 and again == {**receipt, "replayed": True}, err
        assert len(self.model.log) == before + 1

        # Afterwards: a clean store, no temporary snapshot left, the full history as the model's.
        code, report, err = self.foldctl("verify")
        assert code == 0 and report["torn_tail"] is None, (report, err)
        assert [n for n in os.listdir(self.store) if n.startswith(".snapshot")] == []
        code, history, err = self.foldctl("history")
        assert code == 0 and history == self.oracle.history().document, err
        self.check_log()

    def check_log(self) -> None:
        """The log's complete records are the model's: consecutive, each batch once, same state."""
        log = self.store / "events.jsonl"
        data = log.read_bytes() if log.exists() else b""
        records = [json.loads(line) for line in data.splitlines(keepends=True) if line.endswith(b"\n")]
        assert [r["event_seq"] for r in records] == list(range(1, len(records) + 1))
        batch_ids = [r["batch_id"] for r in records if "batch_id" in r]
        assert len(batch_ids) == len(set(batch_ids))
        assert records == self.model.log
        clean = replay(records, budget=self.budget)
        assert Store(FileRecorder(self.store)).state() == clean == self.model.state


def run_history(fault: str, seed: int, directory: Path, kind: type[History] = History) -> None:
    """Run (or replay, for debugging) one history of the matrix in ``directory``."""
    kind(fault, seed, Path(directory)).run()


def run_matrix(fault: str, seeds: list[int], tmp_path: Path, kind: type[History] = History) -> None:
    """Every seed's history for ``fault``, in parallel; one failure report naming the seeds."""
    def one(seed: int) -> str | None:
        directory = tmp_path / f"h{seed}"
        directory.mkdir()
        try:
            run_history(fault, seed, directory, kind)
        except Exception:
            return f"{fault} seed {seed}:\n{traceback.format_exc()}"
        return None

    with ThreadPoolExecutor(WORKERS) as pool:
        failures = [failure for failure in pool.map(one, seeds) if failure is not None]
    assert not failures, (
        f"{len(failures)} of {len(seeds)} histories failed (replay one with "
        f"run_history(fault, seed, dir, {kind.__name__})):\n" + "\n".join(failures[:3])
    )


@pytest.mark.parametrize("fault", FAULTS)
def test_crash_matrix(fault, tmp_path):
    base = 1000 * (list(FAULTS).index(fault) + 1)
    run_matrix(fault, list(range(base, base + HISTORIES)), tmp_path)
