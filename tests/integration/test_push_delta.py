"""Push's material delta against a real Apprise receiver (json://): one test per rule, notifying and
silent; what changed before → after and what did not, in the item's language, local time, the link;
facts already notified are not sent again; a digest entry superseded before it went out."""

from __future__ import annotations

import pytest

from fold_host.cycle.delivery import deliver_all, register_new

from consumer_support import annotate, commit, instance, push_world, receiving

T0 = "2026-12-01T10:00:00+08:00"
FRAME = {"question": "先临时缓解，还是本周迁移到按字段合并？",
         "options": [{"id": "mitigate", "label": "先临时缓解", "consequence": "今天恢复登录；下周仍需迁移"},
                     {"id": "migrate", "label": "本周迁移", "consequence": "周四停服 2 小时，根治"}],
         "recommended": "mitigate", "basis": "负载测试显示迁移需停服 2 小时。",
         "fallback": {"option": "mitigate", "summary": "周五 18:00 前无答复则先缓解"},
         "decide_by": "2026-12-11T18:00:00+08:00", "evidence": "partial", "gap": "移动端是否受影响尚未验证"}


@pytest.fixture(scope="module")
def receiver():
    with receiving() as server:
        yield server


@pytest.fixture
def env(tmp_path, receiver, monkeypatch):
    with push_world(tmp_path, receiver, monkeypatch, "2026-12-01T09:00:00+08:00") as world:
        yield world


def phone(env, **settings):
    push = instance("phone", "push", env.tmp, **{"urls_env": "FOLD_TEST_PUSH_URLS", "min_weight": "high",
                                                 **settings})
    register_new(env.db, str(env.store), [push], now=T0)
    return push


def run(env, push, now=T0, public_url=None):
    result = deliver_all(env.db, str(env.store), [push], now=now, timezone="Asia/Shanghai", language="en",
                         coverage=(), public_url=public_url)[0]
    assert result["status"] == "ok", result
    sent = list(env.receiver.bodies)
    env.receiver.bodies.clear()
    return sent


COUNT = iter(range(10_000))


def batch(env, *declarations, now=T0):
    from fold_core.store.file import file_store
    for declaration in declarations:  # a patch keeps the weight and kind it does not change
        if str(declaration.get("relation", "")).startswith("supersedes:"):
            view = file_store(env.store).state_document(now=now, item=declaration["id"], depth=0,
                                                        not_active=None).document.get("item") or {}
            declaration.setdefault("weight", view.get("weight"))
            declaration.setdefault("kind", view.get("kind"))
    commit(env.store, {"batch_id": f"b{next(COUNT)}", "declarations": list(declarations)}, now)


def item(item_id, title, weight, kind, **extra):
    return {"id": item_id, "title": title, "weight": weight, "kind": kind, **extra}


def patch(item_id, **extra):
    return {"id": item_id, "relation": f"supersedes:{item_id}", **extra}


def test_new_eligible_item_notifies_and_an_ineligible_one_is_silent(env):
    push = phone(env)
    batch(env, item("deploy", "Deploy window moved", "high", "fyi", summary="Now Thursday 14:00."),
          item("lunch", "Lunch menu", "normal", "fyi"))
    sent = run(env, push)
    assert [body["title"] for body in sent] == ["New: Deploy window moved"]
    assert "Now Thursday 14:00." in sent[0]["message"] and "id: deploy" in sent[0]["message"]
    # a new item has nothing unchanged: its facts are said as they are now
    assert "Now: weight high · kind fyi" in sent[0]["message"] and "Unchanged" not in sent[0]["message"]


def test_kind_to_needs_you_notifies_with_before_and_after(env):
    push = phone(env)
    batch(env, item("vendor", "Vendor contract", "high", "fyi"))
    run(env, push)
    batch(env, patch("vendor", kind="needs-you"))
    sent = run(env, push)
    assert [body["title"] for body in sent] == ["Needs you: Vendor contract"]
    assert "kind: fyi → needs-you" in sent[0]["message"]
    assert "Unchanged: weight high" in sent[0]["message"]
    batch(env, patch("vendor", kind="in-progress"))  # away from needs-you: silent
    assert run(env, push) == []


def test_raised_notifies_lowered_is_silent_and_raised_back_to_notified_facts_is_silent(env):
    push = phone(env)
    batch(env, item("outage", "Login outage", "high", "in-progress"))
    run(env, push)
    batch(env, patch("outage", weight="critical"))
    sent = run(env, push)
    assert [body["title"] for body in sent] == ["Raised to critical: Login outage"]
    assert "weight: high → critical" in sent[0]["message"]
    batch(env, patch("outage", weight="high", reason="mitigated"))
    assert run(env, push) == []  # lowered
    batch(env, patch("outage", weight="critical"))
    assert run(env, push) == []  # back to what was notified


def test_due_changed_notifies_and_another_spelling_of_it_is_silent(env):
    push = phone(env)
    batch(env, item("tax", "税务申报", "high", "needs-you", due_at="2026-12-20T18:00:00+08:00"))
    run(env, push)
    batch(env, patch("tax", due_at="2026-12-20T10:00:00Z"))  # the same instant written otherwise: no change
    assert run(env, push) == []
    batch(env, patch("tax", due_at="2026-12-18T18:00:00+08:00"))
    sent = run(env, push)
    assert [body["title"] for body in sent] == ["截止改为 2026-12-18 18:00：税务申报"]
    assert "截止：2026-12-20 18:00 → 2026-12-18 18:00" in sent[0]["message"]
    assert "未变：权重 high · 类型 needs-you" in sent[0]["message"]


