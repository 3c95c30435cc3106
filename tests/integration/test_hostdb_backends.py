"""The host database answers alike on SQLite (host.db) and PostgreSQL (the store's database): one test, both.

Each test runs against a fresh host.db in a temporary directory and against a
fresh host schema in the private PostgreSQL cluster (a store name of its
own), through the same ``open_host_db``: the inbox, marks and deferral,
search, the call log, consumers and their memory, sources, reminders, the
open window and its intent.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest

from fold_core.observation import Health, Observation, Poll
from fold_core.timefmt import parse_instant
from fold_host.hostdb import host_db_exists, open_host_db

NOW = "2026-10-09T08:00:00+08:00"
LATER = "2026-10-09T09:00:00+08:00"


@pytest.fixture(params=["sqlite", "postgres"])
def location(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "store")
    cluster = request.getfixturevalue("postgres_cluster")
    name = f"h-{os.getpid()}-{request.node.name}"[:64].replace("[", "-").replace("]", "")
    return cluster.url(store=name)


def observation(n: int, *, source: str = "mail", title: str | None = None, text: str | None = None,
                thread: str | None = None) -> Observation:
    return Observation(id=f"{source}:{n}", source=source, channel="email", observed_at=NOW,
                       title=title or f"签证 {n}", text=text or f"银行流水 第{n}封", thread=thread)


def test_nothing_exists_until_opened(location):
    assert host_db_exists(location) is False
    with open_host_db(location) as db:
        assert db.schema_version >= 1 and db.integrity() == "ok"
    assert host_db_exists(location) is True


def test_the_inbox_keeps_observations_once_in_arrival_order(location):
    with open_host_db(location) as db:
        assert db.add_observations([observation(n) for n in range(5)]) == 5
        assert db.add_observations([observation(n) for n in range(3, 7)]) == 2
        assert db.add_observations([observation(9), observation(8), observation(9)]) == 2
        assert db.add_observations([]) == 0
        assert [o.id for o in db.pending()] == [f"mail:{n}" for n in range(7)] + ["mail:9", "mail:8"]
        # One poll brought more than a window takes: its newest first (here: the last to arrive).
        assert [o.id for o in db.window_events(3, parse_instant(NOW))] == ["mail:6", "mail:9", "mail:8"]
        assert db.pending_count() == db.ready_count(parse_instant(NOW)) == 9
        listed = db.observations(limit=2)
        assert [row["id"] for row in listed] == ["mail:8", "mail:9"] and listed[0]["status"] == "pending"
        assert db.observations(ids=[]) == []
        assert db.all_pending(["mail:1", "mail:2"]) and not db.all_pending(["mail:1", "mail:99"])


def test_a_flood_from_one_source_never_keeps_mail_out_of_the_windows(location):
    """[hardening-2] 2: an agent's thousand reports, then four mails: the mails are in the next window."""
    with open_host_db(location) as db:
        minute = parse_instant(NOW)
        reports = [Observation(id=f"agents:report/{n}", source="agents", channel="worklog",
                               observed_at=(minute + timedelta(seconds=n // 20)).isoformat(), title=f"step {n}",
                               text="done") for n in range(1000)]
        db.add_observations(reports)
        db.add_observations([observation(n) for n in range(4)])
        chosen = [o.id for o in db.window_events(50, parse_instant(LATER))]
        assert len(chosen) == 50 and {f"mail:{n}" for n in range(4)} <= set(chosen)
        # Listed in arrival order; the reports' share is their oldest.
        assert chosen[:46] == [f"agents:report/{n}" for n in range(46)] and chosen[46:] == [
            f"mail:{n}" for n in range(4)]
        # With fewer places than sources, the source waiting longest comes first (its first poll's newest).
        assert [o.id for o in db.window_events(1, parse_instant(LATER))] == ["agents:report/19"]


def test_an_agents_recent_reports_are_counted_from_the_inbox(location):
    """What ``[mcp] max_reports_per_hour`` counts: one sender's MCP observations of a source after an instant."""
    def report(n: int, sender: str, minute: int, via: str = "mcp") -> Observation:
        return Observation(id=f"agents:report/{n}", source="agents", channel="worklog", title="t", text="x",
                           observed_at=f"2026-10-09T08:{minute:02d}:00+08:00", meta={"via": via},
                           **{"from": sender})

    with open_host_db(location) as db:
        db.add_observations([report(1, "looper", 0), report(2, "codex", 10), report(3, "looper", 20),
                             report(4, "looper", 30, via="file"), report(5, "looper", 40)])
        since = parse_instant("2026-10-09T00:05:00+00:00")  # 08:05 in +08:00
        assert db.recent_from(source="agents", sender="looper", via="mcp", since=since, limit=10) == [
            "2026-10-09T08:40:00+08:00", "2026-10-09T08:20:00+08:00"]
        assert len(db.recent_from(source="agents", sender="looper", via="mcp", since=since, limit=1)) == 1
        assert db.recent_from(source="mail", sender="looper", via="mcp", since=since, limit=10) == []


def test_a_poll_keeps_its_observations_and_cursor_together(location):
    with open_host_db(location) as db:
        assert db.record_poll("mail", Poll(observations=[observation(1)], cursor={"mark": 3}), now=NOW) == 1
        assert db.cursor("mail") == {"mark": 3}
        failed = Poll(cursor=None, health=Health.failed("network", "down"))
        assert db.record_poll("mail", failed, now=LATER) == 0 and db.cursor("mail") == {"mark": 3}
        db.save_poll_outcome("mail", digest="d1", ok=False, now=LATER, error={"at": LATER, "class": "network",
                             "message": "down"}, disabled=False, min_interval=None, schedule=lambda f: LATER)
        assert db.source_rows()["mail"]["failures"] == 1
        assert db.source_schedule("mail") == (LATER, False, "d1")
        assert db.last_polls()["mail"]["status"] == "failed"


def test_observations_are_counted_per_source_per_feed_and_per_day_by_instant(location):
    def seen(native: str, at: str, source: str = "news") -> Observation:
        return Observation(id=f"{source}:{native}", source=source, channel="rss", observed_at=at, title=native)

    with open_host_db(location) as db:
        db.add_observations([
            seen("a1b2c3d4e5:1", "2026-12-05T23:30:00+01:00"),  # yesterday in Berlin
            seen("a1b2c3d4e5:2", "2026-12-05T23:10:00Z"),  # 00:10 on the 6th in Berlin, though "05" as text
            seen("f0f0f0f0f0:1", "2026-12-06T07:00:00+01:00"),
            seen("a1b2c3d4e5%x", "2026-12-06T07:00:00+01:00"),  # a LIKE wildcard in an id matches only itself
            seen("1", "2026-12-06T07:00:00+01:00", source="mail")])
        day_start = parse_instant("2026-12-06T00:00:00+01:00")
        assert db.observation_counts("news", day_start) == {"today": 3, "all": 4}
        assert db.observation_counts("news", day_start, id_prefix="news:a1b2c3d4e5:") == {"today": 1, "all": 2}
        assert db.observation_counts("news", day_start, id_prefix="news:f0f0f0f0f0:") == {"today": 1, "all": 1}
        assert db.observation_counts("news", day_start, id_prefix="news:a1b2c3d4e5%") == {"today": 1, "all": 1}
        assert db.observation_counts("gone", day_start) == {"today": 0, "all": 0}


def test_marks_deferral_expiry_and_the_disposition_history(location):
    with open_host_db(location) as db:
        db.add_observations([observation(n) for n in range(3)])
        db.mark([{"event": "mail:0", "disposition": "used", "why": "w", "related": ["visa"]},
                 {"event": "mail:1", "disposition": "deferred", "why": "later"}], batch_id="b1", now=NOW)
        db.mark([{"event": "mail:0", "disposition": "noise", "why": "again"}], batch_id="b1", now=NOW)
        assert db.status_counts() == {"processed": 1, "deferred": 1, "pending": 1}
        assert [o.id for o in db.deferred_events(5, parse_instant(LATER))] == ["mail:1"]
        assert db.deferral_marks(["mail:1", "mail:2"]) == {"mail:1": {"at": NOW, "times": 1}}
        assert db.related_in_threads([], 5) == set()
        expired = db.expire_deferred(parse_instant(LATER), LATER, timedelta(minutes=30), "30m")
        assert expired == ["mail:1"]
        shown = db.observation_detail("mail:1")
        assert shown["status"] == "expired" and [d["disposition"] for d in shown["dispositions"]] == \
            ["deferred", "expired"]
        assert db.observation_detail("mail:0")["dispositions"][0]["related"] == ["visa"]
        assert db.observation_detail("nope") is None
        db.fail_window(["mail:2"], count=True, now=NOW, drop=(), note=("last_failure", {"at": NOW}))
        assert db.held_back() == (1, {"id": "mail:2", "failures": 1, "failed_at": NOW})
        assert db.window_events(5, parse_instant(NOW)) == []  # pausing after its failure
        assert [o.id for o in db.window_events(5, parse_instant(LATER))] == ["mail:2"]


def test_retention_keeps_pending_deferred_and_protected_observations_whole(location):
    """Older than the cutoff: a pending, a deferred and a protected (cited) observation keep title, sender and
    text, in the search too; only the settled, uncited one loses them."""
    old = "2026-05-01T08:00:00+08:00"
    with open_host_db(location) as db:
        db.add_observations([Observation(id=f"mail:{n}", source="mail", channel="email", observed_at=old,
                                         title=f"签证 {n}", text=f"银行流水 第{n}封", **{"from": f"a{n}@example.org"})
                             for n in range(1, 5)])
        db.mark([{"event": "mail:2", "disposition": "deferred", "why": "later", "related": []},
                 {"event": "mail:3", "disposition": "used", "why": "filed", "related": ["visa"]},
                 {"event": "mail:4", "disposition": "used", "why": "filed", "related": ["visa"]}],
                batch_id="b1", now=NOW)
        whole = {o.id: o for o in db.observations_by_id(["mail:1", "mail:2", "mail:4"])}
        assert db.forget_text(before="2026-06-01T00:00:00+08:00", now=NOW, protect={"mail:4"}) == (1, 1)
        after = {o.id: o for o in db.observations_by_id(["mail:1", "mail:2", "mail:3", "mail:4"])}
        for kept in ("mail:1", "mail:2", "mail:4"):
            assert after[kept] == whole[kept] and after[kept].text and after[kept].title and after[kept].sender
            assert "text_dropped_at" not in after[kept].meta
        assert after["mail:3"].text == "" and after["mail:3"].title is None and after["mail:3"].sender is None
        assert sorted(hit["id"] for hit in db.search_observations("银行流水", 10)) == ["mail:1", "mail:2", "mail:4"]
        assert db.status_counts() == {"pending": 1, "deferred": 1, "processed": 2}


def test_search_finds_substrings_in_any_language(location):
    with open_host_db(location) as db:
        db.add_observations([observation(1, title="Visa appointment", text="bring the 银行流水 statement"),
                             observation(2, title="Lunch", text="noodles 100% ok"),
                             observation(3, title="签证", text="")])
        assert [hit["id"] for hit in db.search_observations("银行流水 VISA", 10)] == ["mail:1"]
        assert [hit["id"] for hit in db.search_observations("100%", 10)] == ["mail:2"]
        assert [hit["id"] for hit in db.search_observations("签证", 10)] == ["mail:3"]
        assert db.search_observations("nowhere", 10) == [] and db.search_observations("  ", 10) == []
        assert "银行流水" in db.search_observations("银行", 10)[0]["snippet"]


def test_the_call_log_keeps_the_last_requests(location):
    with open_host_db(location) as db:
        first = db.log_call(batch_id="b1", attempt=1, backend="command", at=NOW, request={"input": 1},
                            outcome="committed", tools=[{"name": "fold_get_item"}], fallback=False, keep_requests=1)
        second = db.log_call(batch_id="b2", attempt=1, backend="command", at=LATER, request={"input": 2},
                             outcome="invalid", keep_requests=1)
        assert second == first + 1
        assert [row["batch_id"] for row in db.calls()] == ["b2", "b1"]
        assert db.call_detail(first)["request"] is None and db.call_detail(second)["request"] == {"input": 2}
        assert db.call_detail(first)["tools"] == ["fold_get_item"] and db.call_detail(999) is None


def test_the_call_log_counts_cached_tokens_and_cost_per_day(location):
    with open_host_db(location) as db:
        db.log_call(batch_id="b1", attempt=1, backend="openai", at="2026-10-09T23:30:00+08:00", input_tokens=3000,
                    cached_tokens=None, output_tokens=50, cost=0.01, outcome="rejected")
        db.log_call(batch_id="b1", attempt=2, backend="openai", at="2026-10-09T23:31:00+08:00", input_tokens=3100,
                    cached_tokens=2900, output_tokens=60, cost=0.002, outcome="committed")
        db.log_call(batch_id="b2", attempt=1, backend="openai", at="2026-10-10T09:00:00+08:00", input_tokens=1000,
                    cached_tokens=0, output_tokens=10, outcome="checked")
        days = db.call_days()
        assert [(d["day"], d["calls"], d["attempts"], d["tokens_in"], d["tokens_cached"], d["tokens_out"])
                for d in days] == [("2026-10-09", 1, 2, 6100, 2900, 110), ("2026-10-10", 1, 1, 1000, 0, 10)]
        assert days[0]["cost"] == 0.012 and days[1]["cost"] is None and days[0]["cached_share"] == 0.4754
        assert [d["day"] for d in db.call_days(since=parse_instant("2026-10-10T00:00:00Z"))] == ["2026-10-10"]
        assert [row["cached_tokens"] for row in db.recent_prompts("openai", limit=2)] == [0, 2900]
        counted = dict(db.counters()["agent_tokens"])
        assert counted[("cached",)] == 2900 and dict(db.counters()["agent_cost"])[()] == 12_000


def test_consumers_their_cursors_failures_and_memory(location):
    with open_host_db(location) as db:
        assert db.add_consumer("log", 3, now=NOW) is True and db.add_consumer("log", 9, now=NOW) is False
        db.set_consumer_cursor("log", 5, now=NOW)
        db.consumer_failed("log", failures=1, next_try_at=LATER, error="boom", now=NOW)
        row = db.consumer_row("log")
        assert (row["event_seq"], row["failures"], row["last_error"]) == (5, 1, "boom")
        memory = db.memory("log")
        memory["b"], memory["a"] = {"x": [1]}, "文"
        assert list(memory) == ["a", "b"] and memory["b"] == {"x": [1]} and len(memory) == 2
        del memory["a"]
        with pytest.raises(KeyError):
            del memory["a"]
        with db.consumer_turn("log") as turn:
            assert turn["event_seq"] == 5


def test_reminders_and_meta(location):
    with open_host_db(location) as db:
        reminder = {"id": "r1", "target": "visa", "feedback": "feedback:1", "due_at": LATER, "requested_at": NOW}
        db.add_feedback(observation(1, source="feedback"), reminder)
        db.add_feedback(observation(1, source="feedback"), reminder)
        assert [r["id"] for r in db.unfired_reminders()] == ["r1"]
        db.reminder_fired("r1", now=LATER)
        assert db.unfired_reminders() == []
        db.set_meta("k", {"文": 1})
        assert db.meta("k") == {"文": 1} and db.meta("missing", 7) == 7
        db.drop_meta("k")
        assert db.meta("k") is None


def test_the_open_window_and_its_intent(location):
    from fold_host.hostdb.pg.database import open_pg_host_db

    def opened():
        if location.startswith("postgresql"):
            return open_pg_host_db(location, holder="test-host", lease=30.0)
        return open_host_db(location)

    with opened() as db:
        db.add_observations([observation(1), observation(2)])
        window = {"batch_id": "w1", "signal": {"type": "events"}, "event_ids": ["mail:1"], "now": NOW}
        with db.claiming():
            assert db.open_window_row(window, ["mail:1"]) is True
        assert db.window_row() == window and db.window_intent("w1") is None
        db.save_window_intent("w1", {"batch_id": "w1", "batch": {}})
        assert db.window_intent("w1") == {"batch_id": "w1", "batch": {}}
        db.settle_window([{"event": "mail:1", "disposition": "noise", "why": "x"}], batch_id="w1", now=NOW,
                         drop=("open_window", "commit_intent"), note=("last_window", {"batch_id": "w1"}))
        assert db.window_row() is None and db.meta("last_window") == {"batch_id": "w1"}
        assert db.status_counts() == {"processed": 1, "pending": 1}


def test_what_feedback_teaches(location):
    from fold_host.cycle.learning import learned_for, learning_for

    with open_host_db(location) as db:
        mail = Observation(id="mail:1", source="mail", channel="email", sender="Boss <boss@example.org>",
                           observed_at=NOW, title="visa", text="", thread="t-1")
        db.add_observations([mail, observation(2)])
        db.mark([{"event": "mail:1", "disposition": "used", "why": "w", "related": ["visa"]}], batch_id="b1", now=NOW)
        assert db.observations_about("visa") == [("Boss <boss@example.org>", "t-1")]
        assert db.observations_about("visa", ["mail:2"]) == [(None, None), ("Boss <boss@example.org>", "t-1")]
        for n, meaning in enumerate(["snooze", "snooze", "ack"]):
            teach = learning_for(db, "visa", [], meaning, f"2026-10-0{n + 1}T08:00:00+08:00")
            db.add_feedback(observation(n, source="feedback"), None, teach)
        taught = learned_for(db, "2026-10-09T08:00:00+08:00")
        assert {tuple(sorted(entry)) for entry in taught} == {("acknowledged", "acted", "last", "sender", "snoozed"),
                                                              ("acknowledged", "acted", "last", "snoozed", "thread")}
        assert [(e["snoozed"], e["acknowledged"], e["acted"]) for e in taught] == [(2, 1, 0), (2, 1, 0)]


def test_a_big_poll_is_read_newest_first_by_instant(location):
    times = ["2026-10-09T08:00:00+08:00", "2026-10-09T01:00:00Z", "2026-10-09T09:30:00+08:00", None]
    with open_host_db(location) as db:
        db.add_observations([Observation(id=f"mail:{n}", source="mail", channel="email", observed_at=NOW, at=at,
                                         title="t", text="") for n, at in enumerate(times)])
        assert [o.id for o in db.window_events(2, parse_instant(NOW))] == ["mail:1", "mail:2"]


def test_both_schemas_and_the_move_know_every_table_and_column(tmp_path, postgres_cluster):
    """A migration of host.db without its PostgreSQL counterpart (or without its place in a move) fails here."""
    import sqlite3

    import psycopg

    from fold_core.store.location import parse_url
    from fold_host.hostdb.move import HOST_TABLES
    from fold_host.hostdb.pg.schema import schema_name

    open_host_db(tmp_path).close()
    lite = sqlite3.connect(tmp_path / "host.db")
    tables = [name for (name,) in lite.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT "
                                               "LIKE 'sqlite_%' AND name NOT LIKE 'observation_text%'")]
    on_sqlite = {table: {row[1] for row in lite.execute(f"PRAGMA table_info({table})")} for table in tables}
    url = postgres_cluster.url(store=f"schemas-{os.getpid()}")
    open_host_db(url).close()
    with psycopg.connect(parse_url(url).conninfo) as conn:
        on_postgres: dict[str, set] = {}
        for table, column in conn.execute("SELECT table_name, column_name FROM information_schema.columns "
                                          "WHERE table_schema = %s", (schema_name(parse_url(url).name),)):
            on_postgres.setdefault(table, set()).add(column)
    for table, columns in on_sqlite.items():
        assert columns <= on_postgres.get(table, set()), f"{table}: {columns - on_postgres.get(table, set())}"
        assert set(HOST_TABLES[table][0]) == columns, table
    assert set(HOST_TABLES) == set(on_sqlite)


def test_feedback_and_polls_as_consumers_and_reports_read_them(location):
    """``recent_feedback`` (push's acknowledgements) and ``poll_rows`` (a report's source health)."""
    def feedback(n: int, meaning: str) -> Observation:
        return Observation(id=f"feedback:{n}", source="feedback", channel="feedback", sender="user", at=NOW,
                           observed_at=NOW, title=f"{meaning}: visa", text="",
                           feedback={"target": "visa", "action": meaning, "meaning": meaning, "via": "cli",
                                     **({"option": "renew", "revision": 3} if meaning == "decide" else {})})

    with open_host_db(location) as db:
        db.add_observations([observation(1), feedback(1, "ack"), feedback(2, "decide"), feedback(3, "snooze")])
        found = db.recent_feedback(2)
        assert [(entry["id"], entry["meaning"]) for entry in found] == [("feedback:2", "decide"),
                                                                         ("feedback:3", "snooze")]
        assert found[0]["seq"] < found[1]["seq"] and (found[0]["option"], found[0]["revision"]) == ("renew", 3)
        assert found[0]["target"] == "visa" and found[0]["at"] == NOW
        db.record_poll("mail", Poll(health=Health.ok()), now=NOW)
        db.record_poll("mail", Poll(health=Health.failed("network", "down")), now=LATER)
        assert [(row["source"], row["at"], row["status"], row["message"]) for row in db.poll_rows()] == [
            ("mail", NOW, "ok", None), ("mail", LATER, "failed", "down")]
