"""What push says from the clock and the sources' health, against a real Apprise receiver: deadlines
within remind_before (once per deadline value, also without records; due_at and decide_by), a source
failing for alert_after and its recovery (once each, through real ``foldctl tick --now`` cycles), and
the outbox guarantees for both with the host process killed around the deadline."""

from __future__ import annotations

import subprocess

import pytest

from fold_host.cycle.delivery import deliver_all, register_new
from fold_host.hostdb import open_host_db
from tests.support.host_workspace import Workspace

from consumer_support import commit, instance, push_world, receiving

T0 = "2026-12-01T10:00:00+08:00"
FRAME = {"question": "Accept the new time or ask for a refund?", "evidence": "complete",
         "options": [{"id": "accept", "label": "Accept 14:05"}, {"id": "refund", "label": "Refund"}],
         "decide_by": "2026-12-04T12:00:00+08:00"}


@pytest.fixture(scope="module")
def receiver():
    with receiving() as server:
        yield server


@pytest.fixture
def env(tmp_path, receiver, monkeypatch):
    with push_world(tmp_path, receiver, monkeypatch, T0, seed=[
        {"id": "tax", "title": "Tax return", "weight": "high", "kind": "needs-you",
         "due_at": "2026-12-03T18:00:00+08:00"},
        {"id": "flight", "title": "Rebooked flight", "weight": "normal", "kind": "needs-you", "decision": FRAME},
        {"id": "gym", "title": "Gym renewal", "weight": "low", "kind": "fyi",
         "due_at": "2026-12-02T09:00:00+08:00"}]) as world:
        yield world


def run(env, push, now, keep=False):
    result = deliver_all(env.db, str(env.store), [push], now=now, timezone="Asia/Shanghai", language="en",
                         coverage=())[0]
    assert result["status"] == "ok", result
    sent = [body["title"] for body in env.receiver.bodies]
    if not keep:
        env.receiver.bodies.clear()
    return sent


def test_deadlines_within_remind_before_once_per_value_without_records(env):
    push = instance("phone", "push", env.tmp, urls_env="FOLD_TEST_PUSH_URLS", kinds=["needs-you"])
    register_new(env.db, str(env.store), [push], now=T0)
    assert run(env, push, T0) == []  # the tax is 56 h away, the decision 74 h; the gym is not eligible
    assert run(env, push, "2026-12-02T17:59:00+08:00") == []  # 24 h 1 min before
    assert run(env, push, "2026-12-02T18:00:00+08:00") == ["Due soon (2026-12-03 18:00): Tax return"]
    assert run(env, push, "2026-12-02T19:00:00+08:00") == []  # once per deadline value
    assert run(env, push, "2026-12-03T12:30:00+08:00") == ["Decide by 2026-12-04 12:00: Rebooked flight"]
    env.db.close()
    env.db = open_host_db(env.store)  # a clean restart: nothing again
    assert run(env, push, "2026-12-03T13:00:00+08:00") == []
    # A moved deadline is a new value: its change is notified, and it is reminded again when near.
    commit(env.store, {"batch_id": "move", "declarations": [
        {"id": "tax", "relation": "supersedes:tax", "weight": "high", "kind": "needs-you",
         "due_at": "2026-12-05T18:00:00+08:00"}]}, "2026-12-03T14:00:00+08:00")
    assert run(env, push, "2026-12-03T14:00:00+08:00") == ["Due 2026-12-05 18:00: Tax return"]
    assert run(env, push, "2026-12-04T18:00:00+08:00") == ["Due soon (2026-12-05 18:00): Tax return"]
    assert run(env, push, "2026-12-06T18:00:00+08:00") == []  # passed: never reminded afterwards


def test_a_decision_deadline_inside_quiet_hours_is_reminded_remind_before_earlier(env):
    push = instance("phone", "push", env.tmp, urls_env="FOLD_TEST_PUSH_URLS", kinds=["needs-you"],
                    min_weight=None, quiet_hours="11:00-13:00", remind_before="12h")
    register_new(env.db, str(env.store), [push], now=T0)
    # decide_by 12-04 12:00 lies inside 11:00-13:00: reminded 24 h before instead of 12 h.
    assert run(env, push, "2026-12-02T23:59:00+08:00") == []  # 36 h before
    assert run(env, push, "2026-12-03T10:30:00+08:00") == ["Due soon (2026-12-03 18:00): Tax return"]
    # 24 h before, not 12 h (which would be 2026-12-04 00:00); held by the quiet hours until 13:00.
    assert run(env, push, "2026-12-03T12:30:00+08:00") == []
    assert run(env, push, "2026-12-03T13:00:00+08:00", keep=True) == [
        "Fold: 1 notification(s) held during quiet hours"]
    assert "- Decide by 2026-12-04 12:00: Rebooked flight [flight]" in env.receiver.bodies[0]["message"]


