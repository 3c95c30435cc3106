"""Benchmark: 200 feeds polled in one rss instance vs the same 200 conditional GETs made directly with httpx.

Method: ``--feeds`` small RSS 2.0 feeds (10 entries each) served by four
local ``ThreadingHTTPServer`` instances on 127.0.0.1–127.0.0.4 (four hosts,
so the per-host cap is exercised), all sending ETag and Last-Modified. One
rss instance names them all (``feeds = [...]``, ``max_connections = 8``,
``max_per_host = 2``); a first poll reads every feed (its time is shown for
information), after which every poll is conditional and every feed answers
304 — the steady state of a feed reader. Two ways to do that steady-state
round, alternated in every round so both see the same machine noise:

* **baseline** — one ``httpx.Client`` and a pool of 8 threads making the 200
  GETs with ``If-None-Match`` / ``If-Modified-Since`` taken from the
  adapter's cursor, nothing else;
* **rss instance** — ``RssAdapter.poll(cursor)`` end to end: the feed list,
  the due check, the polite pool, the same GETs through
  ``fold_adapters.feeds.fetch``, each feed's state and health line, the
  cursor (JSON-checked, as the host stores it).

Every answer of both must be a 304. Figures: median seconds of ``--rounds``
rounds after one warm-up, and the instance's time as a ratio of the
baseline's (target ≤ 2×). ``--doc`` writes the section ``feeds-many`` of
``docs/benchmarks.md``. Not a test: nothing fails on time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [REPO, os.path.join(REPO, "tests"), HERE]

from doc_sections import replace_section  # noqa: E402
from support.feed_server import FeedServer, rss2  # noqa: E402

NOW = datetime(2026, 10, 9, 8, 0, tzinfo=timezone.utc)
HOSTS = ("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4")
WORKERS = 8


def feed_body(n: int) -> bytes:
    return rss2([{"title": f"feed {n} post {j}", "guid": f"f{n}-p{j}", "link": f"https://example.org/{n}/{j}",
                  "description": f"<p>Post {j} of feed {n}: a short paragraph of text.</p>",
                  "pubDate": f"Wed, 07 Oct 2026 {j:02d}:00:00 GMT"} for j in range(10)], title=f"Feed {n}")


def baseline(urls: list[str], cursor: dict) -> list[int]:
    """The 200 conditional GETs, directly: one client, 8 threads."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from fold_adapters.feeds.many import feed_key

    states = cursor["feeds"]
    with httpx.Client(limits=httpx.Limits(max_connections=WORKERS, max_keepalive_connections=WORKERS)) as client:
        def get(url: str) -> int:
            state = states[feed_key(url)]
            headers = {"If-None-Match": state["etag"], "If-Modified-Since": state["last_modified"]}
            return client.get(url, headers=headers, timeout=30).status_code

        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            return list(pool.map(get, urls))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--feeds", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--doc", action="store_true", help="write the 'feeds-many' section of docs/benchmarks.md")
    args = parser.parse_args(argv)

    from fold_adapters.feeds.rss import RssAdapter, RssSettings

    servers = [FeedServer(host) for host in HOSTS]
    try:
        urls, routes = [], []
        for n in range(args.feeds):
            server = servers[n % len(servers)]
            routes.append(server.route(f"/feed-{n}.xml", feed_body(n)))
            urls.append(server.url(f"/feed-{n}.xml"))
        adapter = RssAdapter("bench", RssSettings(feeds=urls, first_run="all", max_connections=WORKERS,
                                                  max_per_host=2))
        started = time.perf_counter()
        first = adapter.poll(None, now=NOW)
        first_seconds = time.perf_counter() - started
        assert first.health.status == "ok" and first.health.message is None, first.health
        assert len(first.observations) == args.feeds * 10, len(first.observations)
        cursor = json.loads(json.dumps(first.cursor))

        def instance() -> None:
            result = adapter.poll(cursor, now=NOW)
            assert result.observations == [] and result.health.message is None, result.health
            json.loads(json.dumps(result.cursor))

        def direct() -> None:
            assert set(baseline(urls, cursor)) == {304}

        runs = {"baseline (httpx, 8 threads)": direct, "rss instance (RssAdapter.poll)": instance}
        times: dict[str, list[float]] = {name: [] for name in runs}
        for run in runs.values():  # warm-up
            run()
        for _ in range(args.rounds):
            for name, run in runs.items():
                before = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - before)
        answered = sorted({status for route in routes for status in route.answered[1:]})
        assert answered == [304], answered
    finally:
        for server in servers:
            server.close()

    base = statistics.median(times["baseline (httpx, 8 threads)"])
    lines = ["| 200 conditional GETs, every answer 304 | median | ratio to baseline |", "|---|---|---|"]
    for name, samples in times.items():
        median = statistics.median(samples)
        lines.append(f"| {name} | {median * 1000:.0f} ms | {median / base:.2f}× |")
    table = "\n".join(lines)
    ratio = statistics.median(times["rss instance (RssAdapter.poll)"]) / base
    print(table)
    print(f"first poll (every feed read and parsed): {first_seconds * 1000:.0f} ms")
    if args.doc:
        section = "\n".join([
            "## 12. Many feeds in one rss instance",
            "",
            f"`python bench/bench_feeds_many.py --doc` — {args.feeds} small RSS feeds (10 entries each) on four "
            "local HTTP servers (127.0.0.1–127.0.0.4), named by one rss instance (`feeds = [...]`, "
            "`max_connections = 8`, `max_per_host = 2`). After a first poll that reads them all, every poll is "
            "conditional and every feed answers 304. The baseline makes the same 200 conditional GETs directly "
            "(one `httpx.Client`, 8 threads, validators from the instance's cursor); the instance's figure is "
            "`RssAdapter.poll` end to end (feed list, due check, the polite pool, each feed's state and health "
            f"line, the cursor). The two alternate in each round; medians of {args.rounds} rounds after a "
            "warm-up. Target: the instance ≤ 2× the baseline.",
            "",
            table,
            "",
            f"Ratio: **{ratio:.2f}×**. The first poll (every feed fetched and parsed, "
            f"{args.feeds * 10:,} observations) took {first_seconds * 1000:.0f} ms.",
            "",
            f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"load average {os.getloadavg()[0]:.1f} at the end; measured {datetime.now().date().isoformat()}.",
        ])
        replace_section(os.path.join(REPO, "docs", "benchmarks.md"), "feeds-many", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
