"""The baseline editor against the real kernel (in-memory store): determinism, budget, dispositions."""

from __future__ import annotations

import copy
import json
import random

import pytest

from fold_core.store.memory import memory_store
from fold_agents.baseline.editor import propose_baseline
from fold_agents.baseline.rules import summary_line, thread_item_id, title_line
from tests.agents.baseline_harness import Editor, agent_input, disposition_errors

NOW = "2026-10-09T08:00:00+08:00"


def mail(i, title, text="", thread=None, source="work-mail", **extra):
    return {"id": f"{source}:{i}", "source": source, "channel": "email", "from": "someone@example.com", "at": NOW,
            "title": title, "text": text, **({"thread": thread} if thread else {}), **extra}


def at(minute: int) -> str:
    return f"2026-10-09T{8 + minute // 60:02d}:{minute % 60:02d}:00+08:00"


def active(store, now=NOW):
    def walk(layer):
        for view in (layer or {}).get("items", []):
            yield view
            yield from walk(view.get("children"))
    return {v["id"]: v for v in walk(store.state_document(now=now).document["root"])}


def test_same_input_same_answer_and_rules_by_wording():
    store = memory_store()
    events = [mail(1, "签证材料缺银行流水，12日截止前请补交", "还缺纸质银行流水，请在10月12日18点前送到。", "visa"),
              mail(2, "限时特惠：全场折扣", "促销"),
              mail(3, "Weekly newsletter", "unsubscribe here"),
              mail(4, "PR 410 merged", "merged into main", "pr410"),
              mail(5, "服务器欠费，紧急", "账户已逾期，将停机"),
              mail(6, "Re: 签证", "还在查", "visa")]
    document = agent_input(store, NOW, events)
    first = propose_baseline(copy.deepcopy(document))
    assert json.dumps(first, sort_keys=True) == json.dumps(propose_baseline(copy.deepcopy(document)), sort_keys=True)
    assert disposition_errors(document, first) == []
    by_event = {d["event"]: d for d in first["dispositions"]}
    assert by_event["work-mail:2"]["disposition"] == "noise"
    declared = {d["id"]: d for d in first["batch"]["declarations"]}
    visa = declared[thread_item_id(events[0])]
    assert (visa["weight"], visa["kind"]) == ("high", "needs-you")
    assert "还缺纸质银行流水" in visa["summary"]  # the follow-up "还在查" only confirms: no rewrite
    assert visa["due_at"] == "2026-10-12T18:00:00+08:00"
    assert [s["ref"] for s in visa["sources"]] == ["event:work-mail:1"]
    assert by_event["work-mail:6"]["disposition"] == "used"
    assert (declared[thread_item_id(events[4])]["weight"], declared[thread_item_id(events[4])]["kind"]) == (
        "critical", "needs-you")  # urgent words in a message to the user: one step up from a request
    assert declared[thread_item_id(events[3])]["kind"] == "done"
    assert by_event["work-mail:3"]["disposition"] == "noise"  # a newsletter asks nothing of the user
    receipt = store.commit({"batch_id": "b1", **first["batch"]}, actor="baseline", now=NOW).document
    assert receipt["ok"] and receipt["type"] == "commit"


def test_unsafe_and_long_text_is_cut_to_valid_titles_and_summaries():
    store = memory_store()
    long_title = "关于二〇二六年第四季度预算调整与人员安排的通知（请各部门负责人务必阅读）"
    events = [mail(1, long_title, "正文\x00含控制字符\u2028和换行\n" + "很长" * 100),
              mail(2, None, "", thread="t2"), mail(3, "\t\n ", "x" * 5000, thread="t3")]
    receipt, outputs, document = Editor(store).cycle(NOW, events, batch_id="b1")
    assert receipt["ok"], receipt
    titles = {d["title"] for d in outputs[0]["batch"]["declarations"]}
    assert all(1 <= len(t) <= 24 for t in titles) and long_title[:23] + "…" in titles
    assert all(len(d.get("summary") or "") <= 60 for d in outputs[0]["batch"]["declarations"])


