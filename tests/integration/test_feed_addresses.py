"""Where a feed may lead Fold, and credentials in feed URLs ([hardening-2], ``fold_core.netpolicy``).

Real loopback servers. A configured URL is fetched as configured; a redirect
or a discovered link may not move inward (public → private → loopback) unless
``[host] allow_private_redirects``; a link-local or metadata address is never
fetched. The "public" origin is ``localhost`` seen through a test resolver
that answers a public address for it (``netpolicy.resolve``): the connection
still goes to the loopback server, only the address class is the test's.
"""

from __future__ import annotations

import base64
import itertools
import json
from datetime import datetime, timezone

import pytest

from fold_adapters.feeds.rss import RssAdapter, RssSettings
from fold_core import netpolicy
from support.feed_server import FeedServer, rss2

NOW = datetime(2026, 10, 9, 8, 0, tzinfo=timezone.utc)
ITEMS = [{"title": "One", "link": "https://example.org/1", "guid": "one", "description": "first",
          "pubDate": "Wed, 07 Oct 2026 10:00:00 GMT"}]
METADATA = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
_paths = itertools.count()


@pytest.fixture(scope="module")
def server():
    with FeedServer() as running:
        yield running


@pytest.fixture
def public_localhost(monkeypatch):
    """``localhost`` resolves, for the address check only, to a public address."""
    real = netpolicy.resolve
    monkeypatch.setattr(netpolicy, "resolve", lambda host: ["93.184.215.14"] if host == "localhost" else real(host))


@pytest.fixture(autouse=True)
def default_policy():
    netpolicy.allow_private_redirects(False)
    yield
    netpolicy.allow_private_redirects(False)


def path() -> str:
    return f"/a-{next(_paths)}"


def public(server, route: str) -> str:
    return server.url(route).replace("127.0.0.1", "localhost")


def poll(url: str, cursor=None, **settings):
    return RssAdapter("news", RssSettings(url=url, **settings)).poll(cursor, now=NOW)


def test_the_classes():
    assert [netpolicy.address_class(a) for a in ("93.184.215.14", "10.1.2.3", "100.64.0.1", "127.0.0.2", "0.0.0.0",
                                                  "169.254.169.254", "fe80::1", "::ffff:127.0.0.1", "fd00:ec2::254",
                                                  "100.100.100.200")] == \
        ["public", "private", "private", "loopback", "loopback", "link-local", "link-local", "loopback",
         "link-local", "link-local"]


def test_a_redirect_to_a_metadata_address_is_refused_even_from_loopback(server):
    server.route(p := path(), status=302, headers={"Location": METADATA})
    result = poll(server.url(p))
    assert result.health.status == "failed" and result.health.error_class == "redirect"
    assert "link-local" in result.health.message and "never fetches" in result.health.message


def test_a_configured_name_of_a_metadata_address_is_never_fetched(monkeypatch):
    """An IP literal is refused with the settings (below); a name is checked when it is fetched."""
    monkeypatch.setattr(netpolicy, "resolve", lambda host: ["169.254.169.254"] if host == "metadata.test" else [])
    result = poll("http://metadata.test/feed.xml")
    assert result.health.status == "failed" and result.health.error_class == "config"
    assert "never fetches" in result.health.message


def test_a_discovered_link_to_a_metadata_address_is_refused(server):
    page = f'<html><head><link rel="alternate" type="application/rss+xml" href="{METADATA}"></head></html>'
    server.route(p := path(), page, content_type="text/html")
    result = poll(server.url(p))
    assert result.health.status == "failed" and "link-local" in result.health.message


def test_a_public_feed_cannot_redirect_into_this_machine(server, public_localhost):
    admin = server.route(a := path(), rss2(ITEMS))
    server.route(p := path(), status=302, headers={"Location": server.url(a)})
    result = poll(public(server, p))
    assert result.health.status == "failed" and result.health.error_class == "redirect"
    assert "a public address" in result.health.message and "a loopback address" in result.health.message
    assert "allow_private_redirects" in result.health.message
    assert admin.requests == []  # never asked


def test_a_public_page_cannot_name_a_feed_inside(server, public_localhost):
    inside = server.route(a := path(), rss2(ITEMS))
    page = f'<html><head><link rel="alternate" type="application/rss+xml" href="{server.url(a)}"></head></html>'
    server.route(p := path(), page, content_type="text/html")
    result = poll(public(server, p))
    assert result.health.status == "failed" and "a loopback address" in result.health.message
    assert inside.requests == []


def test_allowed_an_inward_301_is_followed_but_never_stored(server, public_localhost):
    netpolicy.allow_private_redirects(True)
    server.route(a := path(), rss2(ITEMS))
    old = server.route(p := path(), status=301, headers={"Location": server.url(a)})
    first = poll(public(server, p))
    assert first.health.status == "ok" and len(first.observations) == 1
    assert first.cursor["url"] == public(server, p)  # still the configured URL
    poll(public(server, p), first.cursor)
    assert len(old.requests) == 2