def test_a_new_decision_whose_deadline_passes_in_the_quiet_hours_goes_at_once(env):
    push = instance("phone", "push", env.tmp, urls_env="FOLD_TEST_PUSH_URLS", kinds=["needs-you"],
                    quiet_hours="22:00-07:30", remind_before="1h")
    register_new(env.db, str(env.store), [push], now=T0)
    night = "2026-12-01T22:30:00+08:00"
    frame = {**FRAME, "decide_by": "2026-12-02T06:00:00+08:00"}
    commit(env.store, {"batch_id": "night", "declarations": [
        {"id": "server", "title": "Server migration", "weight": "high", "kind": "needs-you", "decision": frame},
        {"id": "news", "title": "Newsletter", "weight": "high", "kind": "fyi"}]}, night)
    assert run(env, push, night) == ["New: Server migration"]  # the newsletter waits for the morning
    assert run(env, push, "2026-12-02T07:31:00+08:00") == ["Fold: 1 notification(s) held during quiet hours"]


def test_an_answer_silences_the_reminder_of_the_deadline_it_answered(env):
    from fold_host.cycle.feedback import save_feedback
    push = instance("phone", "push", env.tmp, urls_env="FOLD_TEST_PUSH_URLS", kinds=["needs-you"])
    register_new(env.db, str(env.store), [push], now=T0)
    save_feedback(str(env.store), "flight", "decide", None, None, "2026-12-02T09:00:00+08:00",
                  extra={"option": "accept", "revision": 1})
    assert run(env, push, "2026-12-03T12:30:00+08:00") == ["Due soon (2026-12-03 18:00): Tax return"]


# -- through real host cycles ---------------------------------------------------------------


def workspace(tmp_path, receiver, **push):
    settings = "".join(f'{key} = {value}\n' for key, value in push.items())
    ws = Workspace(tmp_path, sources=("mail",), script=(), extra=f"""
        [[consumers]]
        name = "phone"
        type = "push"
        urls_env = "FOLD_TEST_PUSH_URLS"
        kinds = ["needs-you"]
        {settings}""", host='timezone = "Asia/Shanghai"\nlanguage = "en"\n')
    (tmp_path / "mail.jsonl").write_text("", encoding="utf-8")
    return ws


def tick(ws, receiver, now, **env):
    code, out, err = ws.call("tick", "--now", now, env={"FOLD_TEST_PUSH_URLS": receiver.url, **env})
    return code, err


def test_a_source_failing_for_alert_after_and_its_recovery_once_each(tmp_path, receiver):
    receiver.bodies.clear()
    ws = workspace(tmp_path, receiver, alert_after='"6h"')
    assert tick(ws, receiver, "2026-12-01T08:00:00+08:00")[0] == 0  # polled fine
    (tmp_path / "mail.jsonl.fail").write_text("IMAP login failed", encoding="utf-8")
    for now in ("2026-12-01T09:00:00+08:00", "2026-12-01T13:59:00+08:00"):
        assert tick(ws, receiver, now)[0] == 0
    assert receiver.bodies == []  # failing, but for less than 6 h since the last good poll
    assert tick(ws, receiver, "2026-12-01T14:30:00+08:00")[0] == 0
    assert [body["title"] for body in receiver.bodies] == ["Source failing: mail"]
    assert "IMAP login failed" in receiver.bodies[0]["message"]
    assert "2026-12-01 08:00" in receiver.bodies[0]["message"]
    assert tick(ws, receiver, "2026-12-01T20:30:00+08:00")[0] == 0
    assert len(receiver.bodies) == 1  # once
    (tmp_path / "mail.jsonl.fail").unlink()
    assert tick(ws, receiver, "2026-12-03T08:00:00+08:00")[0] == 0
    assert [body["title"] for body in receiver.bodies][1:] == ["Source back: mail"]
    assert tick(ws, receiver, "2026-12-03T09:00:00+08:00")[0] == 0
    assert len(receiver.bodies) == 2


