"""Interrupt or digest, against a real Apprise receiver: with ``digest_at`` the non-urgent notifications
go as one digest at those local times, interrupts (decision frames, critical items, deadlines, sources,
or an instance's own ``interrupt_for``) at once."""

from __future__ import annotations


import pytest

from fold_host.cycle.delivery import deliver_all, register_new

from consumer_support import commit, instance, push_world, receiving

T0 = "2026-12-01T09:00:00+08:00"
FRAME = {"question": "Which venue?", "evidence": "complete",
         "options": [{"id": "hall", "label": "The hall"}, {"id": "park", "label": "The park"}]}


@pytest.fixture(scope="module")
def receiver():
    with receiving() as server:
        yield server


@pytest.fixture
def env(tmp_path, receiver, monkeypatch):
    with push_world(tmp_path, receiver, monkeypatch, "2026-12-01T08:30:00+08:00") as world:
        yield world


def run(env, push, now):
    result = deliver_all(env.db, str(env.store), [push], now=now, timezone="Asia/Shanghai", language="en",
                         coverage=())[0]
    assert result["status"] == "ok", result
    sent = [(body["title"], body["message"]) for body in env.receiver.bodies]
    env.receiver.bodies.clear()
    return sent


def test_digest_at_its_times_and_interrupts_at_once(env):
    push = instance("phone", "push", env.tmp, urls_env="FOLD_TEST_PUSH_URLS", min_weight="normal",
                    digest_at=["18:00", "08:00"])
    register_new(env.db, str(env.store), [push], now=T0)
    commit(env.store, {"batch_id": "b1", "declarations": [
        {"id": "newsletter", "title": "Team newsletter", "weight": "normal", "kind": "fyi"},
        {"id": "outage", "title": "Payments down", "weight": "critical", "kind": "in-progress"},
        {"id": "venue", "title": "Party venue", "weight": "normal", "kind": "needs-you", "decision": FRAME},
        {"id": "report", "title": "Quarterly report", "weight": "high", "kind": "fyi"}]}, T0)
    sent = run(env, push, T0)
    assert sorted(title for title, _ in sent) == ["New: Party venue", "New: Payments down"]
    assert run(env, push, "2026-12-01T17:59:00+08:00") == []
    sent = run(env, push, "2026-12-01T18:00:00+08:00")
    assert [title for title, _ in sent] == ["Fold digest: 2 change(s)"]
    assert sent[0][1].splitlines() == ["- New: Team newsletter [newsletter]", "- New: Quarterly report [report]"]
    assert run(env, push, "2026-12-01T18:05:00+08:00") == []
    commit(env.store, {"batch_id": "b2", "declarations": [
        {"id": "report", "relation": "supersedes:report", "weight": "high", "kind": "fyi",
         "due_at": "2026-12-09T12:00:00+08:00"}]}, "2026-12-01T19:00:00+08:00")
    assert run(env, push, "2026-12-01T19:00:00+08:00") == []
    assert run(env, push, "2026-12-02T07:59:00+08:00") == []
    assert [title for title, _ in run(env, push, "2026-12-02T08:01:00+08:00")] == ["Fold digest: 1 change(s)"]


def test_an_instance_lists_its_own_interrupts(env):
    push = instance("phone", "push", env.tmp, urls_env="FOLD_TEST_PUSH_URLS", min_weight="normal",
                    digest_at=["18:00"], interrupt_for=["decision"])
    register_new(env.db, str(env.store), [push], now=T0)
    commit(env.store, {"batch_id": "b1", "declarations": [
        {"id": "outage", "title": "Payments down", "weight": "critical", "kind": "in-progress"},
        {"id": "venue", "title": "Party venue", "weight": "normal", "kind": "needs-you", "decision": FRAME}]}, T0)
    assert [title for title, _ in run(env, push, T0)] == ["New: Party venue"]  # critical waits for the digest
    sent = run(env, push, "2026-12-01T18:00:00+08:00")
    assert [title for title, _ in sent] == ["Fold digest: 1 change(s)"] and "[outage]" in sent[0][1]


def test_a_digest_time_inside_quiet_hours_waits_for_their_end(env):
    push = instance("phone", "push", env.tmp, urls_env="FOLD_TEST_PUSH_URLS", min_weight="normal",
                    digest_at=["23:00"], quiet_hours="22:00-07:30")
    register_new(env.db, str(env.store), [push], now=T0)
    commit(env.store, {"batch_id": "b1", "declarations": [
        {"id": "newsletter", "title": "Team newsletter", "weight": "normal", "kind": "fyi"}]}, T0)
    assert run(env, push, T0) == []
    assert run(env, push, "2026-12-01T23:00:00+08:00") == []
    assert [title for title, _ in run(env, push, "2026-12-02T07:30:00+08:00")] == ["Fold digest: 1 change(s)"]
