"""The briefing: golden files (US-03, a nested state, a "since" window with a merge and a withdraw),
``foldctl brief`` in a real subprocess, and the consumer's atomic rewrite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fold_consumers.briefing import build_briefing
from fold_consumers.briefing_render import render
from fold_host.cycle.delivery import deliver_all
from fold_core.store.file import file_store
from fold_host.hostdb import open_host_db

from consumer_support import FIXTURES, instance, play

GOLDEN = FIXTURES / "briefing"
REPO = Path(__file__).resolve().parents[2]
UPDATE = os.environ.get("FOLD_UPDATE_GOLDEN") == "1"


def us03_scenario() -> dict:
    story = json.loads((REPO / "examples/us03/story.json").read_text(encoding="utf-8"))
    steps = []
    for step in story["steps"]:
        if "batch" in step:
            batch = json.loads((REPO / "examples/us03" / step["batch"]).read_text(encoding="utf-8"))
            if "over-budget" in step["batch"]:
                continue  # rejected: writes nothing
            steps.append({"batch": batch, "now": step["now"], "actor": step["actor"]})
        else:
            steps.append({"annotate": step["annotate"], "text": step["text"], "now": step["now"],
                          "author": step["author"]})
    return {"now": story["state_at"], "language": "zh", "timezone": "Asia/Shanghai", "since": 1, "steps": steps,
            "coverage": [{"source": "work-mail", "channel": "email", "status": "ok",
                          "last_ok_at": "2026-10-10T09:25:00+08:00"},
                         {"source": "blogs", "channel": "rss", "status": "failed",
                          "last_ok_at": "2026-10-09T21:00:00+08:00", "error": "connection refused"}]}


def scenario(name: str) -> dict:
    if name == "us03":
        return us03_scenario()
    return json.loads((GOLDEN / f"{name}.steps.json").read_text(encoding="utf-8"))


def briefing_of(tmp_path, name: str) -> dict:
    spec = scenario(name)
    store_dir = tmp_path / "store"
    play(store_dir, spec["steps"])
    store = file_store(store_dir)
    document = store.state_document(now=spec["now"]).document
    records = store.history(since=spec["since"]).document["records"]
    return build_briefing(document, records=records, since=spec["since"], coverage=spec["coverage"],
                          timezone=spec["timezone"], language=spec["language"])


def check_golden(path: Path, text: str) -> None:
    if UPDATE or not path.exists():
        path.write_text(text, encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"{path.name} did not exist; written — review it and run again")
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["us03", "nested", "since"])
@pytest.mark.parametrize("fmt", ["md", "text", "json"])
def test_golden(tmp_path, name, fmt):
    brief = briefing_of(tmp_path, name)
    check_golden(GOLDEN / f"{name}.{ {'md': 'md', 'text': 'txt', 'json': 'json'}[fmt]}", render(brief, fmt))


def test_us03_rules(tmp_path):
    """The rules the golden file freezes, said once in words."""
    brief = briefing_of(tmp_path, "us03")
    entries = brief["root"]["entries"]
    assert [e["id"] for e in entries] == ["visa", "weekly-report", "bill", "flight", "pr-review", "standup"]
    visa = entries[0]
    assert visa["kind"] == "needs-you" and visa["due_at"] and visa["summary"].endswith("送到。")  # never cut
    assert "kind" not in entries[2] and "summary" in entries[2]  # normal: title + summary
    assert "summary" not in entries[5]  # low: the title
    assert brief["root"]["trace"] == {"count": 1, "ids": ["filter"], "overdue": [], "stale": []}
    since = brief["since"]
    assert [e["id"] for e in since["created"]] == ["visa"]
    assert [e["id"] for e in since["withdrawn"]] == ["reading"]
    assert [c["status"] for c in brief["coverage"]] == ["ok", "failed"]


def test_since_window_merge_and_withdraw(tmp_path):
    since = briefing_of(tmp_path, "since")["since"]
    assert since["merged"] == [{"into": "dentist-visit", "title": "周三下午约牙医复诊",
                                "sources": [{"id": "dentist", "title": "牙医复诊要约时间"},
                                            {"id": "dentist-call", "title": "诊所回电未接"}],
                                "reason": "同一件事，合并。"}]
    withdrawn = {e["id"]: e for e in since["withdrawn"]}
    assert set(withdrawn) == {"old-project", "op-docs", "op-handover"}
    assert withdrawn["op-docs"]["withdrawn_with"] == "old-project"
    assert withdrawn["op-docs"]["reason"] == "项目已结项，剩余事项转给同事。"
    assert [e["id"] for e in since["created"]] == ["tax"]  # the merge result is listed under merged only
    assert [e["id"] for e in since["restored"]] == ["draft"]
    assert [e["id"] for e in since["updated"]] == ["lease"]
    assert since["acknowledged"] == [{"annotation": "ann-1", "item": "dentist-visit", "text": "我周三下午有空。"}]


def test_nested_marks_overdue_and_stale_without_hiding(tmp_path):
    brief = briefing_of(tmp_path, "nested")
    trip = brief["root"]["entries"][0]
    assert trip["id"] == "trip" and trip["overdue"]
    children = {e["id"]: e for e in trip["children"]["entries"]}
    assert children["trip-visa"]["overdue"] and children["trip-hotel"]["stale"]
    assert trip["children"]["trace"]["ids"] == ["trip-receipts", "trip-notes"]  # rank: due first
    assert trip["children"]["trace"]["overdue"] == ["trip-receipts"]
    archive = [e for e in brief["root"]["entries"] if e["id"] == "archive"]
    assert archive and archive[0]["children"]["entries"][0]["id"] == "archive-a"  # a trace parent keeps its children


def test_markdown_escapes_item_text(tmp_path):
    store_dir = tmp_path / "store"
    play(store_dir, [{"now": "2026-10-01T09:00:00+08:00", "batch": {"batch_id": "x", "declarations": [
        {"id": "evil", "title": "<script>x</script>", "summary": "[click](http://e.x) **bold** `code`",
         "weight": "high", "kind": "fyi"}]}}])
    document = file_store(store_dir).state_document(now="2026-10-01T10:00:00+08:00").document
    text = render(build_briefing(document, since=None, coverage=[]), "md")
    assert "<script>" not in text and "\\<script\\>" in text
    assert "[click](" not in text and "\\[click\\](http://e.x)" in text and "\\*\\*bold\\*\\*" in text


def foldctl(*args: str, store, cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("FOLD_CONFIG", "FOLD_STORE")}
    return subprocess.run([sys.executable, "-m", "fold_host", "--store", str(store), *args], cwd=cwd, env=env,
                          capture_output=True, text=True)


def test_foldctl_brief(tmp_path):
    spec = us03_scenario()
    store_dir = tmp_path / "store"
    play(store_dir, spec["steps"])
    (tmp_path / "plugins.toml").write_text('[host]\nlanguage = "zh"\ntimezone = "Asia/Shanghai"\n')
    done = foldctl("brief", "--since", "1", "--now", spec["now"], store=store_dir, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Fold 简报 · 2026-10-10 09:30 (Asia/Shanghai)")  # Markdown by default, piped too
    assert "`visa`" in done.stdout and "没有配置信息源" in done.stdout
    first = foldctl("brief", "--now", spec["now"], "--format", "json", store=store_dir, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["since"] is None  # the first briefing: nothing to compare with
    play(store_dir, [{"now": "2026-10-10T10:00:00+08:00", "batch": {"batch_id": "later", "declarations": [
        {"id": "filter", "relation": "withdraw", "reason": "不再需要记录。"}]}}])
    second = json.loads(foldctl("brief", "--now", spec["now"], "--format", "json", store=store_dir,
                                cwd=tmp_path).stdout)
    assert second["since"]["after_event_seq"] == 3 and [e["id"] for e in second["since"]["withdrawn"]] == ["filter"]
    text = foldctl("brief", "--since", "0", "--format", "text", "--now", spec["now"], store=store_dir, cwd=tmp_path)
    assert "[visa]" in text.stdout and "`" not in text.stdout
    bad = foldctl("brief", "--format", "html", store=store_dir, cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    missing = foldctl("brief", store=tmp_path / "nowhere", cwd=tmp_path)
    assert missing.returncode == 3 and "Traceback" not in missing.stderr


def test_consumer_rewrites_its_file_after_each_delivery(tmp_path):
    spec = us03_scenario()
    store_dir = tmp_path / "store"
    play(store_dir, spec["steps"][:1])
    morning = instance("morning", "briefing", tmp_path, path="briefing.md", since="last", **{"from": "start"})
    with open_host_db(store_dir) as db:
        result = deliver_all(db, str(store_dir), [morning], now=spec["now"], timezone="Asia/Shanghai",
                             language="zh", coverage=spec["coverage"])
        assert result == [{"consumer": "morning", "status": "ok", "delivered": 1, "event_seq": 1}]
        first = (tmp_path / "briefing.md").read_text(encoding="utf-8")
        assert "`weekly-report`" in first and "`visa`" not in first
        play(store_dir, spec["steps"][1:])
        deliver_all(db, str(store_dir), [morning], now=spec["now"], timezone="Asia/Shanghai", language="zh",
                    coverage=spec["coverage"])
    text = (tmp_path / "briefing.md").read_text(encoding="utf-8")
    assert "（事件 1 之后，到事件 3）" in text and "`visa`" in text and "**失败**" in text
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".briefing")] == []  # no temporary left


def test_coverage_for_foldctl_brief_comes_from_host_db(tmp_path):
    """A failed source is said; a configured source never polled is "unknown"; silence is not "nothing"."""
    import types

    def adapter(name, channel):
        return types.SimpleNamespace(name=name, type_name=channel, cls=types.SimpleNamespace(channel=channel))

    with open_host_db(tmp_path) as db:
        with db.transaction() as connection:
            connection.execute("INSERT INTO sources (source, failures, last_poll_at, last_ok_at, last_error) VALUES "
                               "('work-mail', 0, '2026-10-10T09:00:00+08:00', '2026-10-10T09:00:00+08:00', NULL), "
                               "('blogs', 2, '2026-10-10T09:00:00+08:00', '2026-10-09T21:00:00+08:00', "
                               "'connect: connection refused')")
        coverage = db.source_health([adapter("work-mail", "email"), adapter("blogs", "rss"),
                                     adapter("agent-log", "worklog")])
    assert [(c["source"], c["status"]) for c in coverage] == [("work-mail", "ok"), ("blogs", "failed"),
                                                               ("agent-log", "unknown")]
    assert coverage[1]["error"] == "connect: connection refused"
    document = {"schema": "fold.state/1", "now": "2026-10-10T09:30:00+08:00", "revision": 0, "event_seq": 0,
                "budget": 64, "root": {"budget": 64, "used": 0, "free": 64, "items": []}}
    text = render(build_briefing(document, coverage=coverage), "text")
    assert "[blogs] (rss): FAILED" in text and "connection refused" in text
    assert "silence from 1 failed source(s) does not mean nothing happened there." in text


def _item(item_id: str, title: str) -> dict:
    return {"id": item_id, "title": title, "summary": f"{title}.", "weight": "normal", "kind": "fyi",
            "reason": "test", "sources": [{"channel": "email", "ref": "event:mail:1", "quote": "q"}]}


def test_the_morning_file_says_what_happened_overnight(tmp_path):
    """since = "24h" (the default) keeps a day of records across deliveries; "last" only the last delivery's."""
    store_dir = tmp_path / "store"
    day = instance("day", "briefing", tmp_path, path="day.md", **{"from": "start"})
    last = instance("last", "briefing", tmp_path, path="last.md", since="last", **{"from": "start"})
    six = instance("six", "briefing", tmp_path, path="six.md", since="6h", **{"from": "start"})
    night = [("2026-12-05T06:00:00+01:00", "old", "Yesterday's matter"),
             ("2026-12-05T22:00:00+01:00", "bill", "Electricity bill"),
             ("2026-12-06T02:00:00+01:00", "flight", "Flight rescheduled"),
             ("2026-12-06T07:00:00+01:00", "parcel", "Parcel arrives")]
    with open_host_db(store_dir) as db:
        for number, (now, item_id, title) in enumerate(night, 1):
            batch = {"batch_id": f"b{number}", "declarations": [_item(item_id, title)]}
            play(store_dir, [{"now": now, "batch": batch}])
            result = deliver_all(db, str(store_dir), [day, last, six], now=now, timezone="Europe/Berlin",
                                 language="en", coverage=[])
            assert [entry["status"] for entry in result] == ["ok", "ok", "ok"], result
    morning = (tmp_path / "day.md").read_text(encoding="utf-8")
    assert "## In the last 24h, since 2026-12-05 07:00 (after event 1, up to event 4)" in morning
    created = morning.split("**Created**")[1].split("## ")[0]
    assert "`bill`" in created and "`flight`" in created and "`parcel`" in created and "`old`" not in created
    only_last = (tmp_path / "last.md").read_text(encoding="utf-8")
    assert "## Since the last briefing (after event 3, up to event 4)" in only_last
    created = only_last.split("**Created**")[1].split("## ")[0]
    assert "`parcel`" in created and "`flight`" not in created and "`bill`" not in created
    six_hours = (tmp_path / "six.md").read_text(encoding="utf-8")
    created = six_hours.split("**Created**")[1].split("## ")[0]
    assert "In the last 6h, since 2026-12-06 01:00" in six_hours
    assert "`flight`" in created and "`parcel`" in created and "`bill`" not in created
    zh = instance("zh", "briefing", tmp_path, path="zh.json", **{"from": "start"})
    with open_host_db(store_dir) as db:
        deliver_all(db, str(store_dir), [zh], now="2026-12-06T07:30:00+01:00", timezone="Europe/Berlin",
                    language="zh", coverage=[])
    # A new instance starts with an empty window: nothing before its first delivery is claimed.
    assert json.loads((tmp_path / "zh.json").read_text(encoding="utf-8"))["since"]["span"] == "24h"
    with pytest.raises(ValueError) as bad:  # pydantic's ValidationError: the config loader names file and field
        instance("bad", "briefing", tmp_path, path="bad.md", since="overnight")
    assert "since" in str(bad.value)
