"""Concurrent writers and readers on one store (contract §6.2, §7).

Four writer processes commit 50 batches each with distinct batch ids — two
through real ``foldctl commit`` subprocesses, two through the store API with
one long-lived ``FileRecorder`` each (which keeps its recovered state between
sessions and must pick up what the others appended) — while two reader
processes run ``foldctl state`` in a loop. A writer that gets exit 3
(``store_unavailable``: outcome unknown) retries the same batch_id, as the
contract says; a retry that finds the batch already committed gets the
original receipt back (``replayed: true``).

Afterwards: exactly 200 records with event_seq 1…200, each batch id once, none
lost or doubled; every read printed one parseable JSON document with exit 0,
never showed half a batch (each batch adds one item, so a state at event_seq n
shows n items), and the revisions each reader saw never went backwards. A
small snapshot bound makes writers and readers refresh ``snapshot.json`` while
the others run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from fold_core.state import replay
from fold_core.store.file import file_store

WRITERS, COMMITS, READERS = 4, 50, 2
NOW = "2026-10-09T08:00:00+08:00"
LATER = "2026-10-10T08:00:00+08:00"

WRITER = textwrap.dedent('''
    import json, os, random, subprocess, sys, time
    store, index, mode, count, now = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    trouble = sys.argv[6]  # "eio": every 10th batch first fails its fsync; "busy": a tiny lock timeout
    rng = random.Random(index)
    receipts, retries, injected, errors = [], 0, [], []
    recorder_store = None
    if mode == "api":
        from fold_core.errors import StoreUnavailable
        from fold_core.store.file import file_store
        recorder_store = file_store(store)  # one long-lived recorder for all its commits
    if trouble == "busy":
        os.environ["FOLD_LOCK_TIMEOUT"] = "0.002"

    def batch(n):
        item = f"w{index}-{n}"
        return {"batch_id": item, "declarations": [
            {"id": item, "title": f"写入 {index}/{n}", "weight": "trace", "kind": rng.choice(["fyi", "done"])}]}

    for n in range(count):
        body = batch(n)
        for attempt in range(200):
            inject = trouble == "eio" and n % 10 == 3 and attempt == 0
            if inject:  # written, but the caller hears "outcome unknown"
                os.environ["FOLD_INJECT"] = "eio_fsync"
                injected.append(body["batch_id"])
            if mode == "cli":
                done = subprocess.run(
                    [sys.executable, "-m", "fold_core", "--store", store, "commit", "--actor", f"writer-{index}",
                     "--now", now], input=json.dumps(body, ensure_ascii=False).encode(), capture_output=True)
                code, out, err = done.returncode, done.stdout.decode(), done.stderr.decode()
                doc = json.loads(out) if out.strip() else None
            else:
                try:
                    answer = recorder_store.commit(body, actor=f"writer-{index}", now=now)
                    code, doc, err = answer.exit_code, answer.document, ""
                except StoreUnavailable as error:
                    code, doc, err = 3, None, str(error)
                time.sleep(rng.random() * 0.02)  # let the others interleave
            os.environ.pop("FOLD_INJECT", None)
            if code == 3:  # outcome unknown: retry the same batch_id
                retries += 1
                time.sleep(rng.random() * 0.02)
                continue
            if code != 0 or "Traceback" in err:
                errors.append({"batch": body["batch_id"], "code": code, "doc": doc, "stderr": err[-2000:]})
            else:
                receipts.append(doc)
            break
        else:
            errors.append({"batch": body["batch_id"], "gave_up": True})
    print(json.dumps({"receipts": receipts, "retries": retries, "injected": injected, "errors": errors}))
''')

READER = textwrap.dedent('''
    import json, os, subprocess, sys
    store, stop, now = sys.argv[1], sys.argv[2], sys.argv[3]
    reads = []
    final = False
    while True:
        final = os.path.exists(stop)  # one last read after the writers are done
        done = subprocess.run([sys.executable, "-m", "fold_core", "--store", store, "state", "--now", now],
                              capture_output=True)
        entry = {"code": done.returncode, "stderr": done.stderr.decode()[-2000:]}
        try:
            doc = json.loads(done.stdout)
        except ValueError:
            entry["stdout"] = done.stdout.decode("utf-8", "replace")[-2000:]
        else:
            entry.update(revision=doc.get("revision"), event_seq=doc.get("event_seq"),
                         items=len(doc["root"]["items"]) if "root" in doc else None,
                         used=doc["root"]["used"] if "root" in doc else None)
        reads.append(entry)
        if final:
            break
    print(json.dumps({"reads": reads}))
''')


def test_writers_and_readers_in_parallel(tmp_path):
    store = tmp_path / "store"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("FOLD_")}
    environment["FOLD_SNAPSHOT_EVERY"] = "5"
    init = subprocess.run([sys.executable, "-m", "fold_core", "--store", str(store), "init", "--budget", "256"],
                          capture_output=True, env=environment)
    assert init.returncode == 0, init.stderr.decode()
    (tmp_path / "writer.py").write_text(WRITER)
    (tmp_path / "reader.py").write_text(READER)
    stop = tmp_path / "writers-done"

    def start(script, *args):
        return subprocess.Popen([sys.executable, str(tmp_path / script), *map(str, args)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment)

    readers = [start("reader.py", store, stop, LATER) for _ in range(READERS)]
    plans = [("cli", "eio"), ("api", "busy"), ("cli", "busy"), ("api", "eio")]
    writers = [start("writer.py", store, index, *plans[index % 4][:1], COMMITS, NOW, plans[index % 4][1])
               for index in range(WRITERS)]
    try:
        outputs = [process.communicate(timeout=600) for process in writers]
    finally:
        stop.touch()
    read_outputs = [process.communicate(timeout=600) for process in readers]

    # -- the writers: every batch accepted once, every receipt its own event_seq
    receipts = []
    for index, (process, (out, err)) in enumerate(zip(writers, outputs)):
        assert process.returncode == 0, err.decode()
        summary = json.loads(out)
        assert summary["errors"] == [], summary["errors"][:3]
        mine = summary["receipts"]
        assert [r["batch_id"] for r in mine] == [f"w{index}-{n}" for n in range(COMMITS)]
        assert all(r["ok"] is True and r["type"] == "commit" for r in mine)
        # a writer's own commits are sequential: its event_seqs increase
        assert [r["event_seq"] for r in mine] == sorted(r["event_seq"] for r in mine)
        # a batch whose fsync failed was written: its retry gets the original receipt back;
        # any other replay only ever follows a retry after exit 3
        replayed = {r["batch_id"] for r in mine if r["replayed"]}
        assert set(summary["injected"]) <= replayed
        assert len(replayed) <= summary["retries"]
        print(f"writer {index} ({plans[index % 4]}): {len(mine)} receipts, {summary['retries']} retries"
              f" after exit 3, {len(replayed)} replayed")
        receipts += mine
    total = WRITERS * COMMITS
    assert sorted(r["event_seq"] for r in receipts) == list(range(1, total + 1))
    assert sorted(r["revision"] for r in receipts) == list(range(1, total + 1))

    # -- the log: exactly 200 records, consecutive, each batch id once
    lines = (store / "events.jsonl").read_bytes().splitlines(keepends=True)
    assert all(line.endswith(b"\n") for line in lines)
    records = [json.loads(line) for line in lines]
    assert [r["event_seq"] for r in records] == list(range(1, total + 1))
    batch_ids = [r["batch_id"] for r in records]
    assert len(set(batch_ids)) == total
    assert set(batch_ids) == {f"w{i}-{n}" for i in range(WRITERS) for n in range(COMMITS)}
    by_id = {r["batch_id"]: r for r in records}
    for receipt in receipts:
        assert by_id[receipt["batch_id"]]["receipt"] == {**receipt, "replayed": False}

    # -- the store agrees with a clean replay and passes the full check
    meta = json.loads((store / "meta.json").read_text())
    assert file_store(store).state() == replay(records, budget=meta["budget"])
    verify = subprocess.run([sys.executable, "-m", "fold_core", "--store", str(store), "verify"],
                            capture_output=True, env=environment)
    assert verify.returncode == 0, verify.stdout.decode() + verify.stderr.decode()
    assert json.loads(verify.stdout)["records"] == total

    # -- the readers: every read answered, never half a batch, never backwards
    for process, (out, err) in zip(readers, read_outputs):
        assert process.returncode == 0, err.decode()
        reads = json.loads(out)["reads"]
        assert len(reads) >= 2
        bad = [read for read in reads if read["code"] != 0 or "revision" not in read]
        assert bad == [], bad[:3]
        assert all("Traceback" not in read["stderr"] for read in reads)
        for read in reads:
            assert read["event_seq"] == read["revision"] == read["items"] == read["used"]
        revisions = [read["revision"] for read in reads]
        print(f"reader: {len(reads)} reads, {len(set(revisions))} distinct revisions")
        assert revisions == sorted(revisions), revisions
        assert revisions[-1] == total
