"""Benchmark: handing 10,000 records to the three built-in consumers vs reading them from the log.

What: ``fold_host.cycle.delivery.deliver_all`` with the built-ins briefing
(Markdown file, rewritten after each batch), log (Markdown change log, one
entry per record) and push (thresholds ``min_weight = "high"``,
``kinds = ["needs-you"]``, sending to a local HTTP receiver through Apprise's
``json://``) on a store of the ``steady`` workload (``common``): an initial
~200-item batch, then 10,000 agent ticks that each patch two items. The
instances stand where a ``from = "now"`` instance registered after the first
record stands (cursor 1, ``begin`` called with the state at event 1), so all
three get the same 10,000 records. Each repeat starts from a fresh host.db.

Baseline: reading the same 10,000 records from the log through the store's
read API (``Store.history(since=1, limit=10000)`` on a new ``file_store``),
which is also the first thing ``deliver_all`` does. They run alternately.
Also timed alone: each consumer by itself (``deliver_all`` with one
instance), to show where the time goes.

``python bench/bench_consumers.py [--records 10000] [--repeats 3]`` prints one
JSON line and, with ``--doc docs/benchmarks.md``, replaces the section
between the ``consumers benchmark`` markers of that file (appending it the first
time).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

from common import bench_dir, emit_json, existing_store, summarize
from doc_sections import replace_block

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "integration"))

from consumer_support import Receiver, instance  # noqa: E402

from fold_host.cycle.delivery import deliver_all  # noqa: E402
from fold_core import kernel  # noqa: E402
from fold_core.plugin_api import ConsumerContext, StateView  # noqa: E402
from fold_core.state import empty_state, replay  # noqa: E402
from fold_core.store.file import file_store  # noqa: E402
from fold_host.hostdb import open_host_db  # noqa: E402

NOW = "2026-10-20T08:00:00+08:00"
START, END = "<!-- consumers benchmark: begin -->", "<!-- consumers benchmark: end -->"  # kept by run_all.py


def fresh_copy(source: str, target: str) -> None:
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    for name in ("meta.json", "events.jsonl", "snapshot.json"):
        shutil.copyfile(os.path.join(source, name), os.path.join(target, name))


def instances(directory: str) -> list:
    return [instance("morning", "briefing", directory, path="briefing.md"),
            instance("changes", "log", directory, path="changes.md"),
            instance("phone", "push", directory, urls_env="FOLD_BENCH_PUSH_URLS", min_weight="high",
                     kinds=["needs-you"])]


def deliver(store_dir: str, chosen: list, first: dict) -> tuple[float, list]:
    """Register ``chosen`` at event 1 (as ``from = "now"`` would have), then time one ``deliver_all``."""
    for name in os.listdir(store_dir):
        if name.startswith("host.db"):
            os.remove(os.path.join(store_dir, name))
    for entry in chosen:  # each run writes its files anew (the log would skip what it already holds)
        path = getattr(entry.settings, "path", None)
        if path is not None and os.path.exists(path):
            os.remove(path)
    with open_host_db(store_dir) as db:
        view = StateView(first)
        for entry in chosen:
            db.set_consumer_cursor(entry.name, 1, now=NOW)
            consumer = entry.build()
            if hasattr(consumer, "begin"):
                consumer.begin(ConsumerContext(state=view, now=NOW, memory=db.memory(entry.name)))
        started = time.perf_counter()
        results = deliver_all(db, store_dir, chosen, now=NOW, timezone="Asia/Shanghai", language="zh", coverage=())
        return time.perf_counter() - started, results


def read_log(store_dir: str, count: int) -> float:
    started = time.perf_counter()
    records = file_store(store_dir).history(since=1, limit=count).document["records"]
    elapsed = time.perf_counter() - started
    assert len(records) == count
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--stores", default=None, help="where the workload store is kept (built when missing)")
    parser.add_argument("--doc", help="replace this benchmark's section in that Markdown file")
    args = parser.parse_args(argv)
    work = bench_dir("consumers")
    stores = args.stores or os.path.join(work, "stores")
    source = existing_store(stores, "steady", args.records + 1)
    store_dir = os.path.join(work, "store")
    fresh_copy(source, store_dir)
    first_record = next(iter(file_store(store_dir).history(since=0, limit=1).document["records"]))
    first = kernel.state_document(replay([first_record], empty_state(64)), NOW)
    receiver = Receiver()
    os.environ["FOLD_BENCH_PUSH_URLS"] = receiver.url
    try:
        all_three = instances(work)
        subject, baseline, results = [], [], None
        deliver(store_dir, all_three, first)  # warm-up (imports, page cache)
        per_run = len(receiver.bodies)
        read_log(store_dir, args.records)
        for _ in range(args.repeats):
            elapsed, results = deliver(store_dir, all_three, first)
            subject.append(elapsed)
            baseline.append(read_log(store_dir, args.records))
        alone = {}
        for entry in all_three:  # each alone, alternating with its own read of the records
            times, reads = [], []
            for _ in range(args.repeats):
                times.append(deliver(store_dir, [entry], first)[0])
                reads.append(read_log(store_dir, args.records))
            alone[entry.type_name] = {**summarize(times), "ratio": summarize(times)["median"] / summarize(reads)["median"]}
    finally:
        receiver.stop()
    assert all(r["status"] == "ok" and r["delivered"] == args.records for r in results), results
    result = {"records": args.records, "repeats": args.repeats, "subject": summarize(subject),
              "baseline": summarize(baseline), "ratio": summarize(subject)["median"] / summarize(baseline)["median"],
              "alone": alone, "notifications": per_run,
              "log_bytes": os.path.getsize(os.path.join(source, "events.jsonl")), "loadavg": os.getloadavg(),
              "changelog_bytes": os.path.getsize(os.path.join(work, "changes.md"))}
    emit_json(result)
    if args.doc:
        write_section(args.doc, result)
    return 0


def write_section(path: str, result: dict) -> None:
    ms = lambda s: f"{s['median'] * 1000:.0f} ms [{s['min'] * 1000:.0f}–{s['max'] * 1000:.0f}]"  # noqa: E731
    n = result["records"]
    rate = n / result["subject"]["median"]
    alone = result["alone"]
    section = f"""{START}
