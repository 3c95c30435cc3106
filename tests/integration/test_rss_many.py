"""Many feeds in one rss instance (``feeds``, ``opml``) against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from conformance.adapter_suite import AdapterConformance
from fold_adapters.feeds.many import feed_key
from fold_adapters.feeds.rss import RssAdapter, RssSettings
from support.feed_server import FeedServer, rss2, silent_socket

NOW = datetime(2026, 10, 9, 8, 0, tzinfo=timezone.utc)
EVERY = timedelta(minutes=30)
_runs = itertools.count()


@pytest.fixture(scope="module")
def server():
    with FeedServer() as running:
        yield running


def poll(feed: RssAdapter, cursor=None, now=NOW):
    result = feed.poll(json.loads(json.dumps(cursor)), now=now)
    json.dumps(result.cursor)
    return result


def items(run: int, feed: int, count: int = 3) -> list[dict]:
    return [{"title": f"feed {feed} entry {j}", "guid": f"r{run}-f{feed}-e{j}", "description": f"text {j}",
             "pubDate": f"Wed, 07 Oct 2026 {j:02d}:00:00 GMT"} for j in range(count)]


def opml(entries: list[tuple[str, str | None]]) -> str:
    """An OPML document; each entry (url, folder path or None) is put in nested folder outlines."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<opml version="2.0"><head><title>subs</title></head><body>']
    for url, folder in entries:
        opened = folder.split("/") if folder else []
        lines += [f'<outline text="{part}">' for part in opened]
        lines.append(f'<outline type="rss" text="T {url[-12:]}" xmlUrl="{url}"/>')
        lines += ["</outline>"] * len(opened)
    lines.append("</body></opml>")
    return "\n".join(lines)


def test_an_opml_list_of_200_feeds_over_two_polls(server, tmp_path):
    run = next(_runs)
    routes, entries = [], []
    for i in range(200):
        route = server.route(f"/many{run}/{i}.xml", rss2(items(run, i), title=f"Feed {i}"))
        routes.append(route)
        entries.append((server.url(f"/many{run}/{i}.xml"), f"Group {i % 4}/Sub {i % 3}" if i % 2 else None))
    broken = routes[57]
    broken.status = 500
    (tmp_path / "subs.opml").write_text(opml(entries))
    feed = RssAdapter("news", RssSettings(opml=tmp_path / "subs.opml", every=EVERY, first_run="all"))

    first = poll(feed)
    assert first.health.status == "ok" and len(first.observations) == 199 * 3
    assert "1 of 200 feeds failing" in first.health.message and entries[57][0] in first.health.message
    sample = next(o for o in first.observations if o.meta["feed"] == entries[3][0])
    assert sample.id == f"news:{feed_key(entries[3][0])}:r{run}-f3-e0" and sample.meta["folder"] == "Group 3/Sub 0"
    assert sample.sender == "Feed 3"
    assert "folder" not in next(o for o in first.observations if o.meta["feed"] == entries[4][0]).meta

    for i in range(0, 200, 20):  # ten feeds get a new entry
        routes[i].body = rss2(items(run, i, count=4), title=f"Feed {i}")
    second = poll(feed, first.cursor, NOW + EVERY)
    assert sorted(o.title for o in second.observations) == sorted(f"feed {i} entry 3" for i in range(0, 200, 20))
    counts = Counter(o.id for o in first.observations + second.observations)
    assert len(counts) == 199 * 3 + 10 and set(counts.values()) == {1}  # every entry observed once
    unchanged = [r for i, r in enumerate(routes) if i % 20 and i != 57]
    assert all(r.answered == [200, 304] for r in unchanged)
    assert broken.answered == [500, 500] and second.cursor["feeds"][feed_key(entries[57][0])]["failures"] == 2

    third = poll(feed, second.cursor, NOW + 2 * EVERY)  # the broken feed waits out its own backoff
    assert len(broken.requests) == 2 and len(routes[0].requests) == 3 and third.observations == []
    broken.status = 200
    fourth = poll(feed, third.cursor, NOW + 4 * EVERY)
    assert len(fourth.observations) == 3 and fourth.health.message is None