def test_titles_end_at_a_clause_and_summaries_skip_the_greeting():
    store = memory_store()
    events = [mail(1, "签证材料补交通知：请于10月12日前提交近六个月的银行流水",
                   "张伟先生/女士您好： 提醒您，签证申请的补交材料截止时间为10月12日。"),
              mail(2, "Re: Fwd: [ops] disk almost full on db-2", "Hi Jie, the disk on db-2 is at 93%.")]
    receipt, outputs, _ = Editor(store).cycle(NOW, events, batch_id="b1")
    assert receipt["ok"], receipt
    declared = {d["title"]: d for d in outputs[0]["batch"]["declarations"]}
    # Titles: reply prefixes and list tags dropped, cut at a clause; summaries: the fact and the next step,
    # never the message's first characters.
    # the subject's clause without its date gets the due day back: the title states the deadline
    assert set(declared) == {"签证材料补交通知：10月12日前", "disk almost full on db-2"}
    visa, disk = declared["签证材料补交通知：10月12日前"]["summary"], declared["disk almost full on db-2"]["summary"]
    assert "签证申请的补交材料截止时间为10月12日" in visa and not visa.startswith("张伟")
    assert "the disk on db-2 is at 93%" in disk and not disk.startswith("Hi")
    # Nothing left after the greeting or the prefix: the text is kept as it is.
    assert summary_line("你好", 60) == "你好" and title_line("Re:", 24) == "Re:"


def test_thread_follow_ups_patch_the_same_item_and_a_withdrawn_one_is_restored():
    store = memory_store()
    editor = Editor(store)
    editor.cycle(NOW, [mail(1, "合同待审批", "请在下周一前审批", "c-1")], batch_id="b1")
    item = thread_item_id(mail(1, "", thread="c-1"))
    assert active(store)[item]["weight"] == "high"
    receipt, outputs, _ = editor.cycle(at(5), [mail(2, "Re: 合同", "紧急：法务要求你今天回复", "c-1")], batch_id="b2")
    assert receipt["ok"] and [c["op"] for c in receipt["changes"]] == ["updated"]
    assert active(store, at(5))[item]["weight"] == "critical"
    assert store.commit({"batch_id": "w", "declarations": [{"id": item, "relation": "withdraw", "reason": "done"}]},
                        actor="user", now=at(6)).document["ok"]
    receipt, outputs, _ = editor.cycle(at(10), [mail(3, "Re: 合同", "对方又来信了", "c-1")], batch_id="b3")
    assert receipt["ok"] and receipt["changes"][0] == {"item": item, "op": "restored", "layer": None, "share": 6}


def test_a_forward_or_re_send_without_news_is_a_duplicate_and_one_with_news_updates_the_item():
    store = memory_store()
    editor = Editor(store)
    editor.cycle(NOW, [mail(1, "合同 HT-2026-0815 待审批", "请在下周一前审批，金额 12 万。", "c-1")], batch_id="b1")
    item = thread_item_id(mail(1, "", thread="c-1"))
    receipt, outputs, _ = editor.cycle(at(1), [mail(2, "Fwd: 合同 HT-2026-0815 待审批", "请在下周一前审批，金额 12 万。")],
                                       batch_id="b2")
    assert receipt["type"] == "checked"
    assert outputs[0]["dispositions"][0] | {"why": ""} == {"event": "work-mail:2", "disposition": "duplicate",
                                                            "why": "", "related": [item]}
    receipt, outputs, _ = editor.cycle(at(2), [mail(3, "Fwd: 合同 HT-2026-0815 待审批", "金额改成 15 万，请在明天前审批。")],
                                       batch_id="b3")
    assert receipt["changes"] == [{"item": item, "op": "updated", "layer": None, "share": 24}]
    assert active(store, at(2))[item]["due_at"] == "2026-10-10T23:59:00+08:00"
    assert outputs[0]["batch"]["declarations"][0]["relation"] == f"supersedes:{item}"


