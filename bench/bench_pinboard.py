"""Benchmark 6: the Pinboard's board over a 64-item state with a 100,000-record history.

What: ``GET /`` of a running Pinboard (uvicorn in this process, 127.0.0.1,
keep-alive HTTP/1.1 client) over a file store whose state holds 64 active
items in four layers (the overview benchmark's workload) and whose log holds
100,000 records: patches of summaries and due dates, annotations and their
acknowledgements, checks, and a created-then-withdrawn item every 50 records
(about 2,000 not-active items in the item table).

Baseline, alternated with each board request on the same server and
connection: a static page of the same byte size (a copy of the board's HTML),
served by a route that goes through the same guard middleware and the same
thread pool as the board — only the work differs. Two board figures: with the
server's rendered-board cache off (``board_cache=0``: every request captures
the state, lays out both canvases and fills the templates) and on (the
default: a reload within the same minute and event only fills the page
frame). Also timed: the first request after the server starts (the store's
recovery from its snapshot).

The history is generated once through the store API (``Store.commit`` and
``Store.annotate`` over the in-memory recorder, each batch checked by the
kernel), written with the file store's own encoder, and recovered and
snapshotted by the file recorder; the store is kept under
``$FOLD_BENCH_DIR/pinboard-store-<N>`` (default /tmp/fold-bench) and reused
while its parameters match.

``python bench/bench_pinboard.py [--records N] [--repeats N] [--doc docs/benchmarks.md]``
prints the figures as JSON and, with ``--doc``, replaces its section of the
document (between the ``pinboard`` markers; ``run_all.py`` keeps it).
Benchmarks are not tests: nothing fails on time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_overview import declarations  # noqa: E402
from common import SCRATCH, pair_result, summarize  # noqa: E402
from timing import finish  # noqa: E402
from doc_sections import replace_section  # noqa: E402

from fold_core.store import memory_store  # noqa: E402
from fold_core.store.file import FileRecorder, file_store  # noqa: E402
from fold_core.store.log import encode_record  # noqa: E402
from fold_core.store.meta import write_meta  # noqa: E402

START = datetime(2026, 1, 1, 8, 0, tzinfo=timezone(timedelta(hours=8)))
CLOCK = START + timedelta(days=80)
FORMAT = 2  # bump when the generated history changes


def history(records: int, seed: int = 11):
    """The in-memory store after ``records`` records of a 64-item life (every batch through the kernel)."""
    rng = random.Random(seed)
    store = memory_store(budget=64)
    items = declarations()
    flat = []

    def walk(entries):
        for entry in entries:
            flat.append(entry)
            walk(entry.get("children", ()))

    walk(items)
    at = lambda n: (START + timedelta(seconds=60 * n)).isoformat()  # noqa: E731
    done = store.commit({"batch_id": "init", "declarations": items}, actor="agent", now=at(0))
    assert done.exit_code == 0, done.document
    seq, pending, churn = 1, [], 0
    while seq < records:
        roll = rng.random()
        if seq == records - 1 and churn:  # the last record leaves the 64 items of the workload
            answer = store.commit({"batch_id": f"c{seq}", "declarations": [
                {"id": f"churn-{churn}", "relation": "withdraw", "reason": "过期"}]}, actor="agent", now=at(seq))
        elif seq % 50 == 0:
            churn += 1
            batch = {"batch_id": f"c{seq}", "declarations": [
                {"id": f"churn-{churn}", "title": f"临时事项 {churn}", "weight": "trace", "kind": "fyi"}]}
            if churn > 1:
                batch["declarations"].append({"id": f"churn-{churn - 1}", "relation": "withdraw", "reason": "过期"})
            answer = store.commit(batch, actor="agent", now=at(seq))
        elif roll < 0.12:
            target = rng.choice(flat)["id"]
            answer = store.annotate(item=target, text=f"第 {seq} 条批注：请跟进。", author="user", now=at(seq))
            pending.append(answer.document.get("annotation"))
        elif roll < 0.2 and pending:
            answer = store.commit({"batch_id": f"a{seq}", "acknowledges": pending}, actor="agent", now=at(seq))
            pending = []
        elif roll < 0.25:
            answer = store.commit({"batch_id": f"k{seq}", "declarations": []}, actor="agent", now=at(seq))
        else:
            entry = rng.choice(flat)
            patch = {"id": entry["id"], "relation": f"supersedes:{entry['id']}", "weight": entry["weight"],
                     "kind": entry["kind"], "summary": f"第 {seq} 次更新：{entry['title']}"[:60]}
            if rng.random() < 0.2:
                patch["due_at"] = (CLOCK + timedelta(hours=rng.randint(-48, 240))).isoformat()
            answer = store.commit({"batch_id": f"p{seq}", "declarations": [patch]}, actor="agent", now=at(seq))
        assert answer.exit_code == 0, answer.document
        seq += 1
    return store


def build(path: str, records: int) -> dict:
    """The store at ``path`` (reused when its marker matches)."""
    marker = os.path.join(path, "bench.json")
    want = {"format": FORMAT, "records": records}
    try:
        with open(marker, encoding="utf-8") as file:
            if json.load(file) == want:
                return {"reused": True, "seconds": 0.0}
    except (OSError, ValueError):
        pass
    started = time.perf_counter()
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    store = history(records)
    write_meta(path, 64)
    with open(os.path.join(path, "events.jsonl"), "wb") as log:
        for record in store.history().document["records"]:
            log.write(encode_record(record))
    recorder = FileRecorder(path)  # recovers the log and writes the snapshot on close
    with recorder.session(write=True):
        pass
    recorder.close()
    with open(marker, "w", encoding="utf-8") as file:
        json.dump(want, file)
    return {"reused": False, "seconds": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--warmups", type=int, default=20)
    parser.add_argument("--doc", help="replace the pinboard section of this Markdown file")
    args = parser.parse_args(argv)

    import httpx
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    from fold_host.pinboard.app import create_app
    from fold_host.pinboard.security import Guard
    from fold_host.pinboard.server import Bind, ServerThread

    path = os.path.join(SCRATCH, f"pinboard-store-{args.records}")
    result: dict = {"records": args.records, "build": build(path, args.records)}
    state = file_store(path).state()
    result["state"] = {"event_seq": state.event_seq, "active": sum(1 for item in state.items.values()
                                                                   if item["status"] == "active"),
                       "items": len(state.items), "annotations": len(state.annotations),
                       "log_bytes": os.path.getsize(os.path.join(path, "events.jsonl"))}
    copy: dict = {}
    static = Guard(Starlette(routes=[Route("/static-copy", lambda request: HTMLResponse(copy["page"]))]),
                   token=None, loopback=True)

    for name, cache in (("uncached", 0), ("cached", 32)):
        board = create_app(path, timezone="Asia/Shanghai", clock=lambda: CLOCK, board_cache=cache)

        async def both(scope, receive, send, board=board):
            target = static if scope["type"] == "http" and scope["path"] == "/static-copy" else board
            await target(scope, receive, send)

        with ServerThread(both, Bind("127.0.0.1", 0, None)) as server, httpx.Client(base_url=server.url) as client:
            started = time.perf_counter()
            first = client.get("/")
            result.setdefault("first_request", time.perf_counter() - started)
            assert first.status_code == 200, first.text[:500]
            copy["page"] = first.content
            result["page_bytes"] = len(first.content)
            subject, baseline = [], []
            for index in range(args.warmups + args.repeats):
                for target, samples in (("/", subject), ("/static-copy", baseline)):
                    started = time.perf_counter()
                    response = client.get(target)
                    elapsed = time.perf_counter() - started
                    assert response.status_code == 200
                    if index >= args.warmups:
                        samples.append(elapsed)
            result[name] = pair_result(subject, baseline)
            if name == "cached":  # the other pages, on the same server (not part of the target)
                since = state.event_seq - 20
                for label, target in (("item_page", "/item/r0"), ("changes_page", f"/changes?since={since}")):
                    samples = []
                    for index in range(args.warmups // 4 + args.repeats // 10):
                        started = time.perf_counter()
                        assert client.get(target).status_code == 200
                        samples.append(time.perf_counter() - started)
                    result[label] = summarize(samples[args.warmups // 4:])
    return finish(result, args.doc, write_section)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms" if seconds < 0.1 else f"{seconds * 1000:.0f} ms"


def figure(summary: dict) -> str:
    return f"{ms(summary['median'])} [{ms(summary['q1'])}–{ms(summary['q3'])}]"


def section(result: dict) -> str:
    rows = [("what", "board", "static page of the same size (same run)", "ratio", "target", "verdict"),
            ("---",) * 6]
    for name, label in (("uncached", "`GET /`, every request rendered (`board_cache=0`)"),
                        ("cached", "`GET /`, the default (rendered board kept per event and minute)")):
        pair = result[name]
        verdict = "meets" if pair["ratio"] <= 3 else "**misses**"
        rows.append((label, figure(pair["subject"]), figure(pair["baseline"]), f"{pair['ratio']:.2f}×", "< 3×",
                     verdict))
    rows.append(("`GET /item/r0` (fields, annotations, the item's records of the last 2,000 events)",
                 figure(result["item_page"]), "—", "—", "—", "—"))
    rows.append(("`GET /changes?since=<last − 20>` (records found by bisection)", figure(result["changes_page"]),
                 "—", "—", "—", "—"))
    table = "\n".join("| " + " | ".join(row) + " |" for row in rows)
    state, load = result["state"], " / ".join(f"{value:.2f}" for value in result["machine"]["loadavg"])
    pair = result["uncached"]
    return f"""## 11. Pinboard board (`foldctl serve`)