def test_loopback_to_loopback_is_followed_and_a_301_stored(server):
    server.route(a := path(), rss2(ITEMS))
    server.route(p := path(), status=301, headers={"Location": server.url(a)})
    result = poll(server.url(p))
    assert result.health.status == "ok" and result.cursor["url"] == server.url(a)


def test_credentials_go_to_their_origin_only_and_are_never_kept_or_shown(server):
    feed = server.route(a := path(), rss2(ITEMS))
    server.route(p := path(), status=301, headers={"Location": a})
    refused = server.route(r := path(), b"no", status=403)
    secret = "pw-Secret-4711"
    url = server.url(p).replace("http://", f"http://reader:{secret}@")
    first = poll(url)
    second = poll(url, json.loads(json.dumps(first.cursor)))
    expected = "Basic " + base64.b64encode(f"reader:{secret}".encode()).decode()
    assert [request.get("authorization") for request in feed.requests] == [expected, expected]
    assert secret not in json.dumps(first.cursor) + json.dumps(second.cursor)
    assert first.cursor["url"] == server.url(a)  # moved permanently, kept without the credentials
    assert any("moved permanently" in note for note in first.health.notes)
    assert not any(secret in note for note in first.health.notes)
    failed = poll(server.url(r).replace("http://", f"http://reader:{secret}@"))
    assert refused.requests and failed.health.status == "failed" and secret not in failed.health.message
    assert "reader:***@" in failed.health.message


def test_many_feeds_keep_no_credentials_in_observations(server):
    server.route(a := path(), rss2(ITEMS))
    secret = "pw-Secret-0815"
    url = server.url(a).replace("http://", f"http://reader:{secret}@")
    adapter = RssAdapter("news", RssSettings(feeds=[url, server.url(path())]))
    result = adapter.poll(None, now=NOW)
    stored = json.dumps(result.cursor) + "".join(o.to_json() for o in result.observations) + json.dumps(
        result.health.model_dump())
    assert len(result.observations) == 1 and result.observations[0].meta["feed"] == server.url(a)
    assert secret not in stored


def test_a_feed_password_is_in_no_output_of_foldctl_and_not_in_host_db(server, tmp_path):
    """Through the host: ``tick``, ``sources list`` (JSON and text), ``doctor``, and host.db's bytes."""
    from tests.support.host_workspace import Workspace

    secret = "pw-Secret-2718"
    server.route(a := path(), rss2(ITEMS))
    server.route(gone := path(), b"no", status=403)
    urls = [server.url(a).replace("http://", f"http://reader:{secret}@"),
            server.url(gone).replace("http://", f"http://reader:{secret}@")]
    feeds = "\n".join(f'[[adapters]]\nname = "news{n}"\ntype = "rss"\nurl = "{url}"\n' for n, url in enumerate(urls))
    ws = Workspace(tmp_path, sources=(), script=[], host="allow_private_redirects = true\n", extra=feeds)
    code, ticked, err = ws.run("tick", "--now", "2026-10-09T08:00:00+08:00")
    assert code == 0 and netpolicy.private_redirects_allowed() is True  # [host] allow_private_redirects was read
    shown = [json.dumps(ticked), err]
    for args in (("sources", "list"), ("doctor",)):
        code, text, err = ws.run_text(*args, "--format", "text")
        shown += [text, err, json.dumps(ws.run(*args)[1])]
    assert any("reader:***@" in text for text in shown)  # the URL is shown, its password masked
    assert not any(secret in text for text in shown)
    stored = b"".join(p.read_bytes() for p in ws.store.glob("host.db*"))
    assert secret.encode() not in stored  # its health line keeps the URL masked: reader:***@


def test_a_metadata_address_is_refused_in_the_settings_and_skipped_in_opml(tmp_path):
    from pydantic import ValidationError

    from fold_adapters.feeds.opml import read_opml

    with pytest.raises(ValidationError, match="never fetches"):
        RssSettings(url=METADATA)
    with pytest.raises(ValidationError, match="never fetches"):
        RssSettings(feeds=["https://example.org/feed.xml", "http://[fe80::1]/feed"])
    opml = (b'<?xml version="1.0"?><opml version="2.0"><body>'
            b'<outline text="ok" xmlUrl="https://example.org/feed.xml"/>'
            b'<outline text="inside" xmlUrl="http://169.254.169.254/latest/meta-data/"/></body></opml>')
    feeds, notes = read_opml(opml)
    assert [feed.url for feed in feeds] == ["https://example.org/feed.xml"]
    assert any("169.254.169.254" in note and "never fetched" in note for note in notes)