def test_decision_frame_new_and_changed_notify_with_question_options_and_link(env):
    push = phone(env, kinds=["needs-you"])
    batch(env, item("auth", "登录故障的处理方式", "normal", "needs-you", decision=FRAME))
    sent = run(env, push, public_url="https://fold.example.org")
    assert [body["title"] for body in sent] == ["新事项：登录故障的处理方式"]
    message = sent[0]["message"]
    for line in ["问题：先临时缓解，还是本周迁移到按字段合并？",
                 "选项：先临时缓解 — 今天恢复登录；下周仍需迁移; 本周迁移 — 周四停服 2 小时，根治",
                 "建议：先临时缓解（负载测试显示迁移需停服 2 小时。）", "无人答复时：周五 18:00 前无答复则先缓解",
                 "决定期限：2026-12-11 18:00", "查看：https://fold.example.org/item/auth"]:
        assert line in message, (line, message)
    batch(env, patch("auth", decision={**FRAME, "basis": "另一条依据。"}))  # neither question nor options
    assert run(env, push) == []
    options = FRAME["options"] + [{"id": "wait", "label": "再观察一天"}]
    batch(env, patch("auth", decision={**FRAME, "options": options}))
    sent = run(env, push)
    assert [body["title"] for body in sent] == ["决定有变：登录故障的处理方式"]
    assert "选项：先临时缓解 / 本周迁移 → 先临时缓解 / 本周迁移 / 再观察一天" in sent[0]["message"]
    assert "未变：权重 normal · 类型 needs-you" in sent[0]["message"]
    assert "查看：" not in sent[0]["message"]  # no public_url: no link


def test_decision_frame_on_an_existing_item_notifies(env):
    push = phone(env, kinds=["needs-you"])
    batch(env, item("flight", "Rebooked flight", "normal", "needs-you"))
    run(env, push)
    frame = {"question": "Accept the new time or ask for a refund?", "evidence": "complete",
             "options": [{"id": "accept", "label": "Accept 14:05"}, {"id": "refund", "label": "Refund"}]}
    batch(env, patch("flight", decision=frame))
    sent = run(env, push)
    assert [body["title"] for body in sent] == ["Decision: Rebooked flight"]
    assert "Question: Accept the new time or ask for a refund?" in sent[0]["message"]
    assert "Options: Accept 14:05; Refund" in sent[0]["message"]


def test_title_or_summary_change_notifies_at_critical_or_facts_from(env):
    push = phone(env)
    batch(env, item("visa", "Visa papers", "critical", "needs-you"), item("pr", "PR 411", "high", "in-progress"))
    run(env, push)
    batch(env, patch("visa", title="Visa: bank statement"), patch("pr", summary="CI is red"))
    sent = run(env, push)
    assert [body["title"] for body in sent] == ["Changed: Visa: bank statement"]
    assert "title: Visa papers → Visa: bank statement" in sent[0]["message"]
    assert "Unchanged: weight critical · kind needs-you" in sent[0]["message"]
    high = instance("tablet", "push", env.tmp, urls_env="FOLD_TEST_PUSH_URLS", facts_from="high")
    register_new(env.db, str(env.store), [high], now=T0)
    batch(env, patch("pr", summary="CI is green again"))
    sent = run(env, high)
    assert [body["title"] for body in sent] == ["Changed: PR 411"]
    assert "summary: CI is red → CI is green again" in sent[0]["message"]


def test_silent_on_reason_sources_share_lowered_withdraw_acknowledge_and_checked(env):
    push = phone(env)
    batch(env, item("bill", "Card bill", "critical", "needs-you", due_at="2026-12-15T12:00:00+08:00"))
    run(env, push)
    batch(env, patch("bill", reason="the issuer wrote again"))
    batch(env, patch("bill", sources=[{"ref": "https://bank.example/statement", "channel": "email"}]))
    batch(env, patch("bill", share=30, reason="it is big"))
    batch(env, patch("bill"))  # nothing changes: a checked record
    ann_id = annotate(env.store, "bill", "paid by autopay?", T0)["annotation"]
    commit(env.store, {"batch_id": "ack", "declarations": [], "acknowledges": [ann_id]}, T0)
    batch(env, patch("bill", weight="high", reason="autopay is on"))
    assert run(env, push) == []
    batch(env, {"id": "bill", "relation": "withdraw", "reason": "paid"})
    assert run(env, push) == []


def test_a_digest_entry_superseded_before_it_went_out_sends_only_the_latest_facts(env):
    push = phone(env, quiet_hours="22:00-07:30")
    night = "2026-12-01T23:00:00+08:00"
    batch(env, item("move", "Movers booked", "high", "fyi", due_at="2026-12-10T09:00:00+08:00"), now=night)
    assert run(env, push, now=night) == []
    batch(env, patch("move", due_at="2026-12-11T09:00:00+08:00"), now=night)
    batch(env, patch("move", due_at="2026-12-12T09:00:00+08:00"), now=night)
    assert run(env, push, now="2026-12-02T01:00:00+08:00") == []
    sent = run(env, push, now="2026-12-02T07:40:00+08:00")
    assert len(sent) == 1 and "[move]" in sent[0]["message"]
    assert sent[0]["message"].count("move") == 1  # one entry: the created item with its latest due
    assert "Due" not in sent[0]["message"] and "New: Movers booked" in sent[0]["message"]
    # Changed and changed back while held: nothing goes.
    batch(env, patch("move", due_at="2026-12-13T09:00:00+08:00"), now="2026-12-02T23:00:00+08:00")
    batch(env, patch("move", due_at="2026-12-12T09:00:00+08:00"), now="2026-12-02T23:30:00+08:00")
    assert run(env, push, now="2026-12-02T23:40:00+08:00") == []
    assert run(env, push, now="2026-12-03T07:40:00+08:00") == []