def test_an_id_beyond_the_not_active_window_is_fixed_from_the_receipt():
    store = memory_store()
    editor = Editor(store)
    editor.cycle(NOW, [mail(1, "发票", "本月发票", "inv")], batch_id="b1")
    item = thread_item_id(mail(1, "", thread="inv"))
    store.commit({"batch_id": "w", "declarations": [{"id": item, "relation": "withdraw", "reason": "r"}]},
                 actor="user", now=at(1))
    receipt, outputs, _ = editor.cycle(at(2), [mail(2, "发票", "补开发票", "inv")], batch_id="b2", not_active=0)
    assert receipt["ok"] and receipt["changes"][0]["op"] == "restored"
    assert [o["batch"]["declarations"][0]["relation"] for o in outputs] == ["new", f"supersedes:{item}"]


def test_a_merged_thread_item_is_followed_to_its_successor():
    store = memory_store()
    editor = Editor(store)
    editor.cycle(NOW, [mail(1, "机票改签", "改签成功", "a"), mail(2, "酒店", "酒店已确认", "b")], batch_id="b1")
    a, b = (thread_item_id(mail(0, "", thread=t)) for t in "ab")
    merge = {"id": "trip", "relation": f"merges:[{a}, {b}]", "title": "出行安排", "weight": "normal", "kind": "fyi"}
    assert store.commit({"batch_id": "m", "declarations": [merge]}, actor="user", now=at(1)).document["ok"]
    for window, not_active in (("b2", 200), ("b3", 0)):
        receipt, outputs, _ = editor.cycle(at(2), [mail(f"3{window}", "Re: 机票", "航班延误，紧急：请你今天改签", "a")],
                                           batch_id=window, not_active=not_active)
        assert receipt["ok"] and outputs[-1]["dispositions"][0]["related"] == ["trip"], outputs
        if window == "b2":
            assert receipt["changes"][0]["item"] == "trip" and active(store, at(2))["trip"]["kind"] == "needs-you"
    assert len(outputs) == 3  # hidden: new -> item_exists -> supersedes -> item_merged -> the successor


def test_unfixable_rejection_falls_back_to_a_minimal_batch():
    store = memory_store()
    store.commit({"batch_id": "s", "declarations": [{"id": "x", "title": "X", "weight": "low", "kind": "fyi"}]},
                 actor="user", now=NOW)
    store.annotate(item="x", text="看一下", author="user", now=NOW)
    document = agent_input(store, NOW, [mail(1, "hello", "world")])
    answer = propose_baseline(document, "en", [{"ok": False, "errors": [{"code": "stale_revision"}]}])
    assert answer["batch"] == {"declarations": [], "acknowledges": ["ann-1"]}
    assert [d["disposition"] for d in answer["dispositions"]] == ["deferred"]
    assert "stale_revision" in answer["dispositions"][0]["why"]
    gone = {"ok": False, "errors": [{"code": "annotation_not_found", "annotation": "ann-1"}]}
    assert propose_baseline(document, "en", [gone])["batch"] == {"declarations": [], "acknowledges": []}


def test_full_layer_withdraws_the_lowest_ranked_with_a_reason():
    store = memory_store()
    fill = [{"id": f"old-{i}", "title": f"旧事项 {i}", "weight": "normal", "kind": "fyi"} for i in range(10)]
    fill += [{"id": "trace-1", "title": "痕迹", "weight": "trace", "kind": "fyi"},
             {"id": "low-1", "title": "低", "weight": "low", "kind": "fyi"}]
    assert store.commit({"batch_id": "s", "declarations": fill}, actor="user", now=NOW).document["layers"][0][
        "used"] == 64
    receipt, outputs, _ = Editor(store).cycle(at(1), [mail(1, "紧急：服务器宕机", "请立即处理")], batch_id="b1")
    assert receipt["ok"] and receipt["layers"][0]["used"] <= 64
    declared = outputs[0]["batch"]["declarations"]
    withdrawn = [d for d in declared if d["relation"] == "withdraw"]
    assert [d["id"] for d in withdrawn] == ["trace-1", "low-1"]  # the smallest fyi items go first ...
    lowered = [d for d in declared if d["relation"].startswith("supersedes:")]
    assert lowered and all(d["weight"] == "low" and d["reason"] for d in lowered)  # ... then fyi items are lowered
    assert all(d["reason"] for d in withdrawn)
    new = [d for d in declared if d["relation"] == "new"]
    assert [(d["weight"], d["kind"]) for d in new] == [("critical", "needs-you")]  # urgent, to the user


