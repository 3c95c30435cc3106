"""Acknowledgement bound to a revision, against a real Apprise receiver: an ack, snooze or answer on an
item (the one feedback path of the CLI, the Pinboard and MCP) silences the notifications of the facts
it saw; facts it did not see, and new material facts, notify again."""

from __future__ import annotations


import pytest

from fold_host.cycle.delivery import deliver_all, register_new
from fold_host.cycle.feedback import save_feedback

from consumer_support import commit, instance, push_world, receiving

NIGHT = "2026-12-01T23:00:00+08:00"
MORNING = "2026-12-02T07:40:00+08:00"
FRAME = {"question": "Renew the lease or move out?", "evidence": "complete",
         "options": [{"id": "renew", "label": "Renew for a year"}, {"id": "move", "label": "Move out"}]}


@pytest.fixture(scope="module")
def receiver():
    with receiving() as server:
        yield server


@pytest.fixture
def env(tmp_path, receiver, monkeypatch):
    with push_world(tmp_path, receiver, monkeypatch, "2026-12-01T09:00:00+08:00") as world:
        push = instance("phone", "push", world.tmp, urls_env="FOLD_TEST_PUSH_URLS", quiet_hours="22:00-07:30",
                        kinds=["needs-you"])
        register_new(world.db, str(world.store), [push], now="2026-12-01T09:00:00+08:00")
        world.push = push
        yield world


def run(env, now):
    result = deliver_all(env.db, str(env.store), [env.push], now=now, timezone="Asia/Shanghai", language="en",
                         coverage=())[0]
    assert result["status"] == "ok", result
    sent = [body["title"] for body in env.receiver.bodies]
    env.receiver.bodies.clear()
    return sent


def feedback(env, item, meaning, now, **extra):
    until = "2026-12-05T09:00:00+08:00" if meaning == "snooze" else None
    document, code = save_feedback(str(env.store), item, meaning, None, until, now, via="button", extra=extra)
    assert code == 0, document


def test_an_ack_silences_what_it_saw_and_new_facts_notify_again(env):
    commit(env.store, {"batch_id": "n1", "declarations": [
        {"id": "leak", "title": "Water leak upstairs", "weight": "critical", "kind": "needs-you"}]}, NIGHT)
    assert run(env, NIGHT) == []  # held by the quiet hours
    feedback(env, "leak", "ack", "2026-12-01T23:20:00+08:00")  # seen on the Pinboard at night
    assert run(env, MORNING) == []  # the held notification of what was acknowledged does not go
    commit(env.store, {"batch_id": "n2", "declarations": [
        {"id": "leak", "relation": "supersedes:leak", "weight": "critical", "kind": "needs-you",
         "due_at": "2026-12-04T12:00:00+08:00"}]}, "2026-12-02T08:00:00+08:00")
    assert run(env, "2026-12-02T08:00:00+08:00") == ["Due 2026-12-04 12:00: Water leak upstairs"]


def test_an_ack_given_before_a_change_does_not_silence_the_change(env):
    commit(env.store, {"batch_id": "n1", "declarations": [
        {"id": "leak", "title": "Water leak upstairs", "weight": "high", "kind": "needs-you"}]}, NIGHT)
    feedback(env, "leak", "snooze", "2026-12-01T23:10:00+08:00")
    commit(env.store, {"batch_id": "n2", "declarations": [
        {"id": "leak", "relation": "supersedes:leak", "weight": "critical", "kind": "needs-you",
         "reason": "the ceiling is wet"}]}, "2026-12-01T23:30:00+08:00")
    assert run(env, NIGHT) == []
    sent = run(env, MORNING)
    assert sent == ["Fold: 1 notification(s) held during quiet hours"]


def test_an_answer_binds_to_the_revision_it_names(env):
    commit(env.store, {"batch_id": "d1", "declarations": [
        {"id": "lease", "title": "Lease ends in March", "weight": "high", "kind": "needs-you",
         "decision": FRAME}]}, "2026-12-01T10:00:00+08:00")
    assert run(env, "2026-12-01T10:00:00+08:00") == ["New: Lease ends in March"]
    options = FRAME["options"] + [{"id": "sublet", "label": "Sublet"}]
    changed = commit(env.store, {"batch_id": "d2", "declarations": [
        {"id": "lease", "relation": "supersedes:lease", "weight": "high", "kind": "needs-you",
         "decision": {**FRAME, "options": options}}]}, NIGHT)
    # Answered at night on the frame of revision 2 (before the change): the new options still go.
    feedback(env, "lease", "decide", "2026-12-01T23:30:00+08:00", option="renew", revision=changed["revision"] - 1)
    assert run(env, NIGHT) == []
    assert run(env, MORNING) == ["Fold: 1 notification(s) held during quiet hours"]
    options = options + [{"id": "buy", "label": "Buy the flat"}]
    third = commit(env.store, {"batch_id": "d3", "declarations": [
        {"id": "lease", "relation": "supersedes:lease", "weight": "high", "kind": "needs-you",
         "decision": {**FRAME, "options": options}}]}, "2026-12-02T23:00:00+08:00")
    # Answered on this very revision: the held notification of it is silenced.
    feedback(env, "lease", "decide", "2026-12-02T23:10:00+08:00", option="buy", revision=third["revision"])
    assert run(env, "2026-12-02T23:20:00+08:00") == []
    assert run(env, "2026-12-03T07:40:00+08:00") == []
