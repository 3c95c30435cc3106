"""Hostile feeds: nothing crashes the rss adapter, nothing in a feed is executed or fetched.

Every poll here must end without the adapter's last-resort catch
(``error_class == "adapter"`` would mean an unexpected exception inside).
"""

from __future__ import annotations

import itertools
from datetime import datetime, timezone

import pytest

from fold_adapters.feeds.rss import RssAdapter, RssSettings
from support.feed_server import FeedServer, rss2

NOW = datetime(2026, 10, 9, 8, 0, tzinfo=timezone.utc)
_paths = itertools.count()


@pytest.fixture(scope="module")
def server():
    with FeedServer() as running:
        running.canary = running.route("/canary", b"CANARY-FETCHED")
        yield running


def serve(server, body: bytes, **fields):
    p = f"/hostile-{next(_paths)}.xml"
    server.route(p, body, **fields)
    result = RssAdapter("hostile", RssSettings(url=server.url(p))).poll(None, now=NOW)
    assert result.health.error_class != "adapter", result.health.message
    for observation in result.observations:
        for value in (observation.title or "", observation.text, observation.sender or "", observation.id):
            assert "\x00" not in value
    return result


def test_scripts_handlers_and_javascript_links_are_dropped(server):
    result = serve(server, rss2([{
        "title": "<script>alert('t')</script>Click me", "link": "javascript:alert(document.cookie)",
        "guid": "js-1",
        "description": "<p onclick=\"alert(1)\">Hello</p><script>alert('x')</script>"
                       "<iframe src=\"javascript:alert(2)\"></iframe><a href=\"javascript:alert(3)\">link</a>"
                       "<style>p { color: red }</style>",
    }]))
    (only,) = result.observations
    assert "alert" not in only.text and "color" not in only.text and "Hello" in only.text
    assert only.url is None and only.meta["link_dropped"].startswith("javascript:")
    assert "alert" not in (only.title or "")


def test_nothing_referenced_by_a_feed_is_fetched(server):
    canary = server.url("/canary")
    before = len(server.canary.requests)
    doctype = (f'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE rss [\n'
               f'<!ENTITY local SYSTEM "file:///etc/hostname">\n<!ENTITY remote SYSTEM "{canary}">\n]>\n')
    body = doctype.encode() + rss2([{
        "title": "entities &local; &remote;", "guid": "xxe-1",
        "description": f'<img src="{canary}"><link rel="stylesheet" href="{canary}">'
                       f'<object data="{canary}"></object><p style="background:url({canary})">text</p>',
    }]).split(b"?>", 1)[1]
    result = serve(server, body)
    assert len(server.canary.requests) == before
    for observation in result.observations:
        assert "CANARY" not in observation.text


def test_a_body_naming_a_local_file_is_not_opened(server, tmp_path):
    secret = tmp_path / "secret.xml"
    secret.write_bytes(rss2([{"title": "LOCAL-FILE-READ", "guid": "local-1"}]))
    result = serve(server, str(secret).encode(), content_type="text/plain")
    assert result.observations == [] and result.health.status == "failed"
    canary = server.url("/canary").encode()
    before = len(server.canary.requests)
    result = serve(server, canary, content_type="text/plain")
    assert result.observations == [] and len(server.canary.requests) == before


def test_a_one_megabyte_single_line_title(server):
    title = "标题" * 262_144 + "<b>" * 1000
    result = serve(server, rss2([{"title": title, "guid": "long-1", "description": "x" * 1_000_000}]))
    (only,) = result.observations
    assert len(only.title) <= 500 and only.title.endswith("…")
    assert len(only.text) < 5000 and "truncated" in only.text


def test_nul_bytes_and_invalid_utf8(server):
    body = rss2([{"title": "nul\x00title", "guid": "nul-1", "description": "a\x00b"}])
    serve(server, body)
    broken = rss2([{"title": "bad bytes", "guid": "utf-1", "description": "caf\u00e9 ok"}]).replace(
        "café".encode(), b"caf\xff\xfe\xc3")
    result = serve(server, broken)
    assert result.health.status == "ok"
    assert any(o.id == "hostile:utf-1" for o in result.observations)
    controls = rss2([{"title": "ctl\x01\x02\x1b[31m", "guid": "ctl-1", "description": "\x07bell"}])
    serve(server, controls)


def test_deeply_nested_markup(server):
    nested = "<div>" * 20_000 + "deep" + "</div>" * 20_000
    result = serve(server, rss2([{"title": "nested", "guid": "deep-1", "description": nested}]))
    for observation in result.observations:
        assert "<div>" not in observation.text


def test_garbage_bytes(server):
    serve(server, bytes(range(256)) * 64, content_type="application/rss+xml")
    serve(server, b"", content_type="application/rss+xml")
    serve(server, b"<rss version='2.0'><channel><item><title>unterminated", content_type="application/rss+xml")