def test_budget_fitting_keeps_near_deadlines_high_and_withdraws_finished_before_open_items():
    store = memory_store()
    fill = [{"id": "report", "title": "周报", "weight": "critical", "kind": "needs-you",
             "due_at": "2026-10-10T18:00:00+08:00"},
            {"id": "bill", "title": "账单", "weight": "high", "kind": "needs-you", "due_at": "2026-10-14T18:00:00+08:00"},
            {"id": "laptop", "title": "笔记本在路上", "weight": "normal", "kind": "in-progress"},
            {"id": "merged", "title": "PR 已合并", "weight": "normal", "kind": "done"},
            {"id": "note", "title": "例会改时间", "weight": "normal", "kind": "fyi"},
            {"id": "later", "title": "年底体检", "weight": "normal", "kind": "needs-you"},
            {"id": "pr", "title": "PR 411 等 CI", "weight": "low", "kind": "in-progress"}]
    assert store.commit({"batch_id": "s", "declarations": fill}, actor="user", now=NOW).document["ok"]
    events = [mail(i, f"请在 10 月 {10 + i} 日前提交材料 {i}", f"材料 {i} 还缺，请在 10 月 {10 + i} 日前补交。", f"t{i}")
              for i in range(4)]
    receipt, outputs, _ = Editor(store).cycle(at(1), events, batch_id="b1")
    assert receipt["ok"], receipt
    items = active(store, at(1))
    assert items["report"]["weight"] in ("critical", "high") and items["bill"]["weight"] == "high"
    withdrawn = [d["id"] for d in outputs[0]["batch"]["declarations"] if d["relation"] == "withdraw"]
    assert "laptop" in items and "pr" in items  # in-progress items stay while a finished one could go
    assert set(withdrawn) <= {"merged", "note"}
    # Every new deadline is there, at its own weight, at the root or in a shared parent.
    mine = [v for v in items.values() if v["title"].startswith("请在")]
    assert len(mine) == 4 and all(v["kind"] == "needs-you" and v["due_at"] for v in mine)
    assert all(v["weight"] in ("critical", "high") for v in mine)  # all due within 7 days


