"""The baseline's decision frames against the real kernel (in-memory store): an agent's question carried
verbatim, mail asking to choose or reply by a date, answers and fallbacks moving the item on (contract §3.6)."""

from __future__ import annotations

import copy

from fold_core.store.memory import memory_store
from fold_agents.baseline.rules import thread_item_id
from tests.agents.baseline_harness import Editor

NOW = "2026-10-09T12:00:00+08:00"
QUESTION = "先用 refresh_token_ttl = 0 临时缓解，还是这周迁移到按字段合并？"  # 35 code points: a title would cut it
OPTIONS = [{"id": "mitigate", "label": "先临时缓解", "consequence": "今天恢复登录；下周仍需迁移"},
           {"id": "migrate", "label": "本周迁移", "consequence": "周四停服 2 小时，根治"}]
AIRLINE_EN = ("Dear Mr ZHANG WEI,\n\nYour flight MU5101 Shanghai (PVG) - Beijing (PEK) on 14 October 2026 has been "
              "rescheduled:\n\n  Old departure: 08:00\n  New departure: 10:30\n\nNo action is needed if the new time "
              "suits you. To change or refund free of charge, reply before 12 October.\n\nChina Eastern Airlines")
AIRLINE_ZH = ("张伟先生您好：您10月14日的 MU5101 航班（上海浦东—北京首都）起飞时间由 08:00 调整为 10:30。"
              "如接受新时间，无需任何操作；如需免费改签或退票，请于10月12日前回复本邮件。")


def question_event(n=1, *, decide_by="2026-10-09T18:00:00+08:00", options=OPTIONS, evidence=None):
    """A question observation as the work-log adapter and MCP ``fold_ask`` write it (``meta.type: question``)."""
    frame = {"question": QUESTION, "options": copy.deepcopy(options), "recommended": "mitigate",
             "basis": "负载测试显示迁移需停服 2 小时。",
             "fallback": {"option": "mitigate", "summary": "周五 18:00 前无答复则先缓解"}}
    if decide_by:
        frame["decide_by"] = decide_by
    frame.update(evidence or {})
    return {"id": f"agent-log:q{n}", "source": "agent-log", "channel": "worklog", "from": "coding-agent",
            "at": "2026-10-09T09:25:00+08:00", "title": QUESTION, "text": QUESTION, "thread": f"question:q-{n}",
            "meta": {"type": "question", "question_id": f"q-{n}", "decision": frame,
                     "context": "worker 服务锁定在 3.4.1，升级会触发 legacyMerge 的弃用错误"}}


def mail(n, title, text, sender="someone@example.com", at="2026-10-09T07:30:00+08:00"):
    return {"id": f"mail:{n}", "source": "mail", "channel": "email", "from": sender, "at": at, "title": title,
            "text": text, "thread": f"<t{n}@example.com>"}


def feedback(n, item, meaning="decide", **fields):
    return {"id": f"feedback:{n}", "source": "feedback", "channel": "feedback", "from": "user", "at": NOW,
            "title": f"{meaning}: {item}", "text": "",
            "feedback": {"target": item, "action": meaning, "meaning": meaning, "via": "cli", **fields}}


def item(store, item_id, now=NOW):
    return store.state_document(now=now, item=item_id, depth=0, not_active=0).document["item"]


def raised(store, event, lang="zh"):
    editor = Editor(store, lang)
    receipt, outputs, _ = editor.cycle(NOW, [event], batch_id="b1")
    assert receipt["ok"], receipt
    return editor, thread_item_id(event)


def test_an_agents_question_becomes_a_needs_you_item_with_its_frame_verbatim():
    store = memory_store()
    _, item_id = raised(store, question_event())
    view = item(store, item_id)
    frame = view["decision"]
    assert (view["kind"], view["weight"], view["due_at"]) == ("needs-you", "critical", "2026-10-09T18:00:00+08:00")
    assert frame["question"] == QUESTION  # whole, not cut to a summary's 60 code points
    assert frame["options"] == OPTIONS  # ids, labels and consequences as the agent gave them
    assert (frame["recommended"], frame["fallback"]) == ("mitigate", {"option": "mitigate",
                                                                      "summary": "周五 18:00 前无答复则先缓解"})
    assert frame["evidence"] == "partial" and "coding-agent" in frame["gap"]  # only the agent's word for it
    assert len(frame["digest"]) == 16
    assert view["title"] == "coding-agent：待你决定"  # no task named: the asking agent names it


def test_a_question_naming_its_task_names_the_item_for_it_before_and_after_the_answer():
    store = memory_store()
    event = question_event()
    event["meta"]["task"] = "lattice-upgrade"
    editor, item_id = raised(store, event)
    assert item(store, item_id)["title"] == "lattice-upgrade：待你决定"
    digest = item(store, item_id)["decision"]["digest"]
    receipt, _, _ = editor.cycle(NOW, [feedback(1, item_id, option="migrate", digest=digest)], batch_id="b2")
    assert receipt["ok"], receipt
    assert item(store, item_id)["title"] == "lattice-upgrade：已决定"