## 7. Consumers: 10,000 records to the three built-ins

`bench/bench_consumers.py` (method in its docstring). Store: the `steady`
workload, {n + 1:,} records ({result['log_bytes'] / 1e6:.1f} MB of log); the
three built-in consumers (briefing → Markdown file, log → Markdown change log,
push → Apprise `json://` to a local receiver) registered at event 1 get the
{n:,} records after it in one `deliver_all`; baseline: reading the same
records through `Store.history` (which `deliver_all` also does once).
Median [min–max] of {result['repeats']} alternating runs.

| what | time | ratio to reading |
|---|---|---|
| read {n:,} records (`Store.history`) | {ms(result['baseline'])} | 1× |
| `deliver_all`, all three consumers | {ms(result['subject'])} | **{result['ratio']:.2f}×** ({rate:,.0f} records/s) |
| briefing alone | {ms(alone['briefing'])} | {alone['briefing']['ratio']:.2f}× |
| log alone | {ms(alone['log'])} | {alone['log']['ratio']:.2f}× |
| push alone | {ms(alone['push'])} | {alone['push']['ratio']:.2f}× |

Notifications sent in a run: {result['notifications']} (the ticks patch summaries
and sources only: nothing material); change log written: {result['changelog_bytes'] / 1e6:.1f} MB. Each
"alone" row includes its own read of the records and is compared with reads alternating with it. The
machine was shared (load average {result['loadavg'][0]:.1f} on {os.cpu_count()} CPUs at the end): compare ratios,
not absolute times. Before the built-ins shared their records (each consumer had its own JSON copy) a
three-consumer run cost about a third more.
{END}
"""
    replace_block(path, START, END, section)


if __name__ == "__main__":
    sys.exit(main())