def test_feedback_reminders_annotations_and_reviews():
    store = memory_store()
    seed = [{"id": "visa", "title": "签证材料", "weight": "critical", "kind": "needs-you"},
            {"id": "report", "title": "季度报告", "weight": "high", "kind": "needs-you"},
            {"id": "gone", "title": "旧事", "weight": "low", "kind": "fyi"}]
    store.commit({"batch_id": "s", "declarations": seed}, actor="user", now=NOW)
    store.commit({"batch_id": "w", "declarations": [{"id": "gone", "relation": "withdraw", "reason": "r"}]},
                 actor="user", now=NOW)
    store.annotate(item="visa", text="优先处理", author="user", now=NOW)
    editor = Editor(store, lang="en")
    # The note asks for what the item already has (critical): acknowledged, and never pasted as its summary.
    receipt, _, _ = editor.cycle(at(1), [], batch_id="review-1")
    assert receipt["type"] in ("commit", "acknowledge") and receipt["acknowledged"] == ["ann-1"]
    assert "优先处理" not in (active(store, at(1))["visa"]["summary"] or "")
    assert active(store, at(1))["visa"]["weight"] == "critical"
    receipt, _, _ = editor.cycle(at(2), [], batch_id="review-2")
    assert receipt["type"] == "checked"

    def fb(i, target, meaning, **more):
        return {"id": f"fb:{i}", "source": "feedback", "channel": "feedback", "from": "user", "at": at(3),
                "title": None, "text": "", "feedback": {"target": target, "action": meaning, "meaning": meaning,
                                                        "via": "button", **more}}

    events = [fb(1, "visa", "ack"), fb(2, "report", "decide", value="Send it on Monday"), fb(3, "nope", "ack")]
    receipt, outputs, document = editor.cycle(at(3), events, batch_id="b-fb")
    assert receipt["ok"], receipt
    items = active(store, at(3))
    assert items["visa"]["weight"] == "high" and "acknowledged" in items["visa"]["reason"]
    assert items["report"]["kind"] == "in-progress" and "Send it on Monday" in items["report"]["summary"]
    assert {d["event"]: d["disposition"] for d in outputs[-1]["dispositions"]}["fb:3"] == "deferred"
    snooze = [fb(4, "report", "snooze", until=at(60))]
    assert editor.cycle(at(4), snooze, batch_id="b-sn")[0]["ok"]
    assert active(store, at(4))["report"]["weight"] == "low"
    # The snooze's end reads as people write times (in the window's offset), not as an ISO instant.
    assert "reminded at Oct 9 09:00;" in active(store, at(4))["report"]["reason"]
    reminders = [{"id": "rem:1", "source": "reminders", "channel": "reminder", "from": "fold", "at": at(60),
                  "title": None, "text": "", "reminder": {"feedback": "fb:4", "target": t, "requested_at": at(4)}}
                 for t in ("report",)] + [
                 {"id": "rem:2", "source": "reminders", "channel": "reminder", "from": "fold", "at": at(60),
                  "title": None, "text": "", "reminder": {"feedback": "x", "target": "gone", "requested_at": NOW}}]
    receipt, _, _ = editor.cycle(at(60), reminders, batch_id="b-rem")
    assert receipt["ok"] and {c["item"]: c["op"] for c in receipt["changes"]} == {"report": "updated",
                                                                                  "gone": "restored"}
    assert active(store, at(60))["report"]["weight"] == "high"


@pytest.mark.parametrize("budget", [64, 8])
def test_a_burst_of_500_observations_never_meets_a_budget_rejection(budget):
    store, rng = memory_store(budget), random.Random(7)
    editor = Editor(store)
    words = ["紧急：系统告警", "请确认报价", "PR merged", "等待审核中", "Weekly digest", "限时特惠 折扣", "项目周会纪要",
             "截止日期提醒", "invoice due", "hello"]
    observations = [mail(i, f"{rng.choice(words)} #{i}", "正文 " * rng.randrange(1, 30),
                         thread=f"t{rng.randrange(120)}" if rng.random() < 0.6 else None,
                         source=rng.choice(["work-mail", "home-mail"])) for i in range(500)]
    seen, retries = {}, 0
    for cycle, start in enumerate(range(0, 500, 50)):
        events = observations[start:start + 50]
        receipt, outputs, document = editor.cycle(at(cycle), events, batch_id=f"burst-{cycle}")
        assert receipt["ok"], receipt
        assert disposition_errors(document, outputs[-1]) == []
        seen.update({d["event"]: d["disposition"] for d in outputs[-1]["dispositions"]})
        retries += len(outputs) - 1  # only item_exists for ids beyond the 200 not-active entries shown
        state = store.state_document(now=at(cycle)).document
        assert state["root"]["used"] <= budget
    assert len(seen) == 500 and set(seen.values()) <= {"used", "noise", "duplicate", "deferred"}
    assert editor.calls == 10 + retries
    assert sum(1 for r in editor.rejections if r["code"] == "layer_budget") == 0
    assert {r["code"] for r in editor.rejections} <= {"item_exists"}