def test_the_askers_own_evidence_status_is_kept():
    store = memory_store()
    event = question_event(evidence={"evidence": "complete"})
    _, item_id = raised(store, event)
    frame = item(store, item_id)["decision"]
    assert frame["evidence"] == "complete" and "gap" not in frame


def test_weight_follows_how_near_decide_by_is():
    weights = {}
    for n, decide_by in ((1, "2026-10-09T18:00:00+08:00"), (2, "2026-10-13T18:00:00+08:00"),
                         (3, "2026-10-30T18:00:00+08:00"), (4, None)):
        store = memory_store()
        _, item_id = raised(store, question_event(n, decide_by=decide_by))
        weights[n] = item(store, item_id)["weight"]
    assert weights == {1: "critical", 2: "high", 3: "normal", 4: "normal"}


def test_a_question_the_kernel_would_refuse_as_a_frame_still_needs_the_user():
    store = memory_store()
    bad = [{"id": "Mitigate Now", "label": "先临时缓解"}, {"id": "migrate", "label": "本周迁移"}]
    _, item_id = raised(store, question_event(options=bad))
    view = item(store, item_id)
    assert view["kind"] == "needs-you" and view["decision"] is None
    assert "Mitigate Now" in view["reason"]  # says why it is not a frame


def test_an_airline_mail_asking_for_a_reply_by_a_date_gets_a_frame_en_and_zh():
    for lang, text in (("en", AIRLINE_EN), ("zh", AIRLINE_ZH)):
        store = memory_store()
        event = mail(1, "Flight change: MU5101 on 14 October" if lang == "en" else "航班变动通知：MU5101",
                     text, "China Eastern <service@ceair.example>", at="2026-10-08T16:30:00+08:00")
        _, item_id = raised(store, event, lang)
        view = item(store, item_id)
        frame = view["decision"]
        assert view["kind"] == "needs-you" and view["due_at"].startswith("2026-10-12"), (lang, view)
        assert [o["id"] for o in frame["options"]] == ["reply", "let-pass"]
        assert frame["decide_by"].startswith("2026-10-12")
        # The fallback is the mail's own sentence about doing nothing, never an invented one.
        said = "No action is needed if the new time suits you" if lang == "en" else "如接受新时间，无需任何操作"
        assert frame["fallback"]["option"] == "let-pass" and said in frame["fallback"]["summary"]
        assert frame["evidence"] == "complete"


def test_what_a_reply_mail_says_happens_without_a_reply_is_letting_it_pass_en_and_zh():
    cases = (("en", "Your flight LH 1234 on 20 October now departs at 07:05 instead of 09:40. Please reply before "
                    "12 October to accept or to choose a refund; if we hear nothing, the new time is accepted.",
              "the new time is accepted"),
             ("zh", "您10月20日的LH1234航班改为07:05起飞。请于10月12日前回复确认或申请退款；如未收到您的回复，"
                    "将视为接受新时间。", "将视为接受新时间"))
    for lang, text, said in cases:
        store = memory_store()
        _, item_id = raised(store, mail(5, "Schedule change LH 1234", text, "Lufthansa <noreply@lh.example>"), lang)
        frame = item(store, item_id)["decision"]
        assert [o["id"] for o in frame["options"]] == ["reply", "let-pass"], (lang, frame)
        assert frame["fallback"]["option"] == "let-pass" and said in frame["fallback"]["summary"], (lang, frame)
        assert frame["options"][1]["consequence"].startswith(said) and frame["evidence"] == "complete"
        assert not frame["options"][0]["consequence"].endswith((";", "；"))


def test_a_mail_offering_choices_keeps_its_own_options_and_stated_consequence():
    store = memory_store()
    event = mail(2, "机票方案请今天确认", "两个航班：LH729 10月20日 13:05 浦东起飞，或 MU219 同日 00:45。"
                                         "请今天下班前回复选哪个，否则票价可能上涨。", "travel-agent@example.com")
    _, item_id = raised(store, event)
    frame = item(store, item_id)["decision"]
    assert [(o["id"], o["label"]) for o in frame["options"]] == [("lh729", "LH729 10月20日 13:05 浦东起飞"),
                                                                ("mu219", "MU219 同日 00:45")]
    assert "票价可能上涨" in frame["fallback"]["summary"] and "option" not in frame["fallback"]
    assert frame["decide_by"] == "2026-10-09T18:00:00+08:00"


def test_unclear_terms_give_partial_evidence_with_a_gap_and_no_fallback():
    store = memory_store()
    event = mail(3, "Offsite", "Please reply by Friday 16 October whether you will join the offsite.",
                 "Li Na <li.na@example.com>")
    _, item_id = raised(store, event, "en")
    frame = item(store, item_id)["decision"]
    assert "fallback" not in frame
    assert frame["evidence"] == "partial" and "without an answer" in frame["gap"]


