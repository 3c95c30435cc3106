"""Benchmark: a commit to the PostgreSQL store vs a bare INSERT + COMMIT of the same record bytes.

What: the wall time of ``Store.commit`` on a long-lived ``PostgresRecorder``
(as a daemon holds it) for the 3-declaration batches of benchmark 1 (one
patch of a child, one new root item, one withdraw of the oldest root item;
CJK titles, summaries, sources with quotes) on the ~200-item state. That is
the whole protocol: BEGIN + advisory lock + head row (one round trip), the
batch-id look-up, the kernel, then the record row, the changed items, the
item index and the head row with the COMMIT (one round trip, one WAL flush).

Baseline: in the same database, on its own long-lived connection, ``BEGIN``,
``INSERT INTO bench_records (record) VALUES (…)`` with the record bytes the
commit just wrote, ``COMMIT`` — three statements, as an application writes a
row. A single autocommit ``INSERT`` (one round trip) is reported beside it.

How: they alternate — one Fold commit, one baseline transaction, one
autocommit INSERT — so all see the same noise; the ratio is the ratio of the
medians. The database is a private cluster made for the run (Debian's
``initdb``/``pg_ctl``, default settings: ``fsync`` and ``synchronous_commit``
on, data under the scratch directory), or ``--database URL``.

``--migrate N`` also moves the N-record history of benchmark 10
(``bench/history.py``, 100,000 by default in the full run) to a new
PostgreSQL store and back to a new directory with ``migrate_store``, which
checks the bytes, ``verify`` and the state after each hop, and reports the
times.

``python bench/bench_postgres.py [--commits N] [--migrate N] [--doc docs/benchmarks.md]``
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time

from common import ACTOR, SCRATCH, Workload, emit_json, now_at, pair_result, summarize
from doc_sections import replace_section

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTION = "postgres"


def cluster_url(database: str | None):
    """``(url, cluster)``: the given database, or a private cluster started for the run."""
    if database is not None:
        return database, None
    sys.path.insert(0, REPO)
    from tests.support.postgres import Cluster, find_binaries

    binaries = find_binaries()
    if binaries is None:
        raise SystemExit("bench_postgres: PostgreSQL is not installed (Debian package postgresql)")
    cluster = Cluster(binaries).start()
    return cluster.url(), cluster


def commits(url: str, count: int, warmups: int) -> dict:
    import psycopg

    from fold_core.store.base import Store
    from fold_core.store.location import compose, parse_url
    from fold_core.store.pg.recorder import PostgresRecorder

    name = f"bench-{os.getpid()}-{time.time_ns()}"
    recorder = PostgresRecorder(compose(url, name=name))
    store = Store(recorder)
    workload = Workload("commit")
    assert store.commit(workload.initial_batch(), actor=ACTOR, now=now_at(0)).exit_code == 0
    base = psycopg.connect(parse_url(url).conninfo, autocommit=True)
    base.execute("CREATE TABLE IF NOT EXISTS bench_records (record text)")
    fold, transaction, single, sizes = [], [], [], []
    for index in range(warmups + count):
        batch, now = workload.next_batch(), now_at(workload.tick)
        started = time.perf_counter()
        answer = store.commit(batch, actor=ACTOR, now=now)
        fold_time = time.perf_counter() - started
        if answer.exit_code != 0:
            raise RuntimeError(f"commit rejected: {answer.document}")
        body = recorder.query("SELECT body FROM fold_records WHERE store = %s AND event_seq = %s",
                              (recorder.head.id, answer.document["event_seq"])).fetchone()[0]
        started = time.perf_counter()
        base.execute("BEGIN")
        base.execute("INSERT INTO bench_records (record) VALUES (%s)", (body,))
        base.execute("COMMIT")
        transaction_time = time.perf_counter() - started
        started = time.perf_counter()
        base.execute("INSERT INTO bench_records (record) VALUES (%s)", (body,))
        single_time = time.perf_counter() - started
        if index >= warmups:
            fold.append(fold_time)
            transaction.append(transaction_time)
            single.append(single_time)
            sizes.append(len(body.encode("utf-8")) + 1)
    state = store.state()
    server = base.execute("SELECT current_setting('server_version'), current_setting('fsync'),"
                          " current_setting('synchronous_commit'), current_setting('wal_sync_method')").fetchone()
    base.close()
    recorder.close()
    result = pair_result(fold, transaction)
    result["single"] = summarize(single)
    result["single_ratio"] = result["subject"]["median"] / result["single"]["median"]
    result["record_bytes"] = summarize(sizes)
    result["items"], result["active"] = len(state.items), sum(len(m) for m in state.active.values())
    result["server"] = dict(zip(("version", "fsync", "synchronous_commit", "wal_sync_method"), server))
    result["kernel"] = _kernel(state, count)
    return result


def _kernel(state, count: int) -> dict:
    from fold_core import kernel

    workload = Workload.from_state("commit", state)
    times = []
    for _ in range(count):
        batch = workload.next_batch()
        started = time.perf_counter()
        outcome = kernel.apply_batch(state, batch, actor=ACTOR, now=now_at(workload.tick))
        times.append(time.perf_counter() - started)
        state = outcome.state
    return summarize(times)


def migration(url: str, records: int) -> dict:
    from run_flat import history_store

    from fold_core.store.location import compose
    from fold_core.store.migrate import migrate_store

    source, facts = history_store(records)
    target = compose(url, name=f"moved-{os.getpid()}-{time.time_ns()}")
    back = tempfile.mkdtemp(prefix="moved-back-", dir=SCRATCH)
    shutil.rmtree(back)
    try:
        started = time.perf_counter()
        there = migrate_store(source, target)
        to_postgres = time.perf_counter() - started
        started = time.perf_counter()
        again = migrate_store(target, back)
        to_files = time.perf_counter() - started
    finally:
        shutil.rmtree(back, ignore_errors=True)
    assert there["verified"] and again["verified"]
    return {"records": there["records"], "log_bytes": facts["log_bytes"], "to_postgres": to_postgres,
            "to_files": to_files, "revision": there["revision"]}


def section(result: dict) -> str:
    ms = lambda seconds: f"{seconds * 1000:.2f} ms"  # noqa: E731
    sub, base, single = result["subject"], result["baseline"], result["single"]
    verdict = "meets" if result["ratio"] <= 2.0 else "**misses**"
    server = result["server"]
    lines = [
        "## 16. PostgreSQL store: a commit vs a bare INSERT + COMMIT",
        "",
        "Generated by `python bench/bench_postgres.py --doc docs/benchmarks.md`; `run_all.py` keeps this section.",
        "",
        "| what | Fold | baseline (same run) | ratio | target | verdict |",
        "|---|---|---|---|---|---|",
        f"| 1 commit, 3 declarations, {result['active']} active items (median) | {ms(sub['median'])}"
        f" [{ms(sub['q1'])}–{ms(sub['q3'])}] | {ms(base['median'])} [{ms(base['q1'])}–{ms(base['q3'])}]"
        f" `BEGIN; INSERT; COMMIT` | {result['ratio']:.2f}× | ≤ 2.0× | {verdict} |",
        f"| the same commit | {ms(sub['median'])} | {ms(single['median'])} [{ms(single['q1'])}–{ms(single['q3'])}]"
        f" one autocommit `INSERT` | {result['single_ratio']:.2f}× | — | — |",
    ]
    move = result.get("migration")
    if move is not None:
        lines.append(f"| `migrate_store` of the {move['records']:,}-record history ({move['log_bytes'] / 1e6:.0f} MB)"
                     f" to PostgreSQL, then back to a directory | {move['to_postgres']:.1f} s, then"
                     f" {move['to_files']:.1f} s (each checked: bytes, `verify`, state) | — | — | — | verified |")
    lines += [
        "",
        f"Method. {sub['n']} timed commits after {result['warmups']} untimed ones, each followed by its baseline"
        " transaction and then a single autocommit INSERT of the same record bytes"
        f" (median {result['record_bytes']['median']:,.0f} B) into a one-column table of the same database, on a"
        " second long-lived connection; ratio of the medians (median of the per-pair ratios"
        f" {result['pair_ratios']['median']:.2f}×). The Fold commit is `Store.commit` on a long-lived"
        " `PostgresRecorder` over the Unix socket: one round trip for BEGIN, the advisory lock and the head row,"
        " one for the batch-id look-up, the kernel in this process"
        f" ({ms(result['kernel']['median'])} alone), one for the rows and the COMMIT; the baseline pays three"
        " round trips and the same WAL flush. PostgreSQL"
        f" {server['version']} (fsync {server['fsync']}, synchronous_commit {server['synchronous_commit']},"
        f" wal_sync_method {server['wal_sync_method']}), a private cluster with default settings"
        f" unless `--database` was given; Python {platform.python_version()}, {os.cpu_count()} cores, load"
        f" average {result['load'][0]:.2f} at the start and {result['load'][1]:.2f} at the end.",
        "",
        "Reading. The WAL flush at COMMIT is the same for both and dominates on this disk; what a Fold commit"
        " adds is the lock and head round trip, the look-up, the kernel and a few more rows in the same"
        " flush. On a shared machine both sides move together from run to run: read the baseline with the"
        " ratio.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", help="a postgresql:// URL to use instead of a private cluster")
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--warmups", type=int, default=20)
    parser.add_argument("--migrate", type=int, default=0, metavar="N",
                        help="also move the N-record history there and back (0: skip)")
    parser.add_argument("--doc", help="write the section into this Markdown file (docs/benchmarks.md)")
    args = parser.parse_args(argv)
    os.makedirs(SCRATCH, exist_ok=True)
    url, started_cluster = cluster_url(args.database)
    load = [os.getloadavg()[0]]
    try:
        result = commits(url, args.commits, args.warmups)
        if args.migrate:
            result["migration"] = migration(url, args.migrate)
    finally:
        if started_cluster is not None:
            started_cluster.stop()
    load.append(os.getloadavg()[0])
    result.update(warmups=args.warmups, load=load)
    if args.doc:
        replace_section(args.doc, SECTION, section(result))
    emit_json({key: value for key, value in result.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