Generated by `python bench/bench_pinboard.py --doc docs/benchmarks.md`; `run_all.py` keeps this section.

{table}

Method. A file store with {state['active']} active items in four layers (the overview benchmark's
workload) and a history of {state['event_seq']:,} records ({state['log_bytes'] / 2**20:.0f} MiB of
`events.jsonl`; {state['items']:,} items in the item table, {state['annotations']:,} annotations): patches
of summaries and due dates, annotations and acknowledgements, checks, and a created-then-withdrawn item
every 50 records; every batch went through the kernel (`Store.commit` / `Store.annotate` over the memory
recorder), the log was written with the file store's encoder and recovered and snapshotted by the file
recorder. The server is uvicorn in the benchmark's process on 127.0.0.1; one keep-alive httpx client
alternates `GET /` (the board: {result['page_bytes']:,} bytes) with `GET /static-copy`, a route that answers
the same bytes through the same guard middleware and thread pool: {pair['subject']['n']} pairs after
{20} warm-up pairs; the ratio is the ratio of the medians (median of per-pair ratios:
{pair['pair_ratios']['median']:.2f}×). Times are medians [interquartile range], client-side wall time. The
first request after the start (state recovered from the snapshot, first layout) took
{ms(result['first_request'])}. Python {result['machine']['python']}, {result['machine']['nproc']} cores, load
average at the end {load} (other work shares the machine).
"""


def write_section(path: str, result: dict) -> None:
    replace_section(path, "pinboard", section(result))

if __name__ == "__main__":
    sys.exit(main())
