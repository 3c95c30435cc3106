"""``foldctl sources`` (list, discover, export-opml, import-opml) and doctor on a feed of many failing alone."""

from __future__ import annotations

import json
import stat

import pytest

from fold_adapters.feeds.opml import read_opml
from support.feed_server import FeedServer, rss2
from tests.support.host_workspace import Workspace

NOW = "2026-10-09T08:00:00+08:00"

SUBSCRIPTIONS = """<?xml version="1.0" encoding="UTF-8"?>
<opml version="2.0"><head><title>subs</title></head><body>
  <outline text="Tech">
    <outline text="A &quot;quoted&quot; blog" type="rss" xmlUrl="{a}"/>
    <outline text="Python"><outline text="B" type="rss" xmlUrl="{b}"/></outline>
  </outline>
  <outline text="C" type="rss" xmlUrl="{c}"/>
</body></opml>
"""


@pytest.fixture(scope="module")
def server():
    with FeedServer() as running:
        for name in "abc":
            running.route(f"/{name}.xml", rss2([{"title": f"{name} one", "guid": f"{name}-1",
                                                 "description": "text"}], title=f"Feed {name}"))
        running.route("/broken.xml", b"oops", status=500)
        yield running


def subscriptions(server, tmp_path):
    path = tmp_path / "subs.opml"
    path.write_text(SUBSCRIPTIONS.format(a=server.url("/a.xml"), b=server.url("/b.xml"), c=server.url("/c.xml")))
    return path


def test_import_prints_a_block_that_loads_and_reads_every_feed(server, tmp_path):
    ws = Workspace(tmp_path, sources=())
    code, document, _ = ws.run("sources", "import-opml", str(subscriptions(server, tmp_path)), "--name", "news")
    assert code == 0 and document["feeds"] == 3
    block = document["block"]
    assert 'title = "A \\"quoted\\" blog", folder = "Tech"' in block and 'folder = "Tech/Python"' in block
    ws.config.write_text(ws.config.read_text() + "\n" + block)
    report = ws.tick(NOW)
    assert report["polled"] == [{"source": "news", "status": "ok", "observations": 3}]
    code, listed, _ = ws.run("inbox", "--source", "news")
    assert sorted(o["title"] for o in listed["observations"]) == ["a one", "b one", "c one"]


def test_import_into_appends_only_what_loads(server, tmp_path):
    ws = Workspace(tmp_path, sources=())
    ws.config.chmod(0o640)
    before = ws.config.read_text()
    opml = str(subscriptions(server, tmp_path))
    code, document, _ = ws.run("sources", "import-opml", opml, "--name", "news", "--into", str(ws.config))
    assert code == 0 and ws.config.read_text().startswith(before) and "[[adapters]]\nname = \"news\"" in \
        ws.config.read_text()
    assert stat.S_IMODE(ws.config.stat().st_mode) == 0o640
    after = ws.config.read_text()
    code, document, err = ws.run("sources", "import-opml", opml, "--name", "news", "--into", str(ws.config))
    assert code == 2 and "already used" in err and ws.config.read_text() == after
    code, document, err = ws.run("sources", "import-opml", opml, "--name", "Bad Name!", "--into", str(ws.config))
    assert code == 2 and ws.config.read_text() == after
    assert not list(tmp_path.glob(".plugins-*"))  # no candidate file left behind


def test_import_refuses_a_hostile_list(tmp_path):
    ws = Workspace(tmp_path, sources=())
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    bad = tmp_path / "bad.opml"
    bad.write_text(f'<?xml version="1.0"?><!DOCTYPE opml [<!ENTITY s SYSTEM "file://{secret}">]>'
                   f'<opml version="2.0"><body><outline text="&s;" xmlUrl="https://x.example/f"/></body></opml>')
    code, document, err = ws.run("sources", "import-opml", str(bad), "--name", "news")
    assert code == 2 and "refused" in err and "TOP-SECRET-VALUE" not in json.dumps(document) + err


