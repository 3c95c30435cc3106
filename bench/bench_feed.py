"""Benchmark: the rss adapter on a 1,000-entry feed vs a bare ``feedparser.parse``.

Method: one deterministic RSS 2.0 document of ``--entries`` entries (mixed
Chinese/English titles, HTML descriptions of ~600 characters with links,
lists and a table, a guid and an RFC 822 date each; ~1 MB). Three ways to
read it, alternated in every round so that all see the same machine noise:

* **baseline** — ``feedparser.parse(body)`` on the bytes, nothing else;
* **adapter** — ``RssAdapter.poll(None)`` end to end: an HTTP GET through
  httpx from a local ``ThreadingHTTPServer`` on 127.0.0.1, feedparser, HTML
  to text (``htmltext``, lxml), identity and fingerprints, ``Observation``
  validation, the cursor;
* **adapter, no HTTP** — ``parse_feed`` plus the observations, on the same bytes.

Figures: median seconds of ``--rounds`` rounds (after one warm-up), entries
(= observations) per second, and each adapter figure as a ratio of the
baseline's rate (target ≥ 0.5×). ``--doc`` writes the section ``feed`` of
``docs/benchmarks.md``. Not a test: nothing fails on time.
"""

from __future__ import annotations

import argparse
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
TOPICS = ["版本发布", "安全公告", "性能改进", "release notes", "security advisory", "weekly digest", "迁移指南"]


def build_feed(entries: int) -> bytes:
    items = []
    for n in range(entries):
        topic = TOPICS[n % len(TOPICS)]
        description = (
            f"<p>{topic} #{n}: 本次更新修复了 <b>{n % 17}</b> 个问题，并改进了同步性能。"
            f"See <a href=\"https://example.org/notes/{n}\">the notes</a> for details.</p>"
            "<ul><li>faster cold start</li><li>更少的内存占用</li><li>fixed a crash on empty input</li></ul>"
            f"<table><tr><th>metric</th><th>before</th><th>after</th></tr>"
            f"<tr><td>p50</td><td>{40 + n % 9} ms</td><td>{20 + n % 7} ms</td></tr></table>"
            "<p>Thanks to everyone who reported issues and tested the preview builds this week.</p>")
        items.append({"title": f"{topic}：Fold {n // 100}.{n % 100} — changes and fixes",
                      "link": f"https://example.org/posts/{n}", "guid": f"urn:example:post:{n}",
                      "description": description,
                      "pubDate": f"Wed, {1 + n % 28:02d} Oct 2026 {n % 24:02d}:{n % 60:02d}:00 GMT"})
    return rss2(items, title="Example engineering blog")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--doc", action="store_true", help="write the 'feed' section of docs/benchmarks.md")
    args = parser.parse_args(argv)

    import feedparser

    from fold_adapters.feeds.entries import parse_feed
    from fold_adapters.feeds.feed import FeedPoller
    from fold_adapters.feeds.rss import RssAdapter, RssSettings

    body = build_feed(args.entries)
    with FeedServer() as server:
        server.route("/feed.xml", body, validators=False)
        url = server.url("/feed.xml")
        adapter = RssAdapter("bench", RssSettings(url=url, first_run="all"))
        poller = FeedPoller("bench", adapter.settings, seen_limit=5000)

        def baseline() -> int:
            return len(feedparser.parse(body).entries)

        def end_to_end() -> int:
            result = adapter.poll(None, now=NOW)
            assert result.health.status == "ok", result.health
            return len(result.observations)

        def no_http() -> int:
            parsed = parse_feed(body, url=url, content_type="application/rss+xml; charset=utf-8")
            return len([poller._observation(entry, 1, parsed.title, NOW) for entry in parsed.entries])

        runs = {"baseline": baseline, "adapter": end_to_end, "adapter, no HTTP": no_http}
        times: dict[str, list[float]] = {name: [] for name in runs}
        counts = {name: run() for name, run in runs.items()}  # warm-up, and the counts
        assert len(set(counts.values())) == 1, counts
        for _ in range(args.rounds):
            for name, run in runs.items():
                started = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - started)

    entries = counts["baseline"]
    base_rate = entries / statistics.median(times["baseline"])
    lines = ["| reader | median | entries/s | ratio to baseline |", "|---|---|---|---|"]
    for name, samples in times.items():
        median = statistics.median(samples)
        rate = entries / median
        lines.append(f"| {name} | {median * 1000:.0f} ms | {rate:,.0f} | {rate / base_rate:.2f}× |")
    table = "\n".join(lines)
    print(table)
    if args.doc:
        section = "\n".join([
            "## 8. Feed adapter",
            "",
            f"`python bench/bench_feed.py --doc` — {entries:,}-entry RSS 2.0 feed ({len(body) / 1e6:.2f} MB: "
            "mixed Chinese/English titles, ~600-character HTML descriptions with a list and a table). "
            "The baseline is a bare `feedparser.parse(body)` on the same bytes; *adapter* is `RssAdapter.poll` end "
            "to end (HTTP GET over loopback from a local `ThreadingHTTPServer`, feedparser, HTML to text with "
            "lxml (`fold_adapters.text.html`), identity and fingerprints, `Observation` validation, the cursor); "
            "*no HTTP* is the same without the fetch. The three alternate in each round; medians of "
            f"{args.rounds} rounds after a warm-up. Target: adapter ≥ 0.5× the baseline. Absolute times follow the "
            "machine's load (given below); the ratio is the figure to compare.",
            "",
            table,
            "",
            f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"load average {os.getloadavg()[0]:.1f} at the end; measured {datetime.now().date().isoformat()}.",
        ])
        replace_section(os.path.join(REPO, "docs", "benchmarks.md"), "feed", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
