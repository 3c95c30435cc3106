"""The bundled demo channels (examples/demo, the main job's input) read cleanly through the real adapters."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from fold_adapters.feeds.rss import RssAdapter, RssSettings
from fold_adapters.worklog.adapter import WorklogAdapter, WorklogSettings
from support.feed_server import FeedServer

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
NOW = datetime(2026, 10, 9, 9, 45, tzinfo=timezone.utc)


def test_demo_feed():
    with FeedServer() as server:
        server.route("/feed.xml", (DEMO / "feed.xml").read_bytes())
        result = RssAdapter("lattice-news", RssSettings(url=server.url("/feed.xml"))).poll(None, now=NOW)
    assert result.health.status == "ok" and result.health.notes == () and result.health.min_interval == 1800
    advisory, release, blog, call = result.observations
    assert advisory.id == "lattice-news:lattice-lsa-2026-07" and advisory.at == "2026-10-09T01:10:00+00:00"
    assert "请在 10 月 12 日前升级到 3.4.3。" in advisory.text and "3.4.0 – 3.4.2" in advisory.text
    assert release.url == "https://lattice.example.org/releases/3.4.2" and "offline queue" in release.text
    assert blog.title == "我们如何把离线同步的冲突率降到 0.3%" and blog.meta["author"] == "王敏"
    assert "20 October" in call.text


def test_demo_worklog():
    result = WorklogAdapter("agent-log", WorklogSettings(path=DEMO / "worklog")).poll(None, now=NOW)
    assert result.health.status == "ok" and result.health.notes == ()
    records = [o for o in result.observations if o.meta["file"] == "agent.jsonl"]
    reviews = [o for o in result.observations if o.meta["file"] == "review-notes.md"]
    assert len(records) == 6 and len(reviews) == 2
    assert {o.meta["status"] for o in records} == {"started", "progress", "done", "blocked"}
    assert all(o.at for o in result.observations)
    assert "没有在移动端验证" in records[2].text and records[2].thread == "login-timeout"
    assert reviews[0].title.endswith("PR #1290 login retry fix") and "mobile-auth" in reviews[0].text
