"""Benchmark 1: in-process commit through the file store vs one SQLite transaction.

What: the wall time of ``Store.commit`` on a long-lived ``file_store`` (as a
daemon holds it) for a 3-declaration batch — one patch of a child item, one
new root item, one withdraw of the oldest root item; CJK titles, summaries,
sources with quotes, a fresh batch_id each time — on a ~200-item state. That
is the full §6.2 protocol: flock, recover (stat + tail check), identify,
kernel, encode, append, fsync, and the snapshot refresh every 32 records.

Baseline: one SQLite transaction (WAL, ``synchronous=FULL``, a table with one
TEXT column) inserting the same record bytes the file store just appended,
on a long-lived connection, in the same directory (same filesystem).

How: they run alternately — one fold commit, one SQLite transaction with its
record, and (the floor of any durable append) a bare ``write`` + ``fsync`` of
the same bytes to an O_APPEND file — so all see the same noise; the three
take turns at going first in each round (SQLite and the bare write then use
the previous record's bytes): on a machine whose other processes write too,
the first fsync after the loop's own work commits more of their changes in
the filesystem journal, which would otherwise always fall on Fold. The ratio is
reported as ratio of medians (the typical commit) and ratio of means
(amortized, including the periodic snapshot refresh). The pure kernel
(``apply_batch``) and ``encode_record`` are also timed alone.

With ``--big-store DIR`` (repeatable) it repeats the fold side on a copy of
that store (the 100k-record stores) to show how commit cost scales with the
history: median, and mean/max, which hold the snapshot refresh every 32.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import time

from common import ACTOR, Workload, bench_dir, emit_json, filesystem, now_at, pair_result, summarize

from fold_core import kernel
from fold_core.store.file import FileRecorder
from fold_core.store.base import Store
from fold_core.store.log import encode_record


def _last_line(path: str, start: int) -> tuple[bytes, int]:
    with open(path, "rb") as log:
        log.seek(start)
        data = log.read()
    return data, start + len(data)


def fold_vs_sqlite(directory: str, commits: int, warmups: int) -> dict:
    """Alternate fold commits and SQLite transactions; the timings and the records."""
    store_path = os.path.join(directory, "store")
    store = Store(FileRecorder(store_path, budget=64))
    workload = Workload("commit")
    answer = store.commit(workload.initial_batch(), actor=ACTOR, now=now_at(0))
    assert answer.exit_code == 0, answer.document

    db = sqlite3.connect(os.path.join(directory, "baseline.db"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE records (record TEXT)")
    log_path = os.path.join(store_path, "events.jsonl")
    position = os.path.getsize(log_path)
    bare_fd = os.open(os.path.join(directory, "bare.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    fold, base, bare, records = [], [], [], []
    data = None  # the record bytes the file store appended last

    def sqlite_insert() -> float:
        started = time.perf_counter()
        db.execute("BEGIN")
        db.execute("INSERT INTO records (record) VALUES (?)", (data.decode("utf-8"),))
        db.execute("COMMIT")
        return time.perf_counter() - started

    def bare_append() -> float:
        started = time.perf_counter()
        os.write(bare_fd, data)
        os.fsync(bare_fd)
        return time.perf_counter() - started

    for index in range(warmups + commits):
        batch = workload.next_batch()
        now = now_at(workload.tick)
        # The three take turns at being first: the first durable write after the loop's own work
        # finds more of the machine's other writes waiting in the filesystem journal.
        turn = index % 3 if data is not None else 0
        if turn == 1:
            base_time, bare_time = sqlite_insert(), bare_append()
        elif turn == 2:
            bare_time = bare_append()
        started = time.perf_counter()
        answer = store.commit(batch, actor=ACTOR, now=now)
        fold_time = time.perf_counter() - started
        if answer.exit_code != 0:
            raise RuntimeError(f"commit rejected: {answer.document}")
        data, position = _last_line(log_path, position)
        if turn == 0:
            base_time, bare_time = sqlite_insert(), bare_append()
        elif turn == 2:
            base_time = sqlite_insert()
        if index >= warmups:
            fold.append(fold_time)
            base.append(base_time)
            bare.append(bare_time)
            records.append(data)
    db.close()
    os.close(bare_fd)
    result = pair_result(fold, base)
    result["write_fsync"] = summarize(bare)
    result["amortized_ratio"] = result["subject"]["mean"] / result["baseline"]["mean"]
    result["record_bytes"] = summarize([len(r) for r in records])
    result["state"] = store.state()
    store.recorder.close()
    return result


def parts(state, commits: int) -> dict:
    """The pure kernel and the record encoding alone (CPU only, no file)."""
    workload = Workload.from_state("commit", state)
    kernel_times, encode_times = [], []
    for _ in range(commits):
        batch = workload.next_batch()
        started = time.perf_counter()
        outcome = kernel.apply_batch(state, batch, actor=ACTOR, now=now_at(workload.tick))
        kernel_times.append(time.perf_counter() - started)
        assert isinstance(outcome, kernel.Accepted), outcome.document
        state = outcome.state
        started = time.perf_counter()
        encode_record(outcome.record)
        encode_times.append(time.perf_counter() - started)
    return {"kernel": summarize(kernel_times), "encode": summarize(encode_times)}


def big_store(source: str, directory: str, commits: int, warmups: int) -> dict:
    """Fold commits on a copy of a large store (first session untimed: it loads the snapshot)."""
    target = os.path.join(directory, "big-" + os.path.basename(source))
    shutil.copytree(source, target)
    store = Store(FileRecorder(target))
    state = store.state()
    workload = Workload.from_state("commit", state)
    times = []
    for index in range(warmups + commits):
        batch = workload.next_batch()
        now = now_at(workload.tick)
        started = time.perf_counter()
        answer = store.commit(batch, actor=ACTOR, now=now)
        if index >= warmups:
            times.append(time.perf_counter() - started)
        if answer.exit_code != 0:
            raise RuntimeError(f"commit rejected: {answer.document}")
    store.recorder.close()
    return {"store": os.path.basename(source), "items": len(state.items), "records": state.event_seq,
            "commit": summarize(times)}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--warmups", type=int, default=20)
    parser.add_argument("--big-store", action="append", default=[], help="also commit on a copy of this store")
    args = parser.parse_args(argv)
    directory = bench_dir("commit")
    result = fold_vs_sqlite(directory, args.commits, args.warmups)
    state = result.pop("state")
    result.update(name="commit", items=len(state.items),
                  active=sum(len(m) for m in state.active.values()),
                  directory=directory, filesystem=filesystem(directory), sqlite=sqlite3.sqlite_version)
    result["parts"] = parts(state, args.commits)
    result["parts"]["write_fsync"] = result.pop("write_fsync")
    result["big"] = [big_store(path, directory, max(args.commits // 3, 1), args.warmups) for path in args.big_store]
    shutil.rmtree(directory, ignore_errors=True)
    return result


if __name__ == "__main__":
    emit_json(main())
