"""The baseline editor reads ``user.learned``: a message of a sender or thread the user puts off goes one step
lower, one the user acts on one step higher; the thread's counts come first; noise stays noise."""

from __future__ import annotations

from fold_agents.baseline.editor import propose_baseline

NOW = "2026-10-09T08:00:00+08:00"


def _input(event: dict, learned: list) -> dict:
    state = {"schema": "fold.state/1", "now": NOW, "revision": 0, "budget": 64,
             "root": {"budget": 64, "used": 0, "free": 64, "items": []}, "not_active": [], "not_active_total": 0,
             "pending_annotations": []}
    return {"now": NOW, "batch_id": "b", "user": {"background": "", "purpose": "", "feedback_policy": "",
                                                   "learned": learned},
            "state": state, "pending_annotations": [], "events": [event],
            "signal": {"type": "events", "reason": "t", "received": 1, "window": {"from": NOW, "to": NOW},
                       "coverage": [], "reminders": 0}}


def _declared(event: dict, learned: list, lang: str = "zh") -> dict:
    output = propose_baseline(_input(event, learned), lang)
    (declaration,) = output["batch"]["declarations"]
    return declaration


NOTE = {"id": "e-1", "channel": "email", "from": "Li Na <Li.Na@work.example>", "at": "2026-10-09T07:00:00+08:00",
        "thread": "<t1@work.example>", "title": "数据迁移讨论纪要", "text": "那次讨论的纪要放在共享盘了，供参考。"}


def test_nothing_learned_leaves_the_weight_alone():
    assert _declared(NOTE, [])["weight"] == "normal"
    assert _declared(NOTE, [{"sender": "li.na@work.example", "snoozed": 2, "acknowledged": 0, "acted": 0}])[
        "weight"] == "normal"  # two snoozes are not yet a habit


def test_a_sender_put_off_three_times_goes_one_step_lower_and_the_reason_says_so():
    declared = _declared(NOTE, [{"sender": "LI.NA@work.example", "snoozed": 2, "acknowledged": 1, "acted": 0}])
    assert declared["weight"] == "low" and "3 次" in declared["reason"] and "降一档" in declared["reason"]
    english = _declared(NOTE, [{"sender": "li.na@work.example", "snoozed": 0, "acknowledged": 4, "acted": 1}], "en")
    assert english["weight"] == "low" and "4 times" in english["reason"]


def test_acting_raises_one_step_but_never_to_critical():
    assert _declared(NOTE, [{"sender": "li.na@work.example", "snoozed": 1, "acknowledged": 0, "acted": 3}])[
        "weight"] == "high"
    urgent = {**NOTE, "title": "数据迁移方案明天中午前给我意见", "text": "张伟，数据迁移方案请明天中午前给我意见，周一要定。"}
    assert _declared(urgent, [])["weight"] == "critical"
    assert _declared(urgent, [{"sender": "li.na@work.example", "acted": 5}])["weight"] == "critical"


def test_the_threads_counts_come_before_the_senders():
    learned = [{"thread": "<t1@work.example>", "snoozed": 0, "acknowledged": 0, "acted": 2},
               {"sender": "li.na@work.example", "snoozed": 5, "acknowledged": 0, "acted": 0}]
    assert _declared(NOTE, learned)["weight"] == "high"
    other_thread = {**NOTE, "thread": "<t2@work.example>"}
    assert _declared(other_thread, learned)["weight"] == "low"


def test_noise_stays_noise_and_malformed_entries_are_ignored():
    promotion = {**NOTE, "title": "双11预售：定金翻倍，满300减50", "text": "会员日特惠，全场5折，立即抢购！"}
    output = propose_baseline(_input(promotion, [{"sender": "li.na@work.example", "acted": 9}]), "zh")
    assert output["dispositions"][0]["disposition"] == "noise"
    junk = [None, "x", {"sender": 3}, {"thread": "<t1@work.example>", "snoozed": "many"}, {"acted": 4}]
    assert _declared(NOTE, junk)["weight"] == "normal"