def test_export_then_import_keeps_every_feed_and_folder(server, tmp_path):
    opml = subscriptions(server, tmp_path)
    ws = Workspace(tmp_path, sources=(), extra=f'''
        [[adapters]]
        name = "single"
        type = "rss"
        url = "{server.url('/broken.xml')}"

        [[adapters]]
        name = "listed"
        type = "rss"
        opml = "{opml}"
    ''')
    out = tmp_path / "export.opml"
    code, document, _ = ws.run("sources", "export-opml", "--out", str(out))
    assert code == 0 and document["feeds"] == 4
    feeds, notes = read_opml(out.read_bytes())
    assert notes == [] and [(f.url.rsplit("/", 1)[1], f.folder) for f in feeds] == [
        ("broken.xml", "single"), ("a.xml", "listed/Tech"), ("b.xml", "listed/Tech/Python"), ("c.xml", "listed")]
    with open(tmp_path / "redirected.opml", "wb") as handle:  # `foldctl sources export-opml > redirected.opml`
        process = ws.spawn("sources", "export-opml", stdout=handle)
        assert process.wait(timeout=60) == 0, process.stderr.read().decode()
        process.stderr.close()
    assert (tmp_path / "redirected.opml").read_bytes() == out.read_bytes()
    code, document, _ = ws.run("sources", "export-opml")
    assert code == 0 and document["feeds"] == 4 and document["opml"].encode() == out.read_bytes()


def test_discover_lists_what_a_page_offers(server, tmp_path):
    server.route("/blog/", b'<!doctype html><html><head><link rel="alternate" type="application/atom+xml" '
                           b'title="Atom" href="feed.atom"><link rel="alternate" type="application/rss+xml" '
                           b'href="/a.xml"></head><body></body></html>', content_type="text/html")
    ws = Workspace(tmp_path, sources=())
    code, document, _ = ws.run("sources", "discover", server.url("/blog/"))
    assert code == 0 and document["is_feed"] is False
    assert document["feeds"] == [
        {"url": server.url("/blog/feed.atom"), "type": "application/atom+xml", "title": "Atom"},
        {"url": server.url("/a.xml"), "type": "application/rss+xml", "title": None}]
    code, document, _ = ws.run("sources", "discover", server.url("/a.xml"))
    assert code == 0 and document["is_feed"] and document["feeds"][0]["title"] == "Feed a"
    code, document, _ = ws.run("sources", "discover", server.url("/nothing-here"))
    assert code == 1 and "404" in document["errors"][0]["message"]


def test_list_and_doctor_name_the_one_failing_feed(server, tmp_path):
    urls = [server.url(p) for p in ("/a.xml", "/b.xml", "/broken.xml")]
    ws = Workspace(tmp_path, sources=(), extra=f'''
        [[adapters]]
        name = "news"
        type = "rss"
        feeds = {json.dumps(urls)}
    ''')
    report = ws.tick(NOW)
    assert report["polled"] == [{"source": "news", "status": "ok", "observations": 2}]
    code, listed, _ = ws.run("sources", "list")
    feeds = listed["sources"][0]["feeds"]
    assert [f["status"] for f in feeds] == ["ok", "ok", "failed"]
    assert feeds[2]["error"]["class"] == "http" and "500" in feeds[2]["error"]["message"]
    code, doctor, _ = ws.run("doctor")
    check = next(c for c in doctor["checks"] if c["name"] == "source news")
    assert check["status"] == "warn" and "1 of 3 feeds failing" in check["detail"] and urls[2] in check["detail"]


def test_export_keeps_a_feed_whose_configured_title_holds_a_control_character(tmp_path):
    ws = Workspace(tmp_path, sources=(), extra='''
        [[adapters]]
        name = "news"
        type = "rss"
        feeds = [{ url = "https://a.example/feed.xml", title = "bell\\u0007 and\\u001b escape", folder = "x\\u0001y" }]
    ''')
    code, document, err = ws.run("sources", "export-opml")
    assert code == 0 and document["feeds"] == 1, (document, err)
    feeds, notes = read_opml(document["opml"].encode())
    assert [(f.url, f.title) for f in feeds] == [("https://a.example/feed.xml", "bell\ufffd and\ufffd escape")]


def test_an_internal_error_of_a_command_that_commits_nothing_does_not_ask_for_a_batch_id_retry(tmp_path,
                                                                                              monkeypatch):
    import fold_adapters.feeds.opml as opml

    def broken(*args, **kwargs):
        raise RuntimeError("planted")
    monkeypatch.setattr(opml, "write_opml", broken)
    ws = Workspace(tmp_path, sources=())
    code, _, err = ws.run_text("sources", "export-opml")
    assert code == 3 and "internal error" in err and "batch_id" not in err and "nothing was committed" in err


