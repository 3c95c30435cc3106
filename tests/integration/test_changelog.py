"""The change log: one readable entry per accepted record (who, when, what changed and why,
revision, event_seq), Markdown or JSON Lines by extension, never twice, torn tail cut back."""

from __future__ import annotations

import json
import types

import pytest

from fold_host.cycle.delivery import deliver_all, register_new
from fold_host.hostdb import open_host_db

from consumer_support import annotate, commit, instance

T0 = "2026-10-09T08:00:00+08:00"


@pytest.fixture
def env(tmp_path):
    store_dir = tmp_path / "store"
    commit(store_dir, {"batch_id": "b1", "declarations": [
        {"id": "visa", "title": "签证材料缺银行流水", "weight": "high", "kind": "needs-you",
         "reason": "代理来信。", "sources": [{"channel": "email", "ref": "event:e-1"}]},
        {"id": "reading", "title": "Reading list", "weight": "normal", "kind": "fyi"}]}, T0)
    db = open_host_db(store_dir)
    yield types.SimpleNamespace(store=store_dir, db=db, tmp=tmp_path)
    db.close()


def run(env, *instances):
    return deliver_all(env.db, str(env.store), list(instances), now=T0, timezone="UTC", language="en", coverage=())


def more(env):
    commit(env.store, {"batch_id": "b2", "declarations": [
        {"id": "visa", "relation": "supersedes:visa", "weight": "critical", "kind": "needs-you",
         "due_at": "2026-10-12T18:00:00+08:00", "reason": "截止提前到 12 日。",
         "sources": [{"channel": "email", "ref": "event:e-1"}, {"channel": "email", "ref": "event:e-2"}]},
        {"id": "reading", "relation": "withdraw", "reason": "not this week"}]}, "2026-10-09T09:00:00+08:00")
    annotate(env.store, "visa", "明天去银行。\n\n带身份证。", "2026-10-09T09:30:00+08:00")
    commit(env.store, {"batch_id": "b3", "acknowledges": ["ann-1"], "declarations": []},
           "2026-10-09T10:00:00+08:00")
    commit(env.store, {"batch_id": "b4", "declarations": [
        {"id": "visa", "relation": "supersedes:visa", "weight": "critical", "kind": "needs-you"}]},
        "2026-10-09T11:00:00+08:00")


def test_markdown_log_entries(env):
    changes = instance("changes", "log", env.tmp, path="changes.md")
    register_new(env.db, str(env.store), [changes], now=T0)  # starts after event 1, knows visa and reading
    more(env)
    assert run(env, changes)[0]["delivered"] == 4
    text = (env.tmp / "changes.md").read_text(encoding="utf-8")
    assert text.startswith("# Fold change log\n\n## #2 · commit b2 · revision 1 → 2\n")
    assert "2026-10-09T09:00:00+08:00 · by agent" in text
    assert ("- updated `visa` 签证材料缺银行流水 — weight high → critical; share 12 → 24; due_at none → "
            "2026-10-12T18:00:00+08:00; sources 1 → 2\n  why: 截止提前到 12 日。") in text
    assert "- withdrawn `reading` Reading list\n  why: not this week" in text
    assert "## #3 · annotation ann-1 on `visa`\n2026-10-09T09:30:00+08:00 · by user\n> 明天去银行。\n>\n> 带身份证。" in text
    assert "## #4 · acknowledge b3 · revision 2 → 3" in text and "- acknowledged ann-1" in text
    assert "## #5 " not in text and "checked" not in text  # a check changed nothing: left out by default
    assert "## #1 " not in text  # started now, not from the start


def test_checked_records_are_logged_only_when_asked(env):
    changes = instance("changes", "log", env.tmp, path="changes.md", include_checked=True)
    register_new(env.db, str(env.store), [changes], now=T0)
    more(env)
    assert run(env, changes)[0]["delivered"] == 4
    text = (env.tmp / "changes.md").read_text(encoding="utf-8")
    assert "## #5 · checked b4 · revision 3\n" in text and "- checked: no change" in text


def test_jsonl_log_is_written_once_per_record_even_when_handed_over_again(env):
    changes = instance("changes", "log", env.tmp, path="changes.jsonl", **{"from": "start"})
    more(env)
    run(env, changes)
    env.db.set_consumer_cursor("changes", 2, now=T0)  # the same records again (at least once)
    run(env, changes)
    entries = [json.loads(line) for line in (env.tmp / "changes.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [e["event_seq"] for e in entries] == [1, 2, 3, 4]  # 5 is a check: left out
    first, second = entries[0], entries[1]
    assert first["changes"][0] == {"item": "visa", "op": "created", "title": "签证材料缺银行流水", "layer": None,
                                   "share": 12, "weight": "high", "kind": "needs-you", "due_at": None,
                                   "reason": "代理来信。"}
    assert second["actor"] == "agent" and second["revision"] == 2 and second["previous_revision"] == 1
    assert second["changes"][0]["fields"]["weight"] == ["high", "critical"]
    assert entries[2]["annotation"] == {"id": "ann-1", "item": "visa", "text": "明天去银行。\n\n带身份证。"}


def test_a_torn_last_entry_is_cut_back_and_written_again(env):
    changes = instance("changes", "log", env.tmp, path="changes.jsonl", **{"from": "start"})
    run(env, changes)
    path = env.tmp / "changes.jsonl"
    whole = path.read_bytes()
    more(env)
    run(env, changes)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(whole + lines[1][:17])  # a crash in the middle of appending entry 2
    env.db.set_consumer_cursor("changes", 1, now=T0)
    run(env, changes)
    assert [json.loads(line)["event_seq"] for line in path.read_text(encoding="utf-8").splitlines()] == [1, 2, 3, 4]