def test_every_feed_failing_fails_the_source(server):
    urls = [server.url(f"/missing-{next(_runs)}.xml") for _ in range(3)]
    result = poll(RssAdapter("news", RssSettings(feeds=urls)))
    assert result.health.status == "failed" and result.health.error_class == "http"
    assert "all 3 feed(s) are failing" in result.health.message
    assert all(state["failures"] == 1 for state in result.cursor["feeds"].values())


def test_the_opml_file_is_read_at_each_poll(server, tmp_path):
    run = next(_runs)
    urls = [server.url(f"/edit{run}/{i}.xml") for i in range(3)]
    for i, url in enumerate(urls):
        server.route(f"/edit{run}/{i}.xml", rss2(items(run, i, 1)))
    subs = tmp_path / "subs.opml"
    subs.write_text(opml([(urls[0], None), (urls[1], "A")]))
    feed = RssAdapter("news", RssSettings(opml=subs))
    first = poll(feed)
    assert {o.meta["feed"] for o in first.observations} == set(urls[:2])
    subs.write_text(opml([(urls[1], "B"), (urls[2], None)]))
    second = poll(feed, first.cursor)
    assert [o.meta["feed"] for o in second.observations] == [urls[2]]
    assert set(second.cursor["feeds"]) == {feed_key(urls[1]), feed_key(urls[2])}


def test_a_feeds_list_with_titles_and_folders(server):
    run = next(_runs)
    server.route(f"/list{run}.xml", rss2(items(run, 0, 25)).replace(b"<title>Example feed</title>", b""))
    settings = RssSettings(feeds=[{"url": server.url(f"/list{run}.xml"), "title": "Named here",
                                   "folder": "Reading"}, server.url(f"/list{run}.xml")])
    result = poll(RssAdapter("news", settings))
    assert len(result.observations) == 20  # first_run defaults to last:20
    assert any("first run of 1 feed(s) (first_run = last:20)" in note for note in result.health.notes)
    assert {o.sender for o in result.observations} == {"Named here"}
    assert {o.meta["folder"] for o in result.observations} == {"Reading"}


def test_a_single_url_instance_keeps_its_ids_and_moving_to_feeds_repeats_nothing(server):
    run = next(_runs)
    server.route(p := f"/single{run}.xml", rss2(items(run, 0)), validators=False)
    single = poll(RssAdapter("news", RssSettings(url=server.url(p))))
    assert [o.id for o in single.observations] == [f"news:r{run}-f0-e{j}" for j in range(3)]
    many = poll(RssAdapter("news", RssSettings(feeds=[server.url(p)])), single.cursor)
    assert many.health.status == "ok" and many.observations == []


def test_a_poll_that_runs_out_of_time_leaves_the_rest_for_next_time():
    sock = silent_socket()
    try:
        urls = [f"http://127.0.0.1:{sock.getsockname()[1]}/slow-{i}.xml" for i in range(4)]
        settings = RssSettings(feeds=urls, timeout="1s", poll_timeout="2s", max_connections=1)
        result = poll(RssAdapter("news", settings))
    finally:
        sock.close()
    assert any("not reached before the poll's deadline" in note for note in result.health.notes)
    polled = [s for s in result.cursor["feeds"].values() if s.get("polled_at")]
    assert 1 <= len(polled) < 4 and all(s["error"]["class"] == "timeout" for s in polled)


def test_hosts_are_capped(server):
    run = next(_runs)
    urls = [server.url(f"/cap{run}/{i}.xml") for i in range(6)]
    for i in range(6):
        server.route(f"/cap{run}/{i}.xml", rss2(items(run, i, 1)))
    result = poll(RssAdapter("news", RssSettings(feeds=urls, max_connections=8, max_per_host=1)))
    assert len(result.observations) == 6 and result.health.message is None


