"""JSON Feed 1.0/1.1 and feed discovery from a web page, through the rss adapter and a real HTTP server."""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from fold_adapters.feeds.rss import RssAdapter, RssSettings
from support.feed_server import FeedServer, atom, rss2

NOW = datetime(2026, 10, 9, 8, 0, tzinfo=timezone.utc)
SPEC = Path(__file__).resolve().parents[1] / "fixtures" / "jsonfeed"
JSON_FEED = "application/feed+json"
_paths = itertools.count()


@pytest.fixture(scope="module")
def server():
    with FeedServer() as running:
        yield running


def path(suffix: str = ".json") -> str:
    return f"/formats-{next(_paths)}{suffix}"


def poll(feed: RssAdapter, cursor=None):
    result = feed.poll(json.loads(json.dumps(cursor)), now=NOW)
    json.dumps(result.cursor)
    return result


def adapter(url: str, **settings) -> RssAdapter:
    return RssAdapter("blogs", RssSettings(url=url, **settings))


# -- JSON Feed ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["spec-1.json", "spec-1.1.json"])
def test_the_specification_examples(server, name):
    server.route(p := path(), (SPEC / name).read_bytes(), content_type=JSON_FEED)
    result = poll(adapter(server.url(p)))
    assert result.health.status == "ok" and result.health.notes == ()
    second, first = result.observations
    assert (second.id, second.text, second.url) == ("blogs:2", "This is a second item.",
                                                    "https://example.org/second-item")
    assert (first.id, first.text, first.url) == ("blogs:1", "Hello, world!", "https://example.org/initial-post")
    assert first.sender == "My Example Feed" and first.channel == "rss" and first.title is None


def test_json_feed_fields_and_the_same_observation_shape(server):
    document = {
        "version": "https://jsonfeed.org/version/1.1", "title": "Lattice notes",
        "authors": [{"name": "王敏"}],
        "items": [
            {"id": 42, "title": "发布 3.4.2", "content_html": "<p>修复了<b>离线同步</b>。</p><script>x()</script>",
             "url": "/posts/342", "external_url": "https://example.com/elsewhere", "tags": ["release"],
             "date_published": "2026-10-08T10:00:00+08:00",
             "attachments": [{"url": "https://example.org/a.mp3", "mime_type": "audio/mpeg", "size_in_bytes": 9}]},
            {"id": "", "content_text": "a blank id: discarded"},
            {"content_text": "no id: discarded"},
            {"id": "v1-author", "content_text": "from 1.0", "author": {"name": "Old style"},
             "date_modified": "not a date"},
        ]}
    server.route(p := path(), json.dumps(document), content_type="application/json")
    result = poll(adapter(server.url(p)))
    assert result.health.status == "ok"
    assert any("2 item(s) without an id were discarded" in note for note in result.health.notes)
    release, old = result.observations
    assert release.id == "blogs:42" and release.title == "发布 3.4.2"
    assert release.text == "修复了离线同步。" and "x()" not in release.text
    assert release.url == server.url("/posts/342") and release.at == "2026-10-08T02:00:00+00:00"
    assert release.meta["author"] == "王敏" and release.meta["tags"] == ["release"]
    assert release.meta["external_url"] == "https://example.com/elsewhere"
    assert release.meta["attachments"] == [{"url": "https://example.org/a.mp3", "type": "audio/mpeg", "size": 9}]
    assert old.meta["author"] == "Old style" and old.at is None and old.meta["date"] == "not a date"


def test_json_feed_versions_and_304(server):
    body = (SPEC / "spec-1.1.json").read_bytes()
    route = server.route(p := path(), body, content_type=JSON_FEED)
    feed = adapter(server.url(p))
    first = poll(feed)
    again = poll(feed, first.cursor)
    assert again.observations == [] and route.requests[1]["if-none-match"] == route.etag
    changed = json.loads(body)
    changed["items"][0]["content_text"] = "This is a second item, edited."
    route.body = json.dumps(changed).encode()
    assert [o.id for o in poll(feed, again.cursor).observations] == ["blogs:2#v2"]


@pytest.mark.parametrize("body", [b"{not json", b'{"title": "no items"}', b"[1, 2]", b"{" * 100_000])
def test_invalid_json_is_not_a_feed(server, body):
    server.route(p := path(), body, content_type=JSON_FEED)
    result = poll(adapter(server.url(p)))
    assert result.health.status == "failed" and result.health.error_class == "parse"
    assert "not a JSON Feed" in result.health.message


# -- discovery -----------------------------------------------------------------------------------


def page(*links: str, base: str = "") -> bytes:
    return (f"<!DOCTYPE html><html><head><title>A blog</title>{base}"
            + "".join(links) + "</head><body><p>Hello</p></body></html>").encode()


ITEMS = [{"title": "Post one", "guid": "p1", "description": "one"},
         {"title": "Post two", "guid": "p2", "description": "two"}]


def test_a_page_with_a_relative_link_is_followed_and_the_feed_kept(server):
    p = path("/")
    feed_path = p + "feed.xml"
    route = server.route(feed_path, rss2(ITEMS, title="The blog"))
    relative = "feed.xml"
    blog = server.route(p, page('<link rel="stylesheet" href="s.css">',
                                             f'<link rel="alternate" type="application/rss+xml" title="RSS" '
                                             f'href="{relative}">'), content_type="text/html; charset=utf-8")
    feed = adapter(server.url(p))
    first = poll(feed)
    assert first.health.status == "ok" and [o.id for o in first.observations] == ["blogs:p1", "blogs:p2"]
    assert any(server.url(p) in note and "web page" in note and server.url(feed_path) in note
               for note in first.health.notes)
    assert first.cursor["url"] == server.url(feed_path) and first.cursor["discovered_from"] == server.url(p)
    again = poll(feed, first.cursor)
    assert again.observations == [] and again.health.notes == ()
    assert len(blog.requests) == 1 and len(route.requests) == 2  # the page is not fetched again


def test_an_absolute_link_and_a_base_href(server):
    server.route(f := path(".atom"), atom([{"id": "urn:a1", "title": "Atom entry", "content": "hi"}]))
    server.route(p := path("/"), page(f'<link rel="alternate" type="application/atom+xml" href="{server.url(f)}">'),
                 content_type="text/html")
    assert [o.title for o in poll(adapter(server.url(p))).observations] == ["Atom entry"]
    server.route(j := "/sub/" + path(".json").lstrip("/"), (SPEC / "spec-1.1.json").read_bytes(),
                 content_type=JSON_FEED)
    server.route(q := path("/"), page('<base href="/sub/">',
                                      f'<link rel="alternate" type="application/feed+json" '
                                      f'href="{j.rsplit("/", 1)[1]}">'), content_type="text/html")
    result = poll(adapter(server.url(q)))
    assert result.health.status == "ok" and result.cursor["url"] == server.url(j)


def test_a_page_that_names_no_feed_says_so(server):
    server.route(p := path("/"), page('<link rel="alternate" hreflang="de" href="/de/">'), content_type="text/html")
    result = poll(adapter(server.url(p)))
    assert result.health.status == "failed" and result.health.error_class == "parse"
    assert "names no feed" in result.health.message


def test_the_discovered_feed_failing_is_said(server):
    server.route(p := path("/"), page('<link rel="alternate" type="application/rss+xml" href="/nowhere.xml">'),
                 content_type="text/html")
    result = poll(adapter(server.url(p)))
    assert result.health.status == "failed" and "/nowhere.xml" in result.health.message
    assert "404" in result.health.message
