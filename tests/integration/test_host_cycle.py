"""The host cycle as ``foldctl tick`` runs it (contract §9, §11.2): inbox, signal, editor, commit, marks."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from datetime import datetime

import pytest

from fold_host.hostdb import open_host_db, retry_pause
from tests.support.host_workspace import Workspace

NOW = "2026-10-09T08:00:00+08:00"


def mail(n: int, **extra) -> dict:
    return {"native": str(n), "title": f"mail {n}", "text": f"body of mail {n}", **extra}


def statuses(ws: Workspace) -> dict[str, str]:
    with open_host_db(ws.store) as db:
        return {o["id"]: o["status"] for o in db.observations(limit=10_000)}


def test_a_tick_polls_asks_the_editor_commits_and_marks(tmp_path):
    ws = Workspace(tmp_path)
    ws.feed("mail", mail(1, thread="visa"), mail(2))
    report = ws.tick(NOW)
    assert report["polled"] == [{"source": "mail", "status": "ok", "observations": 2}]
    signal = report["signal"]
    assert signal["type"] == "events" and signal["received"] == 2 and signal["reminders"] == 0
    assert signal["coverage"] == [{"source": "mail", "channel": "email", "status": "ok", "last_ok_at": NOW}]
    assert report["attempts"] == 1 and report["outcome"] == "committed"
    receipt = report["receipt"]
    assert receipt["batch_id"].startswith("fold-events-20261009T000000Z-") and receipt["actor"] == "agent:scripted"
    sent = ws.requests()[0]["input"]
    assert set(sent) == {"now", "batch_id", "user", "state", "pending_annotations", "events", "signal"}
    assert [e["id"] for e in sent["events"]] == ["mail:1", "mail:2"] and sent["batch_id"] == receipt["batch_id"]
    code, inbox, _ = ws.run("inbox")
    assert code == 0 and [o["id"] for o in inbox["observations"]] == ["mail:2", "mail:1"]
    assert inbox["observations"][0]["disposition"] == "used" and inbox["observations"][0]["related"] == ["t-mail-2"]
    # Nothing new: the next tick does nothing (the review is hours away) and the source is not due yet.
    again = ws.tick("2026-10-09T08:00:30+08:00")
    assert again["polled"] == [] and again["signal"] is None and again["outcome"] == "nothing"
    assert len(ws.requests()) == 1


def test_every_disposition_error_reaches_the_editor_as_a_receipt(tmp_path):
    bad_outputs = {
        "invalid_json": {"raw": "I think the answer is obvious."},
        "invalid_output": {"output": {"dispositions": [], "batch": [], "notes": "x"}},
        "disposition_invalid": {"output": {"dispositions": [{"event": "mail:1", "disposition": "important",
                                                              "why": "?"}], "batch": {"declarations": []}}},
        "disposition_unknown_event": {"output": {"dispositions": [
            {"event": "mail:1", "disposition": "noise", "why": "ad"},
            {"event": "mail:9", "disposition": "noise", "why": "ad"}], "batch": {"declarations": []}}},
        "disposition_duplicate": {"output": {"dispositions": [
            {"event": "mail:1", "disposition": "noise", "why": "ad"},
            {"event": "mail:1", "disposition": "used", "why": "ad"}], "batch": {"declarations": []}}},
        "disposition_missing": {"output": {"dispositions": [], "batch": {"declarations": []}}},
        "disposition_conflict": {"output": {"dispositions": [{"event": "mail:1", "disposition": "noise",
                                                              "why": "ad"}],
                                            "batch": {"declarations": [{"id": "x", "title": "X", "weight": "low",
                                                                        "kind": "fyi", "sources": [
                                                                            {"channel": "email",
                                                                             "ref": "event:mail:1"}]}]}}},
        "layer_budget": {"output": {"dispositions": [{"event": "mail:1", "disposition": "used", "why": "big"}],
                                    "batch": {"declarations": [
                                        {"id": f"c{i}", "title": f"C{i}", "weight": "critical", "kind": "fyi",
                                         "sources": [{"channel": "email", "ref": "event:mail:1"}]}
                                        for i in range(3)]}}},
    }
    for code, reply in bad_outputs.items():
        ws = Workspace(tmp_path / code, script=[reply, "track"])
        ws.feed("mail", mail(1))
        report = ws.tick(NOW)
        assert report["outcome"] == "committed" and report["attempts"] == 2, code
        second = ws.requests()[1]
        assert second["attempt"] == 2 and len(second["corrections"]) == 1
        receipt = second["corrections"][0]
        assert receipt["ok"] is False and receipt["batch_id"] == report["receipt"]["batch_id"]
        assert code in {e["code"] for e in receipt["errors"]}, (code, receipt)
        with open_host_db(ws.store) as db:
            calls = sorted(db.calls(limit=10), key=lambda c: c["seq"])
        first = "invalid" if code == "invalid_json" else "rejected"  # no JSON object at all: invalid
        assert [c["outcome"] for c in calls] == [first, "committed"]
        assert all(c["input_tokens"] and c["latency_ms"] is not None for c in calls)


def test_after_max_attempts_the_observations_wait_and_the_next_cycle_takes_them_once(tmp_path):
    ws = Workspace(tmp_path, host='max_attempts = 2\n',
                   script=[{"raw": "no"}, {"output": {"dispositions": [], "batch": {}}}, "track"])
    ws.feed("mail", mail(1), mail(2))
    report = ws.tick(NOW)
    assert report["outcome"] == "failed" and report["attempts"] == 2
    assert {e["code"] for e in report["receipt"]["errors"]} == {"disposition_missing"}
    assert statuses(ws) == {"mail:1": "pending", "mail:2": "pending"}
    code, doctor, _ = ws.run("doctor")
    agent = next(c for c in doctor["checks"] if c["name"] == "agent")
    assert code == 1 and agent["status"] == "fail" and "2 observation(s) wait" in agent["detail"]
    ws.feed("mail", mail(3))
    report = ws.tick("2026-10-09T08:05:00+08:00")  # a fresh observation goes before those that failed
    assert report["outcome"] == "committed" and report["signal"]["received"] == 1
    assert statuses(ws) == {"mail:1": "pending", "mail:2": "pending", "mail:3": "processed"}
    report = ws.tick("2026-10-09T08:06:00+08:00")
    assert report["outcome"] == "committed" and report["signal"]["received"] == 2
    assert statuses(ws) == {"mail:1": "processed", "mail:2": "processed", "mail:3": "processed"}
    code, state, _ = ws.run("state", "--now", "2026-10-09T08:06:00+08:00")
    assert sorted(i["id"] for i in state["root"]["items"]) == ["t-mail-1", "t-mail-2", "t-mail-3"]
    assert ws.tick("2026-10-09T08:10:00+08:00")["outcome"] == "nothing"
    assert ws.run("doctor")[0] == 0


def test_an_observation_the_editor_never_settles_is_isolated_and_holds_up_nothing(tmp_path):
    """A "poison" observation: every window that holds it fails; the others are all processed, it stays pending."""
    command = tmp_path / "editor.py"
    command.write_text(textwrap.dedent("""
        import json, sys
        document = json.load(sys.stdin)
        events = document["events"]
        if any("POISON" in (e.get("title") or "") for e in events):
            print("I cannot read this")  # no JSON: the window fails
        else:
            print(json.dumps({"dispositions": [{"event": e["id"], "disposition": "noise", "why": "test",
                                                "related": []} for e in events],
                              "batch": {"declarations": [], "acknowledges": []}}))
    """), encoding="utf-8")
    agent = f'type = "command"\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(command))}]\n'
    ws = Workspace(tmp_path, host="max_events = 8\nmax_attempts = 1\n", agent=agent)
    ws.feed("mail", *(mail(n) for n in range(1, 5)), {**mail(5), "title": "POISON"}, *(mail(n) for n in range(6, 9)))
    outcomes = []
    for minute in range(12):
        report = ws.tick(f"2026-10-09T08:{minute:02d}:00+08:00")
        outcomes.append((report["outcome"], report["signal"]["received"] if report["signal"] else 0))
        if minute == 0:
            ws.feed("mail", *(mail(n) for n in range(9, 13)))
        if minute == 1:
            ws.feed("mail", mail(13))  # arrives while the poison is being isolated: not held up
    states = statuses(ws)
    assert states.pop("mail:5") == "pending"  # kept, never lost
    assert set(states.values()) == {"processed"} and len(states) == 12
    assert outcomes[:5] == [("failed", 8),  # 1–8 with the poison
                            ("checked", 4),  # fresh ones first: 9–12, then 13
                            ("checked", 1),
                            ("checked", 4),  # 1–4, after their one-minute pause
                            ("failed", 4)]  # 5–8: halved again
    assert ("failed", 1) in outcomes  # until the poison was alone
    assert ("nothing", 0) in outcomes  # while failed ones pause, no editor call is made
    with open_host_db(ws.store) as db:
        calls = len(db.calls(limit=1000))
        count, worst = db.held_back()
        failed_at = datetime.fromisoformat(worst["failed_at"])
        # What the daemon's watch asks before it starts a cycle: nothing is ready while the poison pauses.
        assert count == 1 and worst["id"] == "mail:5" and db.ready_count(failed_at) == 0
        assert db.ready_count(failed_at + retry_pause(worst["failures"])) == 1
    assert calls == sum(1 for outcome, _ in outcomes if outcome != "nothing")
    code, doctor, _ = ws.run("doctor")
    agent_check = next(c for c in doctor["checks"] if c["name"] == "agent")
    assert agent_check["status"] in ("warn", "fail") and "mail:5" in agent_check["detail"]


@pytest.mark.parametrize("failure", ["unavailable", "invalid json"])
def test_an_unusable_editor_loses_nothing_and_doctor_shows_it(tmp_path, failure):
    reply = {"unavailable": "http", "message": "HTTP 500 from the server"} if failure == "unavailable" \
        else {"raw": "{not json"}
    ws = Workspace(tmp_path, script=[reply, reply, reply, "noise"])
    ws.feed("mail", mail(1))
    report = ws.tick(NOW)
    assert report["outcome"] == "failed" and report["attempts"] == (1 if failure == "unavailable" else 3)
    assert statuses(ws) == {"mail:1": "pending"}
    code, doctor, _ = ws.run("doctor")
    agent = next(c for c in doctor["checks"] if c["name"] == "agent")
    assert code == 1 and not doctor["ok"] and agent["status"] == "fail"
    assert ("HTTP 500" if failure == "unavailable" else "invalid_json") in agent["detail"]
    if failure == "unavailable":
        ws.set_script(["noise"])
    report = ws.tick("2026-10-09T08:05:00+08:00")
    assert report["outcome"] == "checked" and statuses(ws) == {"mail:1": "processed"}


def test_a_review_comes_after_review_every_with_nothing_received(tmp_path):
    ws = Workspace(tmp_path, host='review_every = "6h"\n', script=["noise"])
    ws.feed("mail", mail(1))
    assert ws.tick(NOW)["outcome"] == "checked"
    assert ws.tick("2026-10-09T13:59:00+08:00")["signal"] is None
    report = ws.tick("2026-10-09T14:00:00+08:00")
    signal = report["signal"]
    assert signal["type"] == "review" and signal["received"] == 0 and report["outcome"] == "checked"
    assert signal["window"] == {"from": NOW, "to": "2026-10-09T14:00:00+08:00"}
    assert ws.requests()[-1]["input"]["events"] == []


def test_a_burst_waits_beyond_max_events_and_each_observation_is_processed_once(tmp_path):
    ws = Workspace(tmp_path, host="max_events = 40\n", script=["noise"])
    ws.feed("mail", *(mail(n) for n in range(1, 101)))
    first = ws.tick(NOW)
    assert first["signal"]["received"] == 40 and "60 more wait" in first["signal"]["reason"]
    second = ws.tick("2026-10-09T08:00:10+08:00")
    third = ws.tick("2026-10-09T08:00:20+08:00")
    assert [second["signal"]["received"], third["signal"]["received"]] == [40, 20]
    assert len({r["receipt"]["batch_id"] for r in (first, second, third)}) == 3
    seen = [e["id"] for request in ws.requests() for e in request["input"]["events"]]
    assert len(seen) == 100 == len(set(seen))
    assert set(statuses(ws).values()) == {"processed"}


def test_a_failing_source_and_a_hanging_one_never_stop_the_others(tmp_path):
    ws = Workspace(tmp_path, sources=("good", "bad", "slow"), script=["track"])
    text = ws.config.read_text().replace('path = "slow.jsonl"', 'path = "slow.jsonl"\npoll_timeout = "1s"')
    ws.config.write_text(text)
    ws.feed("good", mail(1))
    ws.feed("slow", mail(2))
    (tmp_path / "bad.jsonl.fail").write_text("connection refused")
    (tmp_path / "slow.jsonl.hang").write_text("5")
    started = time.monotonic()
    report = ws.tick(NOW)
    assert time.monotonic() - started < 4
    polled = {p["source"]: p for p in report["polled"]}
    assert polled["good"] == {"source": "good", "status": "ok", "observations": 1}
    assert polled["bad"]["status"] == polled["slow"]["status"] == "failed"
    assert report["outcome"] == "committed" and statuses(ws) == {"good:1": "processed"}
    coverage = {c["source"]: c["status"] for c in report["signal"]["coverage"]}
    assert coverage == {"good": "ok", "bad": "failed", "slow": "failed"}
    code, doctor, _ = ws.run("doctor")
    checks = {c["name"]: c for c in doctor["checks"]}
    # A source that has never succeeded fails at once (no waiting for three failures in a row).
    assert checks["source bad"]["status"] == "fail" and "connection refused" in checks["source bad"]["detail"]
    assert "has never succeeded" in checks["source bad"]["detail"]
    assert "poll_timeout" in checks["source slow"]["detail"]
    # Backoff: one minute later the failed source is not due yet (2 min after the first failure)...
    (tmp_path / "bad.jsonl.fail").unlink()
    ws.feed("bad", mail(3))
    later = {p["source"] for p in ws.tick("2026-10-09T08:01:00+08:00")["polled"]}
    assert "bad" in later  # the first failure waits `every` (1m)
    with open_host_db(ws.store) as db:
        assert db.cursor("bad") == 1


def test_backoff_doubles_up_to_the_cap_and_never_gives_up():
    from datetime import timedelta

    from fold_core.observation import Health
    from fold_host.cycle.sources import next_delay

    every, failed = timedelta(minutes=5), Health.failed("network", "down")
    delays = [next_delay(every, n, failed) for n in range(0, 8)]
    assert delays[:5] == [every, every, every * 2, every * 4, every * 8]
    assert delays[-1] == timedelta(hours=1)
    assert next_delay(timedelta(days=1), 9, failed) == timedelta(days=1)
    assert next_delay(every, 1, Health.failed("http", "busy", retry_after=3600)) == timedelta(hours=1)


def test_a_snooze_fires_one_reminder_at_its_time(tmp_path):
    ws = Workspace(tmp_path, host='review_every = "1d"\n', script=["track"])
    ws.feed("mail", mail(1))
    ws.tick(NOW)
    code, saved, _ = ws.run("feedback", "--item", "t-mail-1", "--meaning", "snooze",
                            "--until", "2026-10-09T18:00:00+08:00", "--now", "2026-10-09T08:30:00+08:00")
    assert code == 0 and saved["reminder"]["due_at"] == "2026-10-09T18:00:00+08:00"
    feedback_tick = ws.tick("2026-10-09T08:31:00+08:00")
    assert feedback_tick["signal"]["received"] == 1 and feedback_tick["signal"]["reminders"] == 0
    assert ws.requests()[-1]["input"]["events"][0]["feedback"]["meaning"] == "snooze"
    assert ws.tick("2026-10-09T17:59:00+08:00")["signal"] is None
    due = ws.tick("2026-10-09T18:00:00+08:00")
    assert due["signal"]["reminders"] == 1
    event = ws.requests()[-1]["input"]["events"][0]
    assert event["channel"] == "reminder" and event["reminder"] == {
        "feedback": saved["observation"]["id"], "target": "t-mail-1", "requested_at": "2026-10-09T08:30:00+08:00"}
    assert ws.tick("2026-10-09T18:05:00+08:00")["outcome"] == "nothing"


def test_a_snooze_reads_times_as_people_write_them_in_the_host_zone(tmp_path):
    ws = Workspace(tmp_path, host='timezone = "Europe/Berlin"\n')
    ws.feed("mail", mail(1))
    ws.tick(NOW)
    # Saturday 23:50 in Berlin, the night the clocks go forward.
    code, saved, _ = ws.run("feedback", "--item", "t-mail-1", "--meaning", "snooze", "--until", "明天 9:00",
                            "--now", "2026-03-28T23:50:00+01:00")
    assert code == 0 and saved["reminder"]["due_at"] == "2026-03-29T09:00:00+02:00"
    assert saved["until"] == {"given": "明天 9:00", "instant": "2026-03-29T09:00:00+02:00",
                              "timezone": "Europe/Berlin"}
    assert saved["observation"]["feedback"]["until"] == "2026-03-29T09:00:00+02:00"
    code, text, _ = ws.run_text("feedback", "--item", "t-mail-1", "--meaning", "snooze", "--until", "2h",
                                "--now", "2026-03-28T23:50:00+01:00", "--format", "text")
    assert code == 0 and "2026-03-29 01:50" in text and "'2h'" in text and "2026-03-29T01:50:00+01:00" in text
    code, doc, err = ws.run("feedback", "--item", "t-mail-1", "--meaning", "snooze", "--until", "whenever")
    assert code == 2 and "whenever" in err and "tomorrow 09:00" in err and "明天 9:00" in err


def test_feedback_refuses_what_it_cannot_keep(tmp_path):
    ws = Workspace(tmp_path)
    ws.feed("mail", mail(1))
    ws.tick(NOW)
    code, doc, _ = ws.run("feedback", "--item", "nope", "--meaning", "ack")
    assert code == 1 and doc["errors"][0]["code"] == "item_not_found"
    code, doc, err = ws.run("feedback", "--item", "t-mail-1", "--meaning", "snooze")
    assert code == 2 and "--until" in err
    code, doc, err = ws.run("feedback", "--item", "t-mail-1", "--meaning", "ack", "--until", NOW)
    assert code == 2
    code, doc, _ = ws.run("feedback", "--item", "t-mail-1", "--meaning", "decide", "--value", "go ahead")
    assert code == 0 and doc["observation"]["feedback"]["value"] == "go ahead" and doc["reminder"] is None


def test_inbox_filters_and_a_missing_store(tmp_path):
    ws = Workspace(tmp_path, sources=("a", "b"), script=["noise"])
    code, doc, _ = ws.run("inbox")
    assert code == 3 and doc["ok"] is False
    ws.feed("a", mail(1))
    ws.feed("b", mail(2))
    ws.tick(NOW)
    assert [o["id"] for o in ws.run("inbox", "--source", "b")[1]["observations"]] == ["b:2"]
    assert ws.run("inbox", "--status", "pending")[1]["observations"] == []
    listed = ws.run("inbox", "--status", "processed", "--limit", "1")[1]["observations"]
    assert len(listed) == 1 and listed[0]["disposition"] == "noise" and listed[0]["why"] == "scripted: noise"


def test_inbox_lists_the_newest_message_first_by_its_own_date(tmp_path):
    ws = Workspace(tmp_path, sources=("a", "b"), script=["noise"])
    # Polled in this order; their own dates in other offsets (12-06 01:00+08:00 is before 12-05 20:00Z).
    ws.feed("a", mail(1, at="2026-12-01T09:00:00+01:00"), mail(2, at="2026-11-23T09:00:00Z"))
    ws.feed("b", mail(3, at="2026-12-05T20:00:00Z"), mail(4, at="2026-12-06T01:00:00+08:00"))
    ws.tick("2026-12-06T09:00:00+08:00")
    assert [o["id"] for o in ws.run("inbox")[1]["observations"]] == ["b:3", "b:4", "a:1", "a:2"]
    assert [o["id"] for o in ws.run("inbox", "--sort", "date", "--limit", "2")[1]["observations"]] == ["b:3", "b:4"]
    assert [o["id"] for o in ws.run("inbox", "--source", "a")[1]["observations"]] == ["a:1", "a:2"]
    assert [o["id"] for o in ws.run("inbox", "--sort", "observed")[1]["observations"]] == ["b:4", "b:3", "a:2", "a:1"]
    code, out, _ = ws.run_text("inbox", "--format", "text")
    assert code == 0 and out.index("mail 3") < out.index("mail 4") < out.index("mail 1") < out.index("mail 2")


def test_plugins_lists_the_types_with_their_origin(tmp_path):
    ws = Workspace(tmp_path)
    code, doc, _ = ws.run("plugins")
    listed = {(t["kind"], t["type"]): t for t in doc["types"]}
    assert code == 0 and listed[("adapter", "fixture-feed")]["origin"] == "module"
    assert listed[("agent", "scripted")]["plugin"] == "tests.support.host_plugins"


def test_the_context_points_at_withdrawn_items_of_the_same_thread(tmp_path):
    withdraw = {"output": {"dispositions": [{"event": "mail:2", "disposition": "used", "why": "closed",
                                             "related": ["t-mail-1"]}],
                           "batch": {"declarations": [{"id": "t-mail-1", "relation": "withdraw",
                                                       "reason": "the thread is closed"}]}}}
    ws = Workspace(tmp_path, script=["track", withdraw, "noise"])
    ws.feed("mail", mail(1, thread="visa"))
    ws.tick(NOW)
    ws.feed("mail", mail(2, thread="visa"))
    ws.tick("2026-10-09T08:01:00+08:00")
    # 25 unrelated withdrawn items push t-mail-1 out of the recent not-active entries.
    for n in range(25):
        body = {"batch_id": f"x{n}", "declarations": [{"id": f"x{n}", "title": "x", "weight": "trace", "kind": "fyi"}]}
        gone = {"batch_id": f"y{n}", "declarations": [{"id": f"x{n}", "relation": "withdraw", "reason": "gone"}]}
        for batch in (body, gone):
            path = tmp_path / "batch.json"
            path.write_text(json.dumps(batch))
            assert ws.run("commit", "--actor", "test", "--now", "2026-10-09T09:00:00+08:00", str(path))[0] == 0
    ws.feed("mail", mail(3, thread="visa"), mail(4, thread="other"))
    ws.tick("2026-10-09T10:01:00+08:00")
    state = ws.requests()[-1]["input"]["state"]
    listed = [entry["id"] for entry in state["not_active"]]
    assert "t-mail-1" in listed and len(listed) == 21 and state["not_active_total"] == 26


def test_accepted_records_reach_the_consumers_from_the_event_they_were_added(tmp_path):
    ws = Workspace(tmp_path, script=["track"])
    ws.feed("mail", mail(1))
    ws.tick(NOW)  # event 1, before any consumer exists
    ws.config.write_text(ws.config.read_text() + '\n[[consumers]]\nname = "changes"\ntype = "log"\n'
                                                  'path = "changes.jsonl"\n')
    ws.feed("mail", mail(2))
    report = ws.tick("2026-10-09T08:05:00+08:00")
    entries = [json.loads(line) for line in (tmp_path / "changes.jsonl").read_text().splitlines()]
    assert [entry["event_seq"] for entry in entries] == [report["receipt"]["event_seq"]] == [2]
    with open_host_db(ws.store) as db:
        assert db.consumer_cursor("changes") == 2
    code, doctor, _ = ws.run("doctor")
    assert next(c for c in doctor["checks"] if c["name"] == "consumer changes")["status"] == "ok"


def test_a_source_that_is_gone_is_not_polled_until_its_settings_change(tmp_path):
    ws = Workspace(tmp_path, sources=("mail", "feed"), script=["noise"])
    (tmp_path / "feed.jsonl.gone").write_text("")
    assert {p["source"]: p["status"] for p in ws.tick(NOW)["polled"]} == {"mail": "ok", "feed": "failed"}
    code, doctor, _ = ws.run("doctor")
    check = next(c for c in doctor["checks"] if c["name"] == "source feed")
    assert code == 1 and check["status"] == "fail" and "disabled" in check["detail"] and "410" in check["detail"]
    (tmp_path / "feed.jsonl.gone").unlink()
    later = ws.tick("2026-10-09T12:00:00+08:00")
    assert [p["source"] for p in later["polled"]] == ["mail"]  # still disabled: hours later, not polled
    ws.config.write_text(ws.config.read_text().replace('path = "feed.jsonl"', 'path = "feed.jsonl"\nchannel = "rss"'))
    ws.feed("feed", mail(1))
    again = ws.tick("2026-10-09T12:01:00+08:00")
    assert {p["source"]: p["observations"] for p in again["polled"]}["feed"] == 1  # new settings: tried again


def test_a_poll_bigger_than_a_window_is_read_newest_first_each_window_in_arrival_order(tmp_path):
    # A first run brings a mailbox at once: the mail most likely to matter now is read first.
    ws = Workspace(tmp_path, host="max_events = 3\n", script=["noise"])
    ws.feed("mail", *({**mail(n), "at": f"2026-10-0{n}T09:00:00+08:00"} for n in (1, 2, 3, 5, 4)))
    first = ws.tick(NOW)
    assert "2 more wait" in first["signal"]["reason"]
    ws.tick("2026-10-09T08:00:10+08:00")
    windows = [[e["id"] for e in request["input"]["events"]] for request in ws.requests()]
    assert windows == [["mail:3", "mail:5", "mail:4"], ["mail:1", "mail:2"]]


def test_an_observation_whose_time_python_cannot_hold_never_blocks_its_window(tmp_path):
    """An observation kept before its instant was refused (year 1 at +14:00: no UTC instant Python can hold)
    is settled with the reason, and the mail behind it is committed in the same tick."""
    ws = Workspace(tmp_path)
    ws.feed("mail", mail(1))
    ws.tick(NOW)
    with open_host_db(ws.store) as db:
        body = json.loads(db.connection.execute("SELECT body FROM observations WHERE id = 'mail:1'").fetchone()[0])
        poisoned = {**body, "id": "mail:0", "at": "0001-01-01T00:00:00+14:00", "title": "poisoned"}
        db.connection.execute("INSERT INTO observations (id, source, channel, at, observed_at, body, thread) "
                              "VALUES (?, ?, ?, ?, ?, ?, NULL)", ("mail:0", "mail", "email", poisoned["at"],
                                                                  body["observed_at"], json.dumps(poisoned)))
        db.connection.commit()
    ws.feed("mail", mail(2))
    report = ws.tick("2026-10-09T09:00:00+08:00")
    assert report["outcome"] == "committed", report
    assert [e["id"] for e in ws.requests()[-1]["input"]["events"]] == ["mail:2"]
    assert statuses(ws) == {"mail:0": "processed", "mail:1": "processed", "mail:2": "processed"}
    code, inbox, _ = ws.run("inbox")
    refused = next(o for o in inbox["observations"] if o["id"] == "mail:0")
    assert refused["disposition"] == "noise" and "not a valid observation" in refused["why"]
