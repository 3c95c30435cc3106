"""The rss adapter against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from importlib.metadata import version

import pytest
from pydantic import ValidationError

from conformance.adapter_suite import AdapterConformance
from fold_adapters.feeds.rss import RssAdapter, RssSettings
from fold_core.plugins import load_types
from fold_host.plugins import plugin_manager as get_plugin_manager
from support.feed_server import FeedServer, atom, rdf, rss2, silent_socket

NOW = datetime(2026, 10, 9, 8, 0, tzinfo=timezone.utc)
_paths = itertools.count()


@pytest.fixture(scope="module")
def server():
    with FeedServer() as running:
        yield running


def path() -> str:
    return f"/feed-{next(_paths)}.xml"


def adapter(url: str, **settings) -> RssAdapter:
    return RssAdapter("blogs", RssSettings(url=url, **settings))


def poll(feed: RssAdapter, cursor=None):
    result = feed.poll(json.loads(json.dumps(cursor)), now=NOW)
    json.dumps(result.cursor)
    return result


ITEMS = [
    {"title": "Fold 1.2 released", "link": "https://example.org/releases/1.2", "guid": "rel-1.2",
     "description": "<p>Faster <b>commits</b>.</p><table><tr><td>op</td><td>ms</td></tr>"
                    "<tr><td>commit</td><td>3</td></tr></table>", "pubDate": "Wed, 07 Oct 2026 10:00:00 GMT"},
    {"title": "安全公告：请升级", "link": "https://example.org/sec/7", "description": "影响 1.1 及更早版本。",
     "pubDate": "Thu, 08 Oct 2026 02:30:00 +0800"},
]


# -- the three feed families and encodings ---------------------------------------------------


def test_rss2_entries_become_observations(server):
    route = server.route(p := path(), rss2(ITEMS, title="Fold releases"))
    result = poll(adapter(server.url(p)))
    assert result.health.status == "ok"
    first, second = result.observations
    assert first.id == "blogs:rel-1.2" and first.title == "Fold 1.2 released"
    assert first.sender == "Fold releases" and first.channel == "rss" and first.source == "blogs"
    assert first.at == "2026-10-07T10:00:00+00:00"
    assert "Faster commits." in first.text and "commit" in first.text and "<" not in first.text
    assert first.url == "https://example.org/releases/1.2"
    assert second.id == "blogs:https://example.org/sec/7"  # no guid: the link is the identity
    assert second.at == "2026-10-07T18:30:00+00:00" and second.text == "影响 1.1 及更早版本。"
    assert route.requests[0]["user-agent"].startswith(f"Fold/{version('fold-state')} ")


def test_atom_entries(server):
    server.route(p := path(), atom([
        {"id": "urn:uuid:1", "title": "Atom one", "link": "https://example.org/a/1",
         "updated": "2026-10-05T12:00:00+02:00", "content": "<div>Hello <em>Atom</em></div>"},
        {"id": "urn:uuid:2", "title": "Atom two", "summary": "plain summary"},
    ]), content_type="application/atom+xml")
    result = poll(adapter(server.url(p)))
    ids = [o.id for o in result.observations]
    assert ids == ["blogs:urn:uuid:1", "blogs:urn:uuid:2"]
    one = result.observations[0]
    assert one.text == "Hello Atom" and one.at == "2026-10-05T10:00:00+00:00" and one.url == "https://example.org/a/1"
    assert result.observations[1].text == "plain summary"


def test_rss1_rdf_entries(server):
    server.route(p := path(), rdf([{"about": "https://example.org/r/1", "title": "RDF item",
                                    "link": "https://example.org/r/1", "description": "rdf body",
                                    "date": "2026-10-01T08:00:00+08:00"}]), content_type="application/rdf+xml")
    (only,) = poll(adapter(server.url(p))).observations
    assert only.id == "blogs:https://example.org/r/1" and only.text == "rdf body"
    assert only.at == "2026-10-01T00:00:00+00:00" and only.title == "RDF item"


@pytest.mark.parametrize("content_type", ["application/xml", "application/rss+xml; charset=gbk"])
def test_gbk_encoded_feed(server, content_type):
    body = rss2([{"title": "中文标题：版本发布", "guid": "gbk-1", "description": "这是用 GBK 编码的正文。"}],
                title="中文博客", encoding="GBK")
    assert "中文".encode("gbk") in body
    server.route(p := path(), body, content_type=content_type)
    result = poll(adapter(server.url(p)))
    (only,) = result.observations
    assert only.title == "中文标题：版本发布" and only.text == "这是用 GBK 编码的正文。" and only.sender == "中文博客"


def test_malformed_feed_keeps_good_entries_and_says_so(server):
    body = rss2([{"title": "good one", "guid": "m-1", "description": "fine"}],
                raw_items="<item><title>bad &nbsp; entity</title><guid>m-2</guid></item>")
    server.route(p := path(), body)
    result = poll(adapter(server.url(p)))
    assert result.health.status == "ok"
    assert "blogs:m-1" in [o.id for o in result.observations]
    assert any("not well-formed" in note for note in result.health.notes)


def test_not_a_feed_is_a_parse_failure(server):
    server.route(p := path(), b"<html><body>nothing here</body></html>", content_type="text/html")
    result = poll(adapter(server.url(p)))
    assert result.health.status == "failed" and result.health.error_class == "parse"
    assert result.observations == []


# -- HTTP behaviour --------------------------------------------------------------------------


def test_conditional_get_and_304(server):
    route = server.route(p := path(), rss2(ITEMS))
    feed = adapter(server.url(p))
    first = poll(feed)
    second = poll(feed, first.cursor)
    assert route.requests[1]["if-none-match"] == route.etag
    assert "if-modified-since" in route.requests[1]
    assert second.health.status == "ok" and second.observations == []


def test_three_polls_in_a_row_produce_no_duplicates(server):
    server.route(p := path(), rss2(ITEMS), validators=False)  # always a full 200 answer
    feed, cursor, ids = adapter(server.url(p)), None, []
    for _ in range(3):
        result = poll(feed, cursor)
        ids += [o.id for o in result.observations]
        cursor = result.cursor
    assert sorted(ids) == sorted(["blogs:rel-1.2", "blogs:https://example.org/sec/7"])


def test_changed_entry_yields_one_new_version(server):
    route = server.route(p := path(), rss2(ITEMS), validators=False)
    feed = adapter(server.url(p))
    cursor = poll(feed).cursor
    route.body = rss2([{**ITEMS[0], "description": "<p>Faster commits, and a fix.</p>"}, ITEMS[1]])
    changed = poll(feed, cursor)
    assert [o.id for o in changed.observations] == ["blogs:rel-1.2#v2"]
    assert changed.observations[0].meta["revision"] == 2 and "a fix" in changed.observations[0].text
    assert poll(feed, changed.cursor).observations == []
    route.body = rss2([{**ITEMS[0], "title": "Fold 1.2 released (updated)"}, ITEMS[1]])
    assert [o.id for o in poll(feed, changed.cursor).observations] == ["blogs:rel-1.2#v3"]


def test_429_with_retry_after(server):
    server.route(p := path(), b"slow down", status=429, headers={"Retry-After": "120"})
    result = poll(adapter(server.url(p)))
    assert result.health.status == "failed" and result.health.error_class == "rate_limited"
    assert result.health.retry_after == 120


def test_503_with_an_http_date_retry_after(server):
    later = format_datetime(NOW + timedelta(minutes=10), usegmt=True)
    server.route(p := path(), b"maintenance", status=503, headers={"Retry-After": later})
    result = poll(adapter(server.url(p)))
    assert result.health.error_class == "unavailable" and result.health.retry_after == 600


def test_permanent_redirect_moves_the_stored_url(server):
    old, new = path(), path()
    old_route = server.route(old, status=301, headers={"Location": new})
    server.route(new, rss2(ITEMS))
    feed = adapter(server.url(old))
    first = poll(feed)
    assert len(first.observations) == 2 and first.cursor["url"] == server.url(new)
    assert any("moved permanently" in note and server.url(new) in note for note in first.health.notes)
    poll(feed, first.cursor)
    assert len(old_route.requests) == 1  # the second poll went straight to the new URL


def test_temporary_redirect_keeps_the_url(server):
    old, new = path(), path()
    server.route(old, status=302, headers={"Location": new})
    server.route(new, rss2(ITEMS))
    result = poll(adapter(server.url(old)))
    assert len(result.observations) == 2 and result.cursor["url"] == server.url(old)
    assert result.health.notes == ()


def test_redirect_to_another_scheme_is_refused(server):
    server.route(p := path(), status=301, headers={"Location": "file:///etc/passwd"})
    result = poll(adapter(server.url(p)))
    assert result.health.status == "failed" and result.health.error_class == "redirect"


def test_410_gone_disables_the_source(server):
    route = server.route(p := path(), b"gone", status=410)
    feed = adapter(server.url(p))
    result = poll(feed)
    health = result.health
    assert health.status == "failed" and health.disabled and health.error_class == "gone"
    assert "410" in health.message and "disabled" in health.message
    again = poll(feed, result.cursor)
    assert again.health.disabled and len(route.requests) == 1  # keeps saying so without fetching
    moved = RssAdapter("blogs", RssSettings(url=server.url(q := path())))
    server.route(q, rss2(ITEMS))
    assert len(poll(moved, result.cursor).observations) == 2  # a new url in plugins.toml starts again


def test_min_interval_from_cache_control_and_ttl(server):
    server.route(p := path(), rss2(ITEMS, ttl=90), headers={"Cache-Control": "public, max-age=600"})
    feed = adapter(server.url(p))
    first = poll(feed)
    assert first.health.min_interval == 5400  # the larger of max-age (600 s) and ttl (90 min)
    assert poll(feed, first.cursor).health.min_interval == 5400  # a 304 says so too
    server.route(q := path(), rss2(ITEMS), headers={"Cache-Control": "max-age=300"})
    assert poll(adapter(server.url(q))).health.min_interval == 300


def test_server_that_never_answers_times_out():
    sock = silent_socket()
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/feed.xml"
        result = poll(adapter(url, timeout="1s"))
    finally:
        sock.close()
    assert result.health.status == "failed" and result.health.error_class == "timeout"
    assert "1s" in result.health.message


def test_connection_refused_is_a_network_failure():
    sock = silent_socket()
    port = sock.getsockname()[1]
    sock.close()
    result = poll(adapter(f"http://127.0.0.1:{port}/feed.xml"))
    assert result.health.status == "failed" and result.health.error_class == "network"


def test_oversized_feed_is_abandoned(server):
    big = rss2([{"title": f"entry {i}", "guid": f"big-{i}", "description": "x" * 500} for i in range(200)])
    server.route(p := path(), big)
    result = poll(adapter(server.url(p), max_bytes=16_384))
    assert result.health.error_class == "too_large" and "declares" in result.health.message
    server.route(q := path(), big, chunked=True)  # no Content-Length: counted while streaming
    result = poll(adapter(server.url(q), max_bytes=16_384))
    assert result.health.error_class == "too_large" and "more than the cap" in result.health.message
    assert result.observations == [] and result.cursor["seen"] == {}


def test_zip_bomb_sized_declared_length_is_refused_before_reading(server):
    server.route(p := path(), rss2(ITEMS), declared_length=50 * 1024 ** 3)
    result = poll(adapter(server.url(p)))
    assert result.health.error_class == "too_large" and "53,687,091,200" in result.health.message


# -- first run, settings, registration ------------------------------------------------------


@pytest.mark.parametrize(("policy", "expected"), [
    ("all", {"blogs:rel-1.2", "blogs:https://example.org/sec/7"}),
    ("new", set()),
    ("last:1", {"blogs:https://example.org/sec/7"}),  # the newest by date, not the first in the feed
    ("since:2026-10-07", {"blogs:rel-1.2", "blogs:https://example.org/sec/7"}),
    ("since:2026-10-08", set()),
])
def test_first_run_policies(server, policy, expected):
    route = server.route(p := path(), rss2(ITEMS), validators=False)
    feed = adapter(server.url(p), first_run=policy)
    first = poll(feed)
    assert {o.id for o in first.observations} == expected
    route.body = rss2(ITEMS + [{"title": "later", "guid": "later-1", "description": "new"}])
    assert [o.id for o in poll(feed, first.cursor).observations] == ["blogs:later-1"]


@pytest.mark.parametrize("bad", [{"url": "file:///etc/passwd"}, {"url": "ftp://x/feed"},
                                 {"url": "https://x/f", "first_run": "last:0"},
                                 {"url": "https://x/f", "first_run": "since:yesterday"},
                                 {"url": "https://x/f", "unknown": 1}])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValidationError):
        RssSettings(**bad)


def test_rss_is_a_builtin_type():
    registry = load_types(get_plugin_manager(entry_points=False))
    entry = registry.get("adapter", "rss")
    assert entry is not None and entry.cls is RssAdapter and entry.origin == "builtin"


# -- conformance ----------------------------------------------------------------------------


class TestRssConformance(AdapterConformance):
    @pytest.fixture
    def feed_route(self, server):
        p = path()
        return p, server.route(p, rss2(ITEMS))

    @pytest.fixture
    def make_adapter(self, server, feed_route):
        return lambda: adapter(server.url(feed_route[0]))

    @pytest.fixture
    def add_new_data(self, feed_route):
        route, items, counter = feed_route[1], list(ITEMS), itertools.count()

        def add():
            n = next(counter)
            items.insert(0, {"title": f"new post {n}", "guid": f"post-{n}", "description": f"<p>post {n}</p>"})
            route.body = rss2(items)
            return 1

        return add

    @pytest.fixture
    def make_failing_adapter(self, server):
        return lambda: adapter(server.url("/no-such-feed.xml"))


def test_relative_entry_links_resolve_against_the_feed_url(server):
    server.route(p := path(), rss2([{"title": "rel", "link": "/posts/rel-1", "description": "<a href='/x'>x</a>"}]))
    (only,) = poll(adapter(server.url(p))).observations
    assert only.url == server.url("/posts/rel-1") and only.id == f"blogs:{server.url('/posts/rel-1')}"


@pytest.mark.parametrize("cursor", [{"v": 1}, {"v": 1, "seen": {"k": "bad"}}, {"v": 99, "url": 3}, ["x"], "junk"])
def test_an_unreadable_cursor_starts_again_instead_of_failing(server, cursor):
    server.route(p := path(), rss2(ITEMS))
    result = RssAdapter("blogs", RssSettings(url=server.url(p))).poll(cursor, now=NOW)
    assert result.health.status == "ok" and len(result.observations) == 2