@pytest.mark.parametrize("fault, first", [("push_queued", 0), ("push_after_send", 1)])
def test_the_host_killed_around_the_deadline_sends_the_reminder_at_most_once_more(tmp_path, receiver, fault, first):
    receiver.bodies.clear()
    ws = workspace(tmp_path, receiver)
    assert tick(ws, receiver, T0)[0] == 0
    commit(ws.store, {"batch_id": "due", "declarations": [
        {"id": "tax", "title": "Tax return", "weight": "high", "kind": "needs-you",
         "due_at": "2026-12-03T18:00:00+08:00"}]}, T0)
    assert tick(ws, receiver, "2026-12-01T10:05:00+08:00")[0] == 0
    assert [body["title"] for body in receiver.bodies] == ["New: Tax return"]
    receiver.bodies.clear()
    code, err = tick(ws, receiver, "2026-12-02T18:30:00+08:00", FOLD_FAULT=fault)
    assert code == 137, err
    assert len(receiver.bodies) == first  # killed before any send / right after the send, before its record
    for now in ("2026-12-02T18:31:00+08:00", "2026-12-02T19:00:00+08:00", "2026-12-03T17:00:00+08:00"):
        assert tick(ws, receiver, now)[0] == 0
    titles = [body["title"] for body in receiver.bodies]
    assert set(titles) == {"Due soon (2026-12-03 18:00): Tax return"}
    assert len(titles) == (2 if fault == "push_after_send" else 1)  # at most the one duplicate, never lost


@pytest.mark.parametrize("fault, total", [("push_queued", 1), ("push_after_send", 2)])
def test_a_source_alert_survives_the_host_killed_around_it(tmp_path, receiver, fault, total):
    receiver.bodies.clear()
    ws = workspace(tmp_path, receiver, alert_after='"1h"')
    assert tick(ws, receiver, "2026-12-01T08:00:00+08:00")[0] == 0
    (tmp_path / "mail.jsonl.fail").write_text("DNS failure", encoding="utf-8")
    assert tick(ws, receiver, "2026-12-01T08:30:00+08:00")[0] == 0
    code, err = tick(ws, receiver, "2026-12-01T09:30:00+08:00", FOLD_FAULT=fault)
    assert code == 137, err
    for now in ("2026-12-01T09:31:00+08:00", "2026-12-01T10:30:00+08:00"):
        assert tick(ws, receiver, now)[0] == 0
    titles = [body["title"] for body in receiver.bodies]
    assert titles == ["Source failing: mail"] * total  # never lost; at most one duplicate after a kill mid-send


def test_the_daemon_reminds_between_windows_and_not_again_after_a_sigkill(tmp_path, receiver):
    """A real ``foldctl run``: a deadline within remind_before is pushed without any window, once, also
    after the daemon is SIGKILLed and started again."""
    import signal
    import time
    from datetime import datetime, timedelta, timezone

    receiver.bodies.clear()
    ws = workspace(tmp_path, receiver)
    assert tick(ws, receiver, datetime.now(timezone.utc).isoformat(timespec="seconds"))[0] == 0
    env = {"FOLD_TEST_PUSH_URLS": receiver.url, "FOLD_IDLE_DELIVERY_EVERY": "1"}

    def wait_for(count, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and len(receiver.bodies) < count:
            time.sleep(0.2)
        return [body["title"] for body in receiver.bodies]

    daemon = ws.spawn("run", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(3)  # the daemon is up; these commits come from another process: no window sees them
        due = (datetime.now(timezone.utc) + timedelta(hours=2)).isoformat(timespec="seconds")
        commit(ws.store, {"batch_id": "due", "declarations": [
            {"id": "visa", "title": "Visa papers", "weight": "normal", "kind": "fyi", "due_at": due}]},
            datetime.now(timezone.utc).isoformat(timespec="seconds"))
        commit(ws.store, {"batch_id": "due2", "declarations": [
            {"id": "visa", "relation": "supersedes:visa", "weight": "normal", "kind": "needs-you"}]},
            datetime.now(timezone.utc).isoformat(timespec="seconds"))
        titles = wait_for(1, 60)
        assert len(titles) == 1 and titles[0].startswith("Needs you · Due soon"), titles
        assert titles[0].endswith(": Visa papers")
        time.sleep(3)  # several idle deliveries: nothing more
    finally:
        daemon.send_signal(signal.SIGKILL)
        daemon.wait(timeout=30)
    again = ws.spawn("run", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(6)
    finally:
        again.send_signal(signal.SIGTERM)
        again.wait(timeout=60)
    assert len(receiver.bodies) == 1