def test_sources_list_says_when_each_source_was_polled_what_failed_and_how_much_came_in(tmp_path):
    import os

    from fold_host.daemon.hostlock import HostLock
    from fold_host.hostdb import open_host_db

    ws = Workspace(tmp_path, sources=("mail", "news"), host='timezone = "Europe/Berlin"\n')
    ws.feed("mail", {"native": "1", "title": "late last night"}, {"native": "2", "title": "also last night"})
    ws.feed("news", {"native": "n1", "title": "yesterday's news"})
    ws.tick("2026-12-05T23:30:00+01:00")
    ws.feed("mail", {"native": "3", "title": "this morning"})
    (tmp_path / "news.jsonl.fail").write_text("connection refused")
    ws.tick("2026-12-06T00:10:00+01:00")  # ten minutes into the day, in Berlin (23:10 UTC: still the 5th there)
    ws.tick("2026-12-06T07:00:00+01:00")
    now = "2026-12-06T08:00:00+01:00"
    code, listed, _ = ws.run("sources", "list", "--now", now)
    mail, news = listed["sources"]
    assert code == 0 and listed["daemon_running"] is False
    assert mail["status"] == "ok" and mail["failures"] == 0 and mail["last_error"] is None
    assert mail["last_ok_at"] == mail["last_poll_at"] == "2026-12-06T07:00:00+01:00"
    assert mail["next_poll_at"] is None  # no daemon runs: no next poll is claimed
    assert mail["observations"] == {"today": 1, "all": 3}
    assert news["status"] == "failed" and news["failures"] == 2 and news["last_ok_at"] == "2026-12-05T23:30:00+01:00"
    assert news["last_poll_at"] == "2026-12-06T07:00:00+01:00" and news["next_poll_at"] is None
    assert news["last_error"]["class"] == "network" and news["last_error"]["message"] == "connection refused"
    assert news["observations"] == {"today": 0, "all": 1}
    code, text, _ = ws.run_text("sources", "list", "--now", now, "--format", "text")
    assert "mail (fixture-feed): ok" in text and "observations: 1 today, 3 in all" in text
    assert "last ok 2026-12-06 07:00 · last poll 2026-12-06 07:00 · next poll no daemon · failures 0" in text
    assert "failures 2" in text and "last error 2026-12-06 07:00 (network): connection refused" in text
    assert "no daemon runs" in text and "07:01" not in text
    # A daemon that holds the store and beats: now the next poll is its plan.
    with HostLock(str(ws.store), "run"):
        with open_host_db(ws.store) as db:
            db.daemon_started(pid=os.getpid(), now=now)
        code, listed, _ = ws.run("sources", "list", "--now", now)
        code, text, _ = ws.run_text("sources", "list", "--now", now, "--format", "text")
    assert listed["daemon_running"] is True and listed["sources"][0]["next_poll_at"] == "2026-12-06T07:01:00+01:00"
    assert "next poll 2026-12-06 07:01" in text and "no daemon" not in text


def test_sources_list_counts_each_feed_of_many_apart(server, tmp_path):
    server.route("/two.xml", rss2([{"title": "two one", "guid": "two-1", "description": "text"},
                                   {"title": "two two", "guid": "two-2", "description": "text"}], title="Two"))
    urls = [server.url("/two.xml"), server.url("/b.xml")]
    ws = Workspace(tmp_path, sources=(), host='timezone = "Asia/Shanghai"\n', extra=f'''
        [[adapters]]
        name = "news"
        type = "rss"
        feeds = {json.dumps(urls)}
    ''')
    ws.tick(NOW)
    code, listed, _ = ws.run("sources", "list", "--now", "2026-10-09T09:00:00+08:00")
    source = listed["sources"][0]
    assert source["observations"] == {"today": 3, "all": 3}
    assert [feed["observations"] for feed in source["feeds"]] == [{"today": 2, "all": 2}, {"today": 1, "all": 1}]
    assert [feed["last_poll_at"] for feed in source["feeds"]] == [NOW, NOW]
    assert all(feed["next_at"] is None for feed in source["feeds"])
    code, text, _ = ws.run_text("sources", "list", "--now", "2026-10-09T09:00:00+08:00", "--format", "text")
    assert text.count("observations: 2 today, 2 in all") == 1 and text.count("observations: 1 today, 1 in all") == 1
