"""The store protocol, one test class run against every recorder: memory, file, PostgreSQL.

Contract §6.2, §6.3, §7. ``ProtocolCases`` holds what every recorder must do
(the in-memory one included): receipts and replays, conflicts, rejections that
write nothing, annotations and history filters, a second recorder on the same
store, and the state machine of ``store_machine`` against the in-memory model.
``DurableCases`` adds what a store that outlives its process must do, through
real ``foldctl`` subprocesses: a process killed at every fault point (no
accepted batch lost, none applied twice, the retry returns the original
receipt, the state equals a clean replay, ``verify`` passes), concurrent
writers and readers, a busy lock (exit 3, never "not found"), failed writes,
reads of a store that does not exist, and records stored byte for byte as the
kernel made them. A new recorder joins by subclassing with its backend.

The file store's own layout (torn tails, snapshots, permissions) is tested in
``test_file_store``, ``test_store_stateful`` and ``test_crash_matrix``; what is
PostgreSQL's own in ``test_postgres_store``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from fold_core.state import replay
from fold_core.store.log import encode_record
from store_machine import run_machine
from tests.support.stores import FileBackend, MemoryBackend, PostgresBackend, foldctl

NOW = "2026-10-09T08:00:00+08:00"
LATER = "2026-10-10T08:00:00+08:00"


def batch(batch_id, *ids, weight="normal"):
    return {"batch_id": batch_id, "declarations": [
        {"id": item, "title": f"标题 {item}", "weight": weight, "kind": "fyi"} for item in ids]}


def commit(location, body, env=None, now=NOW):
    return foldctl(location, "commit", "--actor", "agent", "--now", now, stdin=json.dumps(body), env=env)


class ProtocolCases:
    """What every recorder does alike. Subclasses provide the ``backend`` fixture."""

    @pytest.fixture
    def location(self, backend, tmp_path):
        location = backend.new_location(tmp_path)
        backend.create(location, 64)
        return location

    def test_commit_replay_conflict(self, backend, location):
        store = backend.store(location)
        first = store.commit(batch("b1", "a", "b"), actor="agent", now=NOW)
        assert first.exit_code == 0 and first.document["event_seq"] == 1
        again = store.commit(batch("b1", "a", "b"), actor="agent", now=LATER)
        assert again.document == {**first.document, "replayed": True}
        other = store.commit(batch("b1", "c"), actor="agent", now=NOW)
        assert other.exit_code == 1 and other.document["errors"][0]["code"] == "batch_conflict"
        assert other.document["errors"][0]["event_seq"] == 1
        assert store.state().event_seq == 1

    def test_rejection_writes_nothing_and_consumes_nothing(self, backend, location):
        store = backend.store(location)
        store.commit(batch("b1", "a"), actor="agent", now=NOW)
        rejected = store.commit(batch("b2", "a", "z"), actor="agent", now=NOW)
        assert rejected.exit_code == 1 and rejected.document["errors"][0]["code"] == "item_exists"
        assert store.history().document["last_event_seq"] == 1
        assert store.history(batch="b2").document == {"found": False, "record": None}
        accepted = store.commit(batch("b2", "z"), actor="agent", now=NOW)  # neither b2 nor z was used up
        assert accepted.exit_code == 0 and accepted.document["event_seq"] == 2

    def test_annotation_and_history_filters(self, backend, location):
        store = backend.store(location)
        store.commit(batch("b1", "a", "b"), actor="agent", now=NOW)
        saved = store.annotate(item="a", text="看过了", author="user", now=NOW)
        assert saved.document == {"ok": True, "annotation": "ann-1", "event_seq": 2}
        store.commit(batch("b2", "c"), actor="agent", now=NOW)
        history = store.history(item="a").document
        assert [r["event_seq"] for r in history["records"]] == [1, 2]
        assert history["last_event_seq"] == 3
        assert [r["event_seq"] for r in store.history(since=1, limit=1).document["records"]] == [2]
        assert store.history(batch="b2").document["record"]["event_seq"] == 3
        missing = store.annotate(item="ghost", text="?", author="user", now=NOW)
        assert missing.exit_code == 1 and missing.document["errors"][0]["code"] == "item_not_found"

    def test_an_items_history_leaves_out_records_that_only_name_it_elsewhere(self, backend, location):
        store = backend.store(location)
        store.commit(batch("b1", "a", "ab", "x-a"), actor="agent", now=NOW)  # ids that contain "a"
        with_child = {"id": "a", "relation": "supersedes:a", "weight": "normal", "kind": "fyi", "summary": "概要",
                      "children": [{"id": "kid", "title": "孩子", "weight": "normal", "kind": "fyi"}]}
        store.commit({"batch_id": "b2", "declarations": [with_child]}, actor="agent", now=NOW)
        store.annotate(item="ab", text='提到 "a" 的批注', author="user", now=NOW)  # "a" quoted, about "ab"
        kid = {"id": "kid", "relation": "supersedes:kid", "title": "孩子改", "weight": "normal", "kind": "fyi"}
        assert store.commit({"batch_id": "b3", "declarations": [kid]}, actor="agent", now=NOW).exit_code == 0
        assert [r["event_seq"] for r in store.history(item="a").document["records"]] == [1, 2]  # not 3, not 4
        assert [r["event_seq"] for r in store.history(item="kid").document["records"]] == [2, 4]
        assert [r["event_seq"] for r in store.history(item="kid", since=2).document["records"]] == [4]
        assert [r["event_seq"] for r in store.history(item="ab").document["records"]] == [1, 3]
        assert store.history(item="A").document["records"] == []  # not an id: nothing names it

    def test_a_second_recorder_sees_the_same_store(self, backend, location):
        mine, theirs = backend.store(location), backend.store(location)
        mine.commit(batch("b1", "a"), actor="agent", now=NOW)
        mine.annotate(item="a", text="note", author="user", now=NOW)
        assert theirs.state() == mine.state()
        assert theirs.commit(batch("b1", "a"), actor="agent", now=LATER).document["replayed"] is True
        theirs.commit(batch("b2", "b"), actor="agent", now=NOW)
        assert mine.state().event_seq == 3  # the long-lived recorder reads what the other appended
        assert mine.commit(batch("b2", "b"), actor="agent", now=LATER).document["replayed"] is True
        assert mine.state_document(now=LATER).document == theirs.state_document(now=LATER).document

    def test_against_the_model(self, backend, tmp_path):
        run_machine(backend, tmp_path, **self.machine_size)

    machine_size = {"examples": 40, "steps": 25}


class DurableCases(ProtocolCases):
    """What a store that outlives its process does, through ``foldctl`` subprocesses."""

    def populate(self, location, count):
        for n in range(1, count + 1):
            code, receipt, err = commit(location, batch(f"b{n}", f"i{n}"))
            assert code == 0, err
        return receipt

    def test_records_are_the_kernel_records_byte_for_byte(self, backend, location):
        self.populate(location, 2)
        code, _, _ = foldctl(location, "annotate", "--item", "i1", "--text", "流水\n明天 ✓", "--now", NOW)
        assert code == 0
        records = foldctl(location, "history")[1]["records"]
        assert backend.raw_records(location) == [encode_record(record) for record in records]
        assert [json.loads(line)["event_seq"] for line in backend.raw_records(location)] == [1, 2, 3]

    @pytest.mark.parametrize("fault", ["before_append", "mid_append", "after_append", "after_fsync",
                                       "mid_snapshot"])
    def test_kill_at_fault_point_then_recover(self, backend, location, fault):
        self.populate(location, 2)
        printed = foldctl(location, "history")[1]
        env = {"FOLD_FAULT": fault, "FOLD_SNAPSHOT_EVERY": "1"}
        code, doc, _ = commit(location, batch("killed", "k1", "k2"), env=env)
        assert code == 137 and doc is None
        survived = backend.COMMITTED[fault]
        assert foldctl(location, "history", "--batch", "killed")[1]["found"] is survived
        code, receipt, _ = commit(location, batch("killed", "k1", "k2"), now=LATER)
        assert code == 0 and receipt["replayed"] is survived
        assert receipt["at"] == (NOW if survived else LATER)  # a replay keeps the original time
        again = commit(location, batch("killed", "k1", "k2"), now=LATER)[1]
        assert again == {**receipt, "replayed": True} and again["event_seq"] == 3
        history = foldctl(location, "history")[1]
        assert history["records"][:2] == printed["records"] and history["last_event_seq"] == 3
        records = [json.loads(line) for line in backend.raw_records(location)]
        assert [record["event_seq"] for record in records] == [1, 2, 3]
        assert backend.store(location).state() == replay(records, budget=64)
        assert foldctl(location, "verify")[0] == 0

    def test_unknown_outcome_then_retry(self, backend, location):
        self.populate(location, 1)
        code, doc, err = commit(location, batch("b2", "x"), env={"FOLD_INJECT": "eio_fsync"})
        assert code == 3 and doc["errors"][0]["code"] == "store_unavailable"
        assert "retry with the same batch_id" in err
        code, receipt, _ = commit(location, batch("b2", "x"), now=LATER)
        assert code == 0 and receipt["replayed"] is True and receipt["at"] == NOW
        code, doc, err = commit(location, batch("b3", "y"), env={"FOLD_INJECT": "enospc_append"})
        assert code == 3 and doc["errors"][0]["code"] == "store_unavailable"
        assert foldctl(location, "history", "--batch", "b3")[1]["found"] is False
        assert len(backend.raw_records(location)) == 2 and foldctl(location, "verify")[0] == 0

    def test_busy_store_is_unavailable_never_not_found(self, backend, location):
        self.populate(location, 1)
        holder = backend.recorder(location)
        with holder.session(write=True):  # another writer holds the store
            env = {"FOLD_LOCK_TIMEOUT": "0.2"}
            code, doc, err = commit(location, batch("b2", "x"), env=env)
            assert code == 3 and doc["errors"][0]["code"] == "store_unavailable" and "busy" in err
        assert foldctl(location, "history", "--batch", "b2")[1]["found"] is False
        assert commit(location, batch("b2", "x"))[1]["replayed"] is False

    def test_reads_of_a_missing_store_are_unavailable(self, backend, tmp_path):
        nowhere = backend.new_location(tmp_path)
        for args in (["state"], ["history"], ["history", "--batch", "b1"], ["verify"]):
            code, doc, err = foldctl(nowhere, *args)
            assert code == 3 and doc["errors"][0]["code"] == "store_unavailable" and "no store" in err
        code, rejected, _ = commit(nowhere, batch("b1", "a", "a"))  # rejected: creates nothing
        assert code == 1 and foldctl(nowhere, "state")[0] == 3
        code, receipt, _ = commit(nowhere, batch("b1", "a"))  # the first accepted write creates it
        assert code == 0 and receipt["event_seq"] == 1
        assert foldctl(nowhere, "state", "--now", LATER)[1]["budget"] == 64

    def test_writers_and_readers_in_parallel(self, backend, tmp_path):
        """Four writers (two CLI, two long-lived recorders) × 30 batches, two readers, failures mixed in."""
        writers, count = 4, 30
        location = backend.new_location(tmp_path)
        assert foldctl(location, "init", "--budget", "256")[0] == 0
        script = tmp_path / "writer.py"
        script.write_text(WRITER)
        reader = tmp_path / "reader.py"
        reader.write_text(READER)
        stop = tmp_path / "stop"
        # A small snapshot bound: file store writers and readers refresh the snapshot while the others run.
        env = {**os.environ, "PYTHONPATH": ":".join(sys.path), "FOLD_SNAPSHOT_EVERY": "5"}
        readers = [subprocess.Popen([sys.executable, str(reader), location, str(stop)], stdout=subprocess.PIPE,
                                    env=env) for _ in range(2)]
        plans = [("cli", "eio"), ("api", "busy"), ("cli", "busy"), ("api", "eio")]
        running = [subprocess.Popen([sys.executable, str(script), location, str(n), *plans[n], str(count)],
                                    stdout=subprocess.PIPE, env=env) for n in range(writers)]
        try:
            outputs = [json.loads(process.communicate(timeout=600)[0]) for process in running]
        finally:
            stop.touch()
        reads = [json.loads(process.communicate(timeout=600)[0]) for process in readers]
        receipts = []
        for n, summary in enumerate(outputs):
            assert summary["errors"] == [], summary["errors"][:3]
            mine = summary["receipts"]
            assert [r["batch_id"] for r in mine] == [f"w{n}-{k}" for k in range(count)]
            assert set(summary["injected"]) <= {r["batch_id"] for r in mine if r["replayed"]}
            receipts += mine
        total = writers * count
        assert sorted(r["event_seq"] for r in receipts) == list(range(1, total + 1))
        records = [json.loads(line) for line in backend.raw_records(location)]
        assert [r["event_seq"] for r in records] == list(range(1, total + 1))
        assert len({r["batch_id"] for r in records}) == total
        by_id = {r["batch_id"]: r for r in records}
        assert all(by_id[r["batch_id"]]["receipt"] == {**r, "replayed": False} for r in receipts)
        assert backend.store(location).state() == replay(records, budget=256)
        assert foldctl(location, "verify")[0] == 0
        for seen in reads:
            assert len(seen) >= 2 and all(entry["code"] == 0 for entry in seen), seen[:3]
            assert all(e["event_seq"] == e["revision"] == e["items"] for e in seen)  # never half a batch
            revisions = [entry["revision"] for entry in seen]
            assert revisions == sorted(revisions) and revisions[-1] == total


WRITER = textwrap.dedent('''
    import json, os, random, subprocess, sys, time
    location, index, mode, trouble, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
    rng = random.Random(index)
    receipts, injected, errors = [], [], []
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLD_") or k == "FOLD_SNAPSHOT_EVERY"}
    if trouble == "busy":
        env["FOLD_LOCK_TIMEOUT"] = os.environ["FOLD_LOCK_TIMEOUT"] = "0.002"
    if mode == "api":
        from fold_core.errors import StoreUnavailable
        from fold_core.store.locate import open_store
        store = open_store(location)  # one long-lived recorder for all its commits
    for n in range(count):
        body = {"batch_id": f"w{index}-{n}", "declarations": [
            {"id": f"w{index}-{n}", "title": f"写入 {index}/{n}", "weight": "trace", "kind": "fyi"}]}
        for attempt in range(300):
            inject = trouble == "eio" and n % 7 == 3 and attempt == 0
            if inject:
                injected.append(body["batch_id"])
            if mode == "cli":
                run_env = dict(env, FOLD_INJECT="eio_fsync") if inject else env
                done = subprocess.run([sys.executable, "-m", "fold_core", "--store", location, "commit", "--actor",
                                       f"w{index}", "--now", "2026-10-09T08:00:00+08:00"], env=run_env,
                                      input=json.dumps(body).encode(), capture_output=True)
                code, out, err = done.returncode, done.stdout.decode(), done.stderr.decode()
                doc = json.loads(out) if out.strip() else None
            else:
                if inject:
                    os.environ["FOLD_INJECT"] = "eio_fsync"
                try:
                    answer = store.commit(body, actor=f"w{index}", now="2026-10-09T08:00:00+08:00")
                    code, doc, err = answer.exit_code, answer.document, ""
                except StoreUnavailable as error:
                    code, doc, err = 3, None, str(error)
                os.environ.pop("FOLD_INJECT", None)
                time.sleep(rng.random() * 0.01)
            if code == 3:
                time.sleep(rng.random() * 0.01)
                continue
            if code != 0 or "Traceback" in err:
                errors.append({"batch": body["batch_id"], "code": code, "doc": doc, "stderr": err[-1000:]})
            else:
                receipts.append(doc)
            break
        else:
            errors.append({"batch": body["batch_id"], "gave_up": True})
    print(json.dumps({"receipts": receipts, "injected": injected, "errors": errors}))
''')

READER = textwrap.dedent('''
    import json, os, subprocess, sys
    location, stop = sys.argv[1], sys.argv[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLD_") or k == "FOLD_SNAPSHOT_EVERY"}
    seen = []
    while True:
        final = os.path.exists(stop)
        done = subprocess.run([sys.executable, "-m", "fold_core", "--store", location, "state", "--now",
                               "2026-10-10T08:00:00+08:00"], capture_output=True, env=env)
        entry = {"code": done.returncode}
        if done.returncode == 0:
            doc = json.loads(done.stdout)
            entry.update(revision=doc["revision"], event_seq=doc["event_seq"], items=len(doc["root"]["items"]))
        else:
            entry["stderr"] = done.stderr.decode()[-500:]
        seen.append(entry)
        if final:
            break
    print(json.dumps(seen))
''')


class TestMemoryRecorder(ProtocolCases):
    @pytest.fixture
    def backend(self):
        return MemoryBackend()


class TestFileRecorder(DurableCases):
    @pytest.fixture
    def backend(self):
        return FileBackend()


class TestPostgresRecorder(DurableCases):
    @pytest.fixture
    def backend(self, postgres_cluster):
        return PostgresBackend(postgres_cluster)
