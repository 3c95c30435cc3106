"""Push through Apprise to a real local HTTP receiver (json://): thresholds, material changes only,
no duplicates across a clean restart, at most one after a crash between send and record, quiet
hours then one digest, a receiver that is down then up (retried, recorded, nothing lost), and one
that answers with a flood or a trickle (that send fails, bounded in size and time; nothing lost)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fold_host.cycle.delivery import deliver_all, register_new
from fold_consumers.push import in_quiet_hours
from fold_host.hostdb import open_host_db

from consumer_support import commit, instance, push_world, receiving

T0 = "2026-10-09T10:00:00+08:00"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def receiver():
    with receiving() as server:
        yield server


@pytest.fixture
def env(tmp_path, receiver, monkeypatch):
    with push_world(tmp_path, receiver, monkeypatch, "2026-10-09T09:00:00+08:00") as world:
        yield world


def phone(env, **settings):
    settings = {"urls_env": "FOLD_TEST_PUSH_URLS", "min_weight": "high", "kinds": ["needs-you"], **settings}
    return instance("phone", "push", env.tmp, **settings)


def run(env, push, now=T0, db=None):
    return deliver_all(db or env.db, str(env.store), [push], now=now, timezone="Asia/Shanghai", language="en",
                       coverage=())[0]


def item(item_id, title, weight, kind, **extra):
    return {"id": item_id, "title": title, "weight": weight, "kind": kind, **extra}


def patch(item_id, weight, kind, **extra):
    return {"id": item_id, "relation": f"supersedes:{item_id}", "weight": weight, "kind": kind, **extra}


def test_thresholds_and_material_changes_only(env):
    push = phone(env)
    register_new(env.db, str(env.store), [push], now=T0)
    commit(env.store, {"batch_id": "b1", "declarations": [
        item("visa", "签证材料缺银行流水", "critical", "fyi", summary="12 日 18 点前送到。",
             due_at="2026-10-12T18:00:00+08:00"),
        item("pr", "PR 411 waits for CI", "high", "in-progress"),
        item("bill", "Card bill due the 15th", "normal", "needs-you"),
        item("reading", "Reading list", "normal", "fyi"),
        item("standup", "Standup moved", "low", "in-progress")]}, T0)
    assert run(env, push)["status"] == "ok"
    titles = env.receiver.titles()
    assert sorted(titles) == sorted(["新事项：签证材料缺银行流水", "New: PR 411 waits for CI",
                                     "New: Card bill due the 15th"])
    visa = next(b for b in env.receiver.bodies if "签证" in b["title"])
    assert "12 日 18 点前送到。" in visa["message"] and "编号：visa" in visa["message"]
    assert "截止 2026-10-12 18:00" in visa["message"]
    env.receiver.bodies.clear()
    commit(env.store, {"batch_id": "b2", "declarations": [
        patch("reading", "high", "fyi"),  # raised into the threshold
        patch("pr", "normal", "in-progress", reason="CI passed, less urgent"),  # lowered: silent
        patch("visa", "critical", "fyi", summary="代理说 13 日也可以。"),  # a critical item's facts: notified
        patch("bill", "normal", "needs-you", due_at="2026-10-14T12:00:00+08:00")]}, T0)  # due changed
    commit(env.store, {"batch_id": "b3", "declarations": [patch("visa", "critical", "fyi")]}, T0)  # checked
    run(env, push)
    assert sorted(env.receiver.titles()) == ["Due 2026-10-14 12:00: Card bill due the 15th",
                                             "Raised to high: Reading list", "内容更新：签证材料缺银行流水"]
    visa = next(b for b in env.receiver.bodies if "签证" in b["title"])["message"]
    assert "摘要：12 日 18 点前送到。 → 代理说 13 日也可以。" in visa
    assert "未变：权重 critical · 类型 fyi · 截止 2026-10-12 18:00" in visa
    env.receiver.bodies.clear()
    commit(env.store, {"batch_id": "b4", "declarations": [
        {"id": "bill", "relation": "withdraw", "reason": "paid"},  # withdrawn: silent
        {"id": "standup", "relation": "withdraw", "reason": "over"},
        item("flash", "Created then merged", "high", "needs-you"),
        item("flash-2", "Its twin", "low", "fyi")]}, T0)
    commit(env.store, {"batch_id": "b4b", "declarations": [
        {"id": "flash-3", "relation": "merges:[flash, flash-2]", "title": "Merged pair", "weight": "low",
         "kind": "fyi", "reason": "same thing"}]}, T0)
    run(env, push)
    assert env.receiver.titles() == []  # "flash" was created, then merged away before it was sent: silent
    commit(env.store, {"batch_id": "b5", "declarations": [patch("bill", "normal", "needs-you")]}, T0)  # restored
    run(env, push)
    assert env.receiver.titles() == []  # restored to the facts notified before: silent
    commit(env.store, {"batch_id": "b6", "declarations": [{"id": "bill", "relation": "withdraw", "reason": "x"}]}, T0)
    commit(env.store, {"batch_id": "b7", "declarations": [
        patch("bill", "normal", "needs-you", due_at="2026-10-20T12:00:00+08:00")]}, T0)  # restored, other facts
    run(env, push)
    assert env.receiver.titles() == ["Back: Card bill due the 15th"]
    assert "due: 2026-10-14 12:00 → 2026-10-20 12:00" in env.receiver.bodies[0]["message"]


def test_no_duplicates_after_a_clean_restart_or_a_redelivery(env):
    push = phone(env)
    register_new(env.db, str(env.store), [push], now=T0)
    commit(env.store, {"batch_id": "b1", "declarations": [item("visa", "Visa papers", "critical", "needs-you")]}, T0)
    run(env, push)
    assert len(env.receiver.bodies) == 1
    env.db.close()
    with open_host_db(env.store) as db:  # a clean restart: a new connection, the same host.db
        assert run(env, push, db=db)["delivered"] == 0
        db.set_consumer_cursor("phone", 1, now=T0)  # as if the cursor had not moved (crash before it)
        assert run(env, push, db=db)["delivered"] == 1
    assert len(env.receiver.bodies) == 1
    env.db = open_host_db(env.store)


def test_at_most_one_duplicate_after_a_crash_between_send_and_record(env):
    push = phone(env)
    register_new(env.db, str(env.store), [push], now=T0)
    commit(env.store, {"batch_id": "b1", "declarations": [
        item("visa", "Visa papers", "critical", "needs-you"), item("flight", "Flight choice", "high", "needs-you")]},
        T0)
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO / 'tests' / 'integration')!r})
        from consumer_support import instance
        from fold_host.cycle.delivery import deliver_all
        from fold_host.hostdb import open_host_db
        push = instance("phone", "push", {str(env.tmp)!r}, urls_env="FOLD_TEST_PUSH_URLS", min_weight="high")
        with open_host_db({str(env.store)!r}) as db:
            print(deliver_all(db, {str(env.store)!r}, [push], now={T0!r}, timezone="UTC", language="en",
                              coverage=()))
    """)
    crashed = subprocess.run([sys.executable, "-c", script], env={**os.environ, "FOLD_FAULT": "push_after_send"},
                             capture_output=True, text=True, cwd=REPO)
    assert crashed.returncode == 137, crashed.stderr
    assert len(env.receiver.bodies) == 1  # sent, then killed before recording it
    assert run(env, push)["status"] == "ok"
    titles = env.receiver.titles()
    assert len(titles) == 3 and len(set(titles)) == 2  # the one duplicate, then the other notification
    run(env, push)
    assert len(env.receiver.bodies) == 3


