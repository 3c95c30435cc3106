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
the state, lays out both canvases and fills the templates — the parts of an
unchanged card kept from the last request are reused) and on (the default: a
reload within the same minute and event only fills the page frame). Each
request is timed in wall-clock time and in CPU time of this process (server
and client threads): on a machine shared with other work the CPU time is
less disturbed. Also timed: the first request after the server starts (the
store's recovery from its snapshot).

``--before COMMIT --rounds N``: the same measurement in new processes, N
rounds, each running the code at COMMIT and then this code (each over its own
hard-linked copy of the store), so the figures before and after a change come
from one run on the same machine; the section then shows both, each as the
median over the rounds with the lowest and highest round.

The history is generated once through the store API (``Store.commit`` and
``Store.annotate`` over the in-memory recorder, each batch checked by the
kernel), written with the file store's own encoder, and recovered and
snapshotted by the file recorder; the store is kept under
``$FOLD_BENCH_DIR/pinboard-store-<N>`` (default /tmp/fold-bench) and reused
while its parameters match.

``python bench/bench_pinboard.py [--records N] [--repeats N] [--before COMMIT --rounds N] [--doc docs/benchmarks.md]``
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
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from doc_sections import replace_section  # noqa: E402
from timing import SCRATCH, code_at, finish, pair_result, run_json, spread, summarize  # noqa: E402

START = datetime(2026, 1, 1, 8, 0, tzinfo=timezone(timedelta(hours=8)))
CLOCK = START + timedelta(days=80)
FORMAT = 2  # bump when the generated history changes


def history(records: int, seed: int = 11):
    """The in-memory store after ``records`` records of a 64-item life (every batch through the kernel)."""
    from bench_overview import declarations
    from fold_core.store import memory_store

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
    from fold_core.store.file import FileRecorder
    from fold_core.store.log import encode_record
    from fold_core.store.meta import write_meta

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


def state_facts(path: str) -> dict:
    from fold_core.store.file import file_store

    state = file_store(path).state()
    return {"event_seq": state.event_seq, "items": len(state.items), "annotations": len(state.annotations),
            "active": sum(1 for item in state.items.values() if item["status"] == "active"),
            "log_bytes": os.path.getsize(os.path.join(path, "events.jsonl"))}


def alternate(client, repeats: int, warmups: int) -> dict:
    """``GET /`` and ``GET /static-copy`` alternately: wall and CPU time per request."""
    wall, cpu = ([], []), ([], [])
    for index in range(warmups + repeats):
        for side, target in enumerate(("/", "/static-copy")):
            started, used = time.perf_counter(), time.process_time()
            response = client.get(target)
            elapsed, spent = time.perf_counter() - started, time.process_time() - used
            assert response.status_code == 200
            if index >= warmups:
                wall[side].append(elapsed)
                cpu[side].append(spent)
    result = pair_result(*wall)
    result["cpu"] = pair_result(*cpu)
    return result


def measure(path: str, repeats: int, warmups: int) -> dict:
    """Both board figures (cache off, cache on) and the other pages, over the store at ``path``."""
    import httpx
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    from fold_host.pinboard.app import create_app
    from fold_host.web.security import Guard
    from fold_host.web.server import Bind, ServerThread

    result: dict = {"state": state_facts(path)}
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
            result[name] = alternate(client, repeats, warmups)
            if name == "cached":  # the other pages, on the same server (not part of the target)
                since = result["state"]["event_seq"] - 20
                for label, target in (("item_page", "/item/r0"), ("changes_page", f"/changes?since={since}")):
                    samples = []
                    for index in range(warmups // 4 + repeats // 10):
                        started = time.perf_counter()
                        assert client.get(target).status_code == 200
                        samples.append(time.perf_counter() - started)
                    result[label] = summarize(samples[warmups // 4:])
    result["parts"] = handler_parts(path, repeats)
    return result


def handler_parts(path: str, repeats: int) -> dict:
    """CPU time of this thread in the board's handler (cache off) and in its parts, median of interleaved calls.

    ``state``: the long-lived store's read; ``layout``: ``board()`` — the
    capture of the state and both canvases laid out; ``request``: the whole
    handler (also the templates and the response), called as the server calls it.
    """
    from starlette.requests import Request

    from fold_host.pinboard.app import create_app
    from fold_host.pinboard.board import BoardQuery, board

    app = create_app(path, timezone="Asia/Shanghai", clock=lambda: CLOCK, board_cache=0)
    pinboard, handler = app.pinboard, app.app.routes[0].endpoint
    scope = {"type": "http", "method": "GET", "path": "/", "query_string": b"", "root_path": "", "scheme": "http",
             "headers": [(b"host", b"127.0.0.1")], "server": ("127.0.0.1", 80)}
    state, now, query = pinboard.state(), CLOCK.replace(second=0).isoformat(), BoardQuery()
    parts = {"state": pinboard.state, "layout": lambda: board(state, now, query),
             "request": lambda: handler(Request(scope))}
    samples: dict = {name: [] for name in parts}
    for index in range(repeats + 10):
        for name, part in parts.items():
            used = time.thread_time()
            part()
            if index >= 10:
                samples[name].append(time.thread_time() - used)
    return {name: summarize(values)["median"] for name, values in samples.items()}


def linked_copy(source: str, label: str) -> str:
    """A fresh copy of the store whose files are hard links (a version that rewrites a file renames a new one)."""
    target = f"{source}-{label}"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, copy_function=os.link)
    return target


def compare(path: str, before: str, rounds: int, repeats: int, warmups: int) -> dict:
    """Rounds of (the code at ``before``, this code), each in a new process over its own copy of the store."""
    codes = {"before": code_at(before, REPO), "after": None}
    runs: dict = {"before": [], "after": []}
    for round_ in range(rounds):
        for label, code in codes.items():
            print(f"round {round_ + 1}/{rounds}: {label}…", file=sys.stderr, flush=True)
            copy = linked_copy(path, label)
            runs[label].append(run_json([sys.executable, os.path.abspath(__file__), "--store", copy,
                                         "--repeats", str(repeats), "--warmups", str(warmups)], code, cwd=REPO))
            shutil.rmtree(copy, ignore_errors=True)
    result: dict = {"before_code": before, "rounds": rounds, "runs": runs}
    for label, results in runs.items():
        result[label] = {name: {"ratio": spread([run[name]["ratio"] for run in results]),
                                "cpu_ratio": spread([run[name]["cpu"]["ratio"] for run in results]),
                                "board_ms": spread([run[name]["subject"]["median"] * 1000 for run in results]),
                                "static_ms": spread([run[name]["baseline"]["median"] * 1000 for run in results])}
                         for name in ("uncached", "cached")}
    last = runs["after"][-1]
    result.update({key: last[key] for key in ("state", "page_bytes", "first_request", "item_page",
                                               "changes_page", "uncached", "cached", "parts")})
    result["page_bytes_before"] = runs["before"][-1]["page_bytes"]
    result["parts_before"] = runs["before"][-1]["parts"]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--warmups", type=int, default=20)
    parser.add_argument("--store", help="measure this store (no history is built)")
    parser.add_argument("--before", help="also measure the code at this commit, in alternating rounds")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--doc", help="replace the pinboard section of this Markdown file")
    args = parser.parse_args(argv)
    if args.store:
        result = measure(args.store, args.repeats, args.warmups)
    else:
        path = os.path.join(SCRATCH, f"pinboard-store-{args.records}")
        built = build(path, args.records)
        load = os.getloadavg()
        if args.before:
            result = compare(path, args.before, args.rounds, args.repeats, args.warmups)
        else:
            result = measure(path, args.repeats, args.warmups)
        result.update({"records": args.records, "build": built, "loadavg_start": load, "repeats": args.repeats,
                       "warmups": args.warmups})
    return finish(result, args.doc, write_section)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms" if seconds < 0.1 else f"{seconds * 1000:.0f} ms"


def figure(summary: dict) -> str:
    return f"{ms(summary['median'])} [{ms(summary['q1'])}–{ms(summary['q3'])}]"


def ratio_range(figure: dict) -> str:
    return f"{figure['median']:.2f}× [{figure['min']:.2f}–{figure['max']:.2f}]"


def ms_range(figure: dict) -> str:
    return f"{figure['median']:.2f} ms [{figure['min']:.2f}–{figure['max']:.2f}]"


def before_after(result: dict) -> str:
    """The table of the figures before and after, over the rounds (empty without ``--before``)."""
    if "before_code" not in result:
        return ""
    before, after = result["before"], result["after"]
    rows = [(f"what (median of {result['rounds']} rounds [lowest–highest])", f"before (`{result['before_code']}`)",
             "after", "target", "verdict"), ("---",) * 5]
    for name, label in (("uncached", "`GET /`, every request rendered (`board_cache=0`)"),
                        ("cached", "`GET /`, the default (rendered board kept)")):
        verdict = "meets" if after[name]["ratio"]["median"] <= 3 else "**misses**"
        rows.append((f"{label}: board / static page, wall clock", ratio_range(before[name]["ratio"]),
                     ratio_range(after[name]["ratio"]), "≤ 3×", verdict))
        rows.append(("the same, CPU time of the process (server and client)", ratio_range(before[name]["cpu_ratio"]),
                     ratio_range(after[name]["cpu_ratio"]), "—", "—"))
        rows.append(("board, median per request", ms_range(before[name]["board_ms"]),
                     ms_range(after[name]["board_ms"]), "—", "—"))
        rows.append(("static page of the same size, median", ms_range(before[name]["static_ms"]),
                     ms_range(after[name]["static_ms"]), "—", "—"))
    parts = [("request", "the whole handler"), ("layout", "of which: capture and both canvases laid out"),
             ("state", "of which: the store's read")]
    for key, label in parts:
        rows.append((f"CPU in the handler (cache off), {label}", ms(result["parts_before"][key]),
                     ms(result["parts"][key]), "—", "—"))
    rows.append(("page size", f"{result['page_bytes_before']:,} bytes", f"{result['page_bytes']:,} bytes", "—", "—"))
    table = "\n".join("| " + " | ".join(row) + " |" for row in rows)
    return f"""{table}

Each round runs the code at `{result['before_code']}` and then this code, each in a new process over its own
hard-linked copy of the store; the figures of the last round of this code follow.

"""


def section(result: dict) -> str:
    rows = [("what", "board", "static page of the same size (same run)", "ratio", "ratio, CPU time", "target",
             "verdict"), ("---",) * 7]
    for name, label in (("uncached", "`GET /`, every request rendered (`board_cache=0`)"),
                        ("cached", "`GET /`, the default (rendered board kept per event and minute)")):
        pair = result[name]
        verdict = "meets" if pair["ratio"] <= 3 else "**misses**"
        rows.append((label, figure(pair["subject"]), figure(pair["baseline"]), f"{pair['ratio']:.2f}×",
                     f"{pair['cpu']['ratio']:.2f}×", "≤ 3×", verdict))
    rows.append(("`GET /item/r0` (fields, annotations, the item's records of the last 2,000 events)",
                 figure(result["item_page"]), "—", "—", "—", "—", "—"))
    rows.append(("`GET /changes?since=<last − 20>` (records found by bisection)", figure(result["changes_page"]),
                 "—", "—", "—", "—", "—"))
    table = "\n".join("| " + " | ".join(row) + " |" for row in rows)
    state, load = result["state"], " / ".join(f"{value:.2f}" for value in result["machine"]["loadavg"])
    start = " / ".join(f"{value:.2f}" for value in result["loadavg_start"])
    pair, parts = result["uncached"], result["parts"]
    return f"""## 11. Pinboard board (`foldctl serve`)

Generated by `python bench/bench_pinboard.py --before <commit> --doc docs/benchmarks.md` (without `--before`:
this code alone); `run_all.py` keeps this section.

{before_after(result)}{table}

Method. A file store with {state['active']} active items in four layers (the overview benchmark's
workload) and a history of {state['event_seq']:,} records ({state['log_bytes'] / 2**20:.0f} MiB of
`events.jsonl`; {state['items']:,} items in the item table, {state['annotations']:,} annotations): patches
of summaries and due dates, annotations and acknowledgements, checks, and a created-then-withdrawn item
every 50 records; every batch went through the kernel (`Store.commit` / `Store.annotate` over the memory
recorder), the log was written with the file store's encoder and recovered and snapshotted by the file
recorder. The server is uvicorn in the benchmark's process on 127.0.0.1; one keep-alive httpx client
alternates `GET /` (the board: {result['page_bytes']:,} bytes) with `GET /static-copy`, a route that answers
the same bytes through the same guard middleware and thread pool: {pair['subject']['n']} pairs after
{result['warmups']} warm-up pairs; the ratio is the ratio of the medians (median of per-pair ratios:
{pair['pair_ratios']['median']:.2f}×, interquartile range {pair['pair_ratios']['q1']:.2f}–{pair['pair_ratios']['q3']:.2f}×).
Times are medians [interquartile range], client-side wall time; the CPU-time ratio uses the process's CPU time
per request (server and client threads), which waiting for a core does not count. With the cache off, a
request still captures the state and lays out both canvases; what it reuses is the parts of the cards whose
inputs did not change (plans, boxes, markup). The handler's CPU time (this thread, cache off, the median of
{result['repeats']} calls): {ms(parts['request'])} in all, {ms(parts['layout'])} of it the capture and the
two layouts, {ms(parts['state'])} the store's read; the rest is the templates and the response. The first
request after the start (state recovered from the snapshot, first layout) took {ms(result['first_request'])}.
Python {result['machine']['python']}, {result['machine']['nproc']} cores, load average {start} at the start
and {load} at the end (other work shares the machine).
"""


def write_section(path: str, result: dict) -> None:
    replace_section(path, "pinboard", section(result))


if __name__ == "__main__":
    sys.exit(main())