@pytest.mark.parametrize("settings", [{}, {"url": "https://x/f", "feeds": ["https://y/f"]},
                                      {"feeds": []}, {"feeds": ["file:///etc/passwd"]},
                                      {"feeds": [{"url": "https://x/f", "colour": "red"}]},
                                      {"feeds": ["https://x/f"], "max_connections": 0}])
def test_bad_feed_settings_are_refused(settings):
    with pytest.raises(ValidationError):
        RssSettings(**settings)


# -- hostile OPML ---------------------------------------------------------------------------------

BOMB = """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>
<opml version="2.0"><body><outline text="&lol4;" xmlUrl="http://127.0.0.1:9/feed"/></body></opml>"""


def hostile(kind: str, secret, server) -> str:
    if kind == "bomb":
        return BOMB
    if kind == "file entity":
        return (f'<?xml version="1.0"?><!DOCTYPE opml [<!ENTITY s SYSTEM "file://{secret}">]>'
                f'<opml version="2.0"><body><outline text="&s;" xmlUrl="http://127.0.0.1:9/f"/></body></opml>')
    if kind == "http entity":
        return (f'<?xml version="1.0"?><!DOCTYPE opml [<!ENTITY s SYSTEM "{server.url("/entity")}">]>'
                f'<opml version="2.0"><body><outline text="x" xmlUrl="http://127.0.0.1:9/f">&s;</outline>'
                f'</body></opml>')
    return (f'<?xml version="1.0"?><!DOCTYPE opml SYSTEM "{server.url("/entity")}">'
            f'<opml version="2.0"><body><outline text="x" xmlUrl="http://127.0.0.1:9/f"/></body></opml>')


@pytest.mark.parametrize("kind", ["bomb", "file entity", "http entity", "external dtd"])
def test_hostile_opml_is_refused_without_reading_anything(server, tmp_path, kind):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    probe = server.route("/entity", b"<!ENTITY x 'y'>", content_type="application/xml-dtd")
    probe.requests.clear()
    subs = tmp_path / "subs.opml"
    subs.write_text(hostile(kind, secret, server))
    result = poll(RssAdapter("news", RssSettings(opml=subs)), cursor={"v": 2, "feeds": {}})
    assert result.health.status == "failed" and result.health.error_class == "config"
    assert "refused" in result.health.message and result.observations == []
    assert "TOP-SECRET-VALUE" not in json.dumps(result.model_dump()) and probe.requests == []
    assert result.cursor == {"v": 2, "feeds": {}}


class TestManyFeedsConformance(AdapterConformance):
    """A ``feeds`` instance of three feeds (one of them always failing) through the adapter conformance suite."""

    @pytest.fixture
    def feed_routes(self, server):
        run = next(_runs)
        return [(server.url(f"/conf{run}/{i}.xml"), server.route(f"/conf{run}/{i}.xml", rss2(items(0, i))))
                for i in range(2)]

    @pytest.fixture
    def make_adapter(self, server, feed_routes):
        urls = [url for url, _ in feed_routes] + [server.url("/conf-missing.xml")]
        return lambda: RssAdapter("news", RssSettings(feeds=urls))

    @pytest.fixture
    def add_new_data(self, feed_routes):
        counter = itertools.count()
        entries = [items(0, index) for index in range(len(feed_routes))]

        def add():
            n = next(counter)
            for index, (_, route) in enumerate(feed_routes):
                entries[index].insert(0, {"title": f"added {n}", "guid": f"added-{index}-{n}", "description": "new"})
                route.body = rss2(entries[index])
            return len(feed_routes)  # one new entry in each feed

        return add

    @pytest.fixture
    def make_failing_adapter(self, server):
        return lambda: RssAdapter("news", RssSettings(feeds=[server.url("/conf-missing-a.xml"),
                                                             server.url("/conf-missing-b.xml")]))