def test_quiet_hours_hold_then_one_digest(env):
    push = phone(env, quiet_hours="22:00-07:30")
    night = "2026-10-09T23:10:00+08:00"
    register_new(env.db, str(env.store), [push], now=night)
    commit(env.store, {"batch_id": "n1", "declarations": [item("visa", "Visa papers", "critical", "needs-you")]},
           night)
    commit(env.store, {"batch_id": "n2", "declarations": [item("server", "Server alert", "high", "fyi")]},
           "2026-10-10T02:00:00+08:00")
    assert run(env, push, now=night)["status"] == "ok"
    assert run(env, push, now="2026-10-10T07:29:00+08:00")["status"] == "ok"
    assert env.receiver.bodies == []
    # No new record after the quiet hours: the idle call sends the digest.
    assert run(env, push, now="2026-10-10T07:31:00+08:00") == {
        "consumer": "phone", "status": "ok", "delivered": 0, "event_seq": 3}
    assert len(env.receiver.bodies) == 1
    digest = env.receiver.bodies[0]
    assert digest["title"] == "Fold: 2 notification(s) held during quiet hours"
    assert "[visa]" in digest["message"] and "[server]" in digest["message"]
    run(env, push, now="2026-10-10T08:00:00+08:00")
    assert len(env.receiver.bodies) == 1