def test_a_mail_that_asks_no_choice_gets_no_frame():
    store = memory_store()
    _, item_id = raised(store, mail(4, "周报", "请周五前提交本周周报，否则影响考核。"))
    assert item(store, item_id)["decision"] is None


def test_an_answer_moves_the_item_on_and_clears_the_frame():
    store = memory_store()
    editor, item_id = raised(store, question_event())
    digest = item(store, item_id)["decision"]["digest"]
    answer = feedback(1, item_id, option="migrate", digest=digest, revision=1, note="周四晚上停服")
    receipt, _, document = editor.cycle("2026-10-09T13:00:00+08:00", [answer], batch_id="b2")
    assert receipt["ok"], receipt
    view = item(store, item_id, "2026-10-09T13:00:00+08:00")
    assert view["decision"] is None and view["kind"] == "in-progress"
    assert "本周迁移" in view["summary"] and "待智能体执行" in view["summary"]  # decided, not yet done
    assert view["title"].endswith("已决定")
    assert view["weight"] == "high"  # one step lighter: nothing is asked of the user any more
    assert view["due_at"] is None  # the due date was the answer's deadline: met


def test_a_change_of_mind_in_the_same_window_moves_the_item_on_with_the_latest_answer():
    store = memory_store()
    editor, item_id = raised(store, question_event())
    digest = item(store, item_id)["decision"]["digest"]
    first = feedback(1, item_id, option="mitigate", digest=digest)
    then = feedback(2, item_id, option="migrate", digest=digest)
    receipt, _, _ = editor.cycle("2026-10-09T13:00:00+08:00", [first, then], batch_id="b2")
    assert receipt["ok"], receipt
    view = item(store, item_id, "2026-10-09T13:00:00+08:00")
    assert view["decision"] is None and "本周迁移" in view["summary"] and "先临时缓解" not in view["summary"]
    assert view["weight"] == "high"  # one step lighter for the decision, not one per answer


def test_a_mail_decision_says_the_other_side_is_not_told_yet_and_letting_it_pass_finishes_it():
    for option, kind, words in (("reply", "in-progress", "尚未通知对方"), ("let-pass", "done", "不回复")):
        store = memory_store()
        event = mail(1, "航班变动通知：MU5101", AIRLINE_ZH, "东方航空 <service@ceair.example>")
        editor, item_id = raised(store, event)
        digest = item(store, item_id)["decision"]["digest"]
        receipt, _, _ = editor.cycle("2026-10-09T13:00:00+08:00", [feedback(1, item_id, option=option, digest=digest)],
                                     batch_id="b2")
        assert receipt["ok"], receipt
        view = item(store, item_id, "2026-10-09T13:00:00+08:00")
        assert view["kind"] == kind and words in view["summary"] and view["decision"] is None


def test_a_fallback_moves_the_item_on_with_the_frames_own_fallback():
    store = memory_store()
    editor, item_id = raised(store, question_event())
    digest = item(store, item_id)["decision"]["digest"]
    later = "2026-10-09T18:05:00+08:00"
    event = feedback(1, item_id, meaning="fallback", option="mitigate", digest=digest)
    event["feedback"]["via"] = "host"
    receipt, _, _ = editor.cycle(later, [event], batch_id="b2")
    assert receipt["ok"], receipt
    view = item(store, item_id, later)
    assert view["decision"] is None and view["kind"] == "in-progress"
    assert "周五 18:00 前无答复则先缓解" in view["summary"]


def test_an_answer_to_an_earlier_frame_leaves_the_current_one_open():
    store = memory_store()
    editor, item_id = raised(store, question_event())
    before = item(store, item_id)
    receipt, outputs, _ = editor.cycle("2026-10-09T13:00:00+08:00",
                                       [feedback(1, item_id, option="migrate", digest="0123456789abcdef")],
                                       batch_id="b2")
    assert outputs[0]["dispositions"][0]["disposition"] == "used"
    view = item(store, item_id, "2026-10-09T13:00:00+08:00")
    assert view["decision"]["digest"] == before["decision"]["digest"] and view["kind"] == "needs-you"


def test_a_work_log_line_asking_for_a_decision_in_words_gets_a_frame_of_its_own_words():
    store = memory_store()
    text = ("api 服务已升级到 3.4.3，测试通过。worker 服务锁定在 3.4.1，升级会触发 legacyMerge 的弃用错误，"
            "需要你决定：" + QUESTION)
    event = {"id": "agent-log:7", "source": "agent-log", "channel": "worklog", "from": "coding-agent",
             "at": "2026-10-09T09:25:00+08:00", "title": "lattice-upgrade", "text": text, "thread": "lattice-upgrade",
             "meta": {"status": "blocked"}}
    _, item_id = raised(store, event)
    view = item(store, item_id)
    frame = view["decision"]
    assert view["kind"] == "needs-you" and frame["question"] == QUESTION
    assert [o["label"] for o in frame["options"]] == ["先用 refresh_token_ttl = 0 临时缓解", "这周迁移到按字段合并"]
    assert "fallback" not in frame and frame["evidence"] == "partial"  # the line says nothing of no answer