def test_a_reminder_restores_a_child_only_under_an_active_parent_with_a_summary():
    store = memory_store()
    tree = [{"id": f"p{i}", "title": f"父 {i}", "summary": "概要", "weight": "high", "kind": "fyi",
             "children": [{"id": f"c{i}", "title": "子", "weight": "low", "kind": "fyi"}]} for i in (1, 2)]
    store.commit({"batch_id": "s", "declarations": tree}, actor="user", now=NOW)
    store.commit({"batch_id": "w", "declarations": [
        {"id": "c1", "relation": "withdraw", "reason": "r"}, {"id": "c2", "relation": "withdraw", "reason": "r"},
        {"id": "p2", "relation": "supersedes:p2", "summary": None, "weight": "high", "kind": "fyi"}]},
        actor="user", now=NOW)
    reminders = [{"id": f"rem:{i}", "source": "reminders", "channel": "reminder", "from": "fold", "at": at(9),
                  "title": None, "text": "", "reminder": {"feedback": "f", "target": f"c{i}", "requested_at": NOW}}
                 for i in (1, 2)]
    receipt, outputs, _ = Editor(store).cycle(at(9), reminders, batch_id="b")
    assert len(outputs) == 1 and receipt["changes"] == [{"item": "c1", "op": "restored", "layer": "p1", "share": 12}]
    assert [d["disposition"] for d in outputs[0]["dispositions"]] == ["used", "deferred"]


def test_a_reminder_for_an_item_done_while_snoozed_raises_nothing():
    store = memory_store()
    store.commit({"batch_id": "s", "declarations": [
        {"id": "tax", "title": "报税", "weight": "low", "kind": "needs-you"}]}, actor="user", now=NOW)
    store.commit({"batch_id": "d", "declarations": [
        {"id": "tax", "relation": "supersedes:tax", "weight": "low", "kind": "done", "summary": "已报。"}]},
        actor="user", now=at(5))
    reminder = {"id": "rem:1", "source": "reminders", "channel": "reminder", "from": "fold", "at": at(9),
                "title": None, "text": "", "reminder": {"feedback": "f", "target": "tax", "requested_at": NOW}}
    receipt, outputs, _ = Editor(store, lang="en").cycle(at(9), [reminder], batch_id="b")
    assert receipt["ok"] and receipt["changes"] == [], receipt
    assert (active(store, at(9))["tax"]["weight"], active(store, at(9))["tax"]["kind"]) == ("low", "done")
    [disposition] = outputs[0]["dispositions"]
    assert disposition["disposition"] == "used" and "done by now" in disposition["why"]


def test_pressing_matters_that_do_not_fit_a_bundle_share_a_bundle_inside_it():
    store, editor = memory_store(), None
    editor = Editor(store)
    topics = ["签证", "合同", "房租", "体检", "报销", "面签", "车险", "护照", "学费", "网费", "燃气", "社保", "公积金", "年检",
              "换证", "续约", "押金"]
    def asks(i, topic):
        return mail(i, f"{topic}事项请在 10 月 {11 + i % 4} 日前处理", f"张伟，{topic}的材料请在 10 月 {11 + i % 4} 日 18:00 前交给我。",
                    f"t{i}")
    receipt, _, _ = editor.cycle(at(1), [asks(i, t) for i, t in enumerate(topics[:12])], batch_id="b1")
    assert receipt["ok"], receipt
    receipt, _, _ = editor.cycle(at(2), [asks(i, t) for i, t in enumerate(topics[12:], start=12)], batch_id="b2")
    assert receipt["ok"], receipt
    items = active(store, at(2))
    mine = [v for v in items.values() if "事项" in v["title"]]
    assert len(mine) == 17 and all(v["weight"] in ("critical", "high") and v["due_at"] for v in mine)
    assert {"fold-needs-you", "fold-needs-you-2"} <= set(items)
    document = store.state_document(now=at(2)).document
    def layers(layer, depth=1):
        yield layer, depth
        for view in layer.get("items", []):
            if view.get("children"):
                yield from layers(view["children"], depth + 1)
    found = list(layers(document["root"]))
    assert all(layer["used"] <= 64 for layer, _ in found) and max(depth for _, depth in found) <= 6