def test_quiet_hours_in_the_host_time_zone():
    assert in_quiet_hours("22:00-07:30", "2026-10-09T15:00:00Z", "Asia/Shanghai")  # 23:00 in Shanghai
    assert not in_quiet_hours("22:00-07:30", "2026-10-09T15:00:00Z", "UTC")
    assert in_quiet_hours("12:00-13:00", "2026-10-09T12:59:00+00:00", "UTC")
    assert not in_quiet_hours("12:00-13:00", "2026-10-09T13:00:00+00:00", "UTC")


def test_receiver_down_then_up_retried_recorded_nothing_lost(env):
    push = phone(env)
    register_new(env.db, str(env.store), [push], now=T0)
    env.receiver.stop()
    try:
        commit(env.store, {"batch_id": "d1", "declarations": [
            item("visa", "Visa papers", "critical", "needs-you"), item("flight", "Flight choice", "high", "fyi")]}, T0)
        result = run(env, push)
        assert result["status"] == "failed" and "not sent" in result["error"]
        row = {r["name"]: r for r in env.db.consumer_rows()}["phone"]
        assert row["failures"] == 1 and "not sent" in row["last_error"]
        log = env.db.memory("phone")["push"]["log"]
        assert log[-1]["ok"] is False and log[-1]["error"]
        assert run(env, push, now="2026-10-09T10:00:10+08:00")["status"] == "waiting"
        commit(env.store, {"batch_id": "d2", "declarations": [item("tax", "Tax papers", "high", "needs-you")]}, T0)
    finally:
        env.receiver.start()
    result = run(env, push, now="2026-10-09T10:01:00+08:00")
    assert result == {"consumer": "phone", "status": "ok", "delivered": 2, "event_seq": 3}
    assert sorted(env.receiver.titles()) == ["New: Flight choice", "New: Tax papers", "New: Visa papers"]
    row = {r["name"]: r for r in env.db.consumer_rows()}["phone"]
    assert (row["failures"], row["next_try_at"]) == (0, None)
    assert env.db.memory("phone")["push"]["outbox"] == []


@pytest.mark.parametrize("answer", ["flood", "trickle"])
def test_a_target_answering_a_flood_or_a_trickle_fails_that_send_alone(env, monkeypatch, answer):
    from fold_consumers import push_send

    monkeypatch.setattr(push_send, "START_SECONDS", 3.0)
    push = phone(env, timeout=1)
    register_new(env.db, str(env.store), [push], now=T0)
    commit(env.store, {"batch_id": "f1", "declarations": [item("visa", "Visa papers", "critical", "needs-you")]}, T0)
    env.receiver.answer = answer
    try:
        result = run(env, push)
    finally:
        env.receiver.answer = "ok"
    assert result["status"] == "failed"
    assert ("larger than 1,048,576 bytes" if answer == "flood" else "did not answer within 4s") in result["error"]
    assert "127.0.0.1:" not in result["error"]  # never the URL
    assert [e["item"] for e in env.db.memory("phone")["push"]["outbox"]] == ["visa"]  # kept for the retry
    assert run(env, push, now="2026-10-09T10:05:00+08:00")["status"] == "ok"
    assert env.receiver.titles()[-1] == "New: Visa papers"
