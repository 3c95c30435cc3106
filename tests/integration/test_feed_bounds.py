"""What a feed server says cannot stop the host: delays are clamped, bodies bounded, trickles ended.

* ``Retry-After: 99999999999999999999`` (or a 400-digit number) is a failed
  poll of that source, clamped to ``[host] max_backoff`` — never an
  "internal error" of the whole tick;
* a far-future ``Retry-After`` (2099) or ``max-age`` waits at most
  ``max_backoff`` (default one day);
* a gzip bomb (1 MB on the wire, 1 GB decompressed) costs at most about the
  cap (``max_bytes``), measured as the tick's peak memory; ``max_bytes`` itself
  is bounded;
* a server that trickles its headers is abandoned at ``poll_timeout``, and
  the poll's thread ends with it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from fold_host.hostdb import open_host_db
from support.feed_server import FeedServer, rss2
from support.hostile_http import gzip_bomb, trickle_headers
from tests.support.measured import run_measured

NOW = "2026-10-09T08:00:00+08:00"


@pytest.fixture(scope="module")
def server():
    with FeedServer() as running:
        yield running


def environment() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(("FOLD_", "XDG_"))}


def feed_config(tmp_path: Path, url: str, *, host: str = "", source: str = "") -> Path:
    config = tmp_path / "plugins.toml"
    config.write_text(f'[store]\npath = "store"\n[host]\n{host}\n[[adapters]]\nname = "news"\ntype = "rss"\n'
                      f'url = "{url}"\nevery = "5m"\n{source}\n', encoding="utf-8")
    return config


def foldctl(tmp_path: Path, *args: str, timeout: float = 120):
    return run_measured(["--config", str(tmp_path / "plugins.toml"), *args], cwd=tmp_path, env=environment(),
                        timeout=timeout)


def next_poll(tmp_path: Path) -> datetime:
    """The next poll host.db holds (doctor shows it only while a daemon runs)."""
    with open_host_db(tmp_path / "store") as db:
        return datetime.fromisoformat(db.source_rows()["news"]["next_poll_at"])


HUGE = {"twenty nines": "9" * 20, "four hundred digits": "9" * 400, "year 2099": "Wed, 21 Oct 2099 07:28:00 GMT"}


@pytest.mark.parametrize("retry_after", list(HUGE.values()), ids=list(HUGE))
def test_an_absurd_retry_after_fails_that_source_for_at_most_max_backoff(tmp_path, server, retry_after):
    path = f"/limited-{len(retry_after)}-{retry_after[:4]}.xml"
    route = server.route(path, status=429, headers={"Retry-After": retry_after})
    feed_config(tmp_path, server.url(path))
    done = foldctl(tmp_path, "tick", "--now", NOW)
    assert done.code == 0 and "internal error" not in done.err, done.err
    assert json.loads(done.out)["polled"] == [{"source": "news", "status": "failed", "observations": 0}]
    assert "source news failed (rate_limited)" in done.err
    now = datetime.fromisoformat(NOW)
    assert now < next_poll(tmp_path) <= now + timedelta(days=1)
    # A day later the source is polled again, and what it says now is read.
    route.status, route.headers = 200, {}
    route.body = rss2([{"title": "back again", "guid": "g-1"}])
    done = foldctl(tmp_path, "tick", "--now", (now + timedelta(days=1, seconds=1)).isoformat())
    assert done.code == 0 and json.loads(done.out)["polled"][0] == {"source": "news", "status": "ok",
                                                                    "observations": 1}


@pytest.mark.parametrize("header", [{"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT"},
                                    {"Cache-Control": "max-age=999999999"}], ids=["retry-after", "max-age"])
def test_max_backoff_bounds_every_delay_a_server_asks_for(tmp_path, server, header):
    path = f"/asks-{next(iter(header))}.xml"
    status = 503 if "Retry-After" in header else 200
    server.route(path, rss2([{"title": "one", "guid": "g-1"}]), status=status, headers=header, validators=False)
    feed_config(tmp_path, server.url(path), host='max_backoff = "2h"')
    done = foldctl(tmp_path, "tick", "--now", NOW)
    assert done.code == 0, done.err
    when = next_poll(tmp_path)
    assert when <= datetime.fromisoformat(NOW) + timedelta(hours=2), when


def test_a_gzip_bomb_costs_at_most_about_the_cap(tmp_path, server):
    cap = 16 * 1024 * 1024
    server.route("/plain.xml", rss2([{"title": "fine", "guid": "g-1"}]))
    server.route("/bomb.xml", writer=gzip_bomb(1024 ** 3))
    plain, bomb = tmp_path / "plain", tmp_path / "bomb"
    plain.mkdir(), bomb.mkdir()
    feed_config(plain, server.url("/plain.xml"), source=f"max_bytes = {cap}")
    feed_config(bomb, server.url("/bomb.xml"), source=f"max_bytes = {cap}")
    baseline = foldctl(plain, "tick", "--now", NOW)
    assert baseline.code == 0 and json.loads(baseline.out)["polled"][0]["status"] == "ok", baseline.err
    exploded = foldctl(bomb, "tick", "--now", NOW)
    assert exploded.code == 0 and json.loads(exploded.out)["polled"][0]["status"] == "failed", exploded.err
    assert "(too_large)" in exploded.err and f"{cap:,}" in exploded.err
    grown = exploded.max_rss - baseline.max_rss
    print(f"gzip bomb: plain tick {baseline.max_rss_mb:.0f} MB, bomb tick {exploded.max_rss_mb:.0f} MB")
    assert grown < 3 * cap, f"the bomb's tick peaked {grown / 1024 ** 2:.0f} MB above a plain tick's"


def test_max_bytes_is_bounded(tmp_path, server):
    feed_config(tmp_path, server.url("/plain.xml"), source=f"max_bytes = {1024 ** 3}")
    done = foldctl(tmp_path, "doctor")
    assert done.code == 2 and "field 'max_bytes'" in done.err and "67108864" in done.err, done.err


def test_a_feed_trickling_its_headers_is_abandoned_at_poll_timeout_with_its_thread(server):
    from fold_adapters.feeds.rss import RssAdapter, RssSettings

    server.route("/trickle.xml", writer=trickle_headers(every=0.1))
    adapter = RssAdapter("slow", RssSettings(url=server.url("/trickle.xml"), poll_timeout="2s", timeout="30s"))
    result: list = []
    poll = threading.Thread(target=lambda: result.append(adapter.poll(None, now=datetime.now(timezone.utc))),
                            name="poll-slow", daemon=True)
    started = time.monotonic()
    poll.start()
    poll.join(timeout=20)
    took = time.monotonic() - started
    assert not poll.is_alive(), "the poll thread is still reading the trickle"
    [outcome] = result
    assert outcome.health.status == "failed" and outcome.health.error_class == "timeout", outcome.health
    assert "(poll_timeout)" in outcome.health.message and took < 2 + 3, (took, outcome.health.message)
    print(f"header trickle: the poll returned after {took:.1f}s (poll_timeout 2s)")
