"""What the baseline writes: titles and summaries from the facts of a message (issuer, amount, due day, state,
new time), in the source's language, never its first characters; negations change the reading; promotions,
cold sales and scams stay noise whatever urgency they claim; a note moves the item and is never its summary."""

from __future__ import annotations

from fold_agents.baseline.editor import propose_baseline

NOW = "2026-10-09T08:00:00+08:00"


def _input(events: list, items: tuple = (), notes: tuple = ()) -> dict:
    state = {"schema": "fold.state/1", "now": NOW, "revision": 1, "budget": 64,
             "root": {"budget": 64, "used": 0, "free": 64, "items": list(items)}, "not_active": [],
             "not_active_total": 0, "pending_annotations": list(notes)}
    return {"now": NOW, "batch_id": "b", "user": {"background": "", "purpose": "", "feedback_policy": ""},
            "state": state, "pending_annotations": list(notes), "events": events,
            "signal": {"type": "events", "reason": "t", "received": len(events), "window": {"from": NOW, "to": NOW},
                       "coverage": [], "reminders": 0}}


def _mail(i: int, sender: str, title: str, text: str) -> dict:
    return {"id": f"e-{i}", "channel": "email", "source": "mail", "from": sender, "at": "2026-10-09T07:00:00+08:00",
            "title": title, "text": text}


def _declared(output: dict) -> list[dict]:
    found = []
    for declaration in output["batch"]["declarations"]:
        found += [declaration] + list(declaration.get("children") or ())
    return found


def test_a_bill_states_issuer_amount_and_due_day_and_a_cancelled_debit_is_not_autopay():
    text = ("Hello Jie,\nYour October electricity bill is EUR 82.10, due on 28 October 2026.\nIf you pay by direct debit, "
            "no action is needed. Our records show you cancelled your direct debit in September.")
    bill = _mail(1, "Northgrid Energy <billing@northgrid.example>", "Your electricity bill", text)
    (item,) = _declared(propose_baseline(_input([bill]), "zh"))
    assert (item["weight"], item["kind"]) == ("high", "needs-you") and item["due_at"].startswith("2026-10-28")
    assert "€82.10" in item["title"] and "Oct 28" in item["title"] and "Northgrid" in item["title"]
    assert item["summary"] == "Northgrid Energy bill €82.10, autopay off; pay by Oct 28."  # English mail, English words
    missing = _mail(2, "阳光物业 <notice@sunshine.example>", "物业费缴费提醒", "业主您好，第四季度物业费请于 10 月 20 日前缴费。")
    (fee,) = _declared(propose_baseline(_input([missing]), "en"))
    assert "金额未知" in fee["summary"] and "10月20日" in fee["title"] and len(fee["title"]) <= 24


def test_summaries_are_not_the_first_characters_and_a_partial_check_says_what_is_open():
    log = {"id": "w-1", "channel": "worklog", "source": "agent", "from": "agent", "at": "2026-10-09T07:00:00+08:00",
           "title": "session-timeout", "text": "Fixed the session timeout and verified it on staging. "
                                               "The mobile app is unchanged and untested."}
    (item,) = _declared(propose_baseline(_input([log]), "en"))
    assert item["kind"] == "in-progress" and item["title"] == "session timeout: partial"
    assert item["summary"] == "Staging only; the mobile app is unchanged and untested."
    for event in (log, _mail(2, "Li Na <li@work.example>", "周报", "周报初稿在共享盘，周五前请补一下风险部分。")):
        (written,) = _declared(propose_baseline(_input([event]), "zh"))
        assert not event["text"].startswith(written["summary"].rstrip("…。."))
        assert written["summary"][:12] != event["text"][:12]


def test_urgent_promotions_cold_sales_and_parcel_scams_are_noise():
    events = [_mail(1, "智学在线 <edu@zhixue.example>", "【紧急通知】AI 大模型实战营", "最后 2 个名额，今晚截止，立即报名！"),
              _mail(2, "Kevin <kevin@sales.example>", "Re: quick question",
                    "Just following up on my last email - do you have 15 minutes for a quick call? Urgent."),
              _mail(3, "顺丰速运 <service@sf-expresss.example>", "包裹派送失败",
                    "您的包裹因地址不完整无法投递，请在24小时内点击链接更新地址 http://x.example/a")]
    output = propose_baseline(_input(events), "zh")
    assert [d["disposition"] for d in output["dispositions"]] == ["noise", "noise", "noise"]
    assert "钓鱼" in output["dispositions"][2]["why"] and not output["batch"]["declarations"]


def test_a_note_moves_the_item_and_is_never_its_summary_and_a_question_stays_pending():
    parcel = {"id": "parcel", "title": "Parcel 4411 in transit", "summary": "DHL parcel 4411; expected Oct 11.",
              "weight": "high", "share": 12, "kind": "in-progress", "sources": [], "children": None,
              "updated_at": NOW, "due_at": None}
    lower = {"id": "a-1", "item": "parcel", "text": "Not urgent, please lower it."}
    output = propose_baseline(_input([], [parcel], [lower]), "en")
    (item,) = _declared(output)
    assert item["weight"] == "normal" and "summary" not in item and output["batch"]["acknowledges"] == ["a-1"]
    question = {"id": "a-2", "item": "parcel", "text": "Why is this still here?"}
    output = propose_baseline(_input([], [parcel], [question]), "en")
    assert output["batch"] == {"declarations": [], "acknowledges": []}


def test_a_status_that_ages_gets_stale_after():
    parcel = _mail(1, "DHL <noreply@dhl.example>", "Your parcel 4411 is on its way",
                   "Your parcel 4411 is in transit and expected on October 11.")
    (item,) = _declared(propose_baseline(_input([parcel]), "en"))
    assert item["kind"] == "in-progress" and item["stale_after"] == "2026-10-11T08:00:00+08:00"  # now + 48 h
    bill = _mail(2, "Li Na <li@work.example>", "周报", "周报初稿在共享盘，周五前请补一下风险部分。")
    (other,) = _declared(propose_baseline(_input([bill]), "zh"))
    assert "stale_after" not in other


def test_the_users_purpose_raises_and_lowers_the_topics_it_names():
    purpose = "Never miss bills or security problems; newsletters and shipping notices are low priority."
    advisory = _mail(1, "Lattice Security <security@lattice.example>", "Security advisory: CVE-2026-1234 in lattice-sync",
                     "A vulnerability in lattice-sync 3.4.1 allows token replay. Upgrade to 3.4.3.")
    parcel = _mail(2, "Li Na <li@work.example>", "Parcel for you", "I sent the parcel with the spare laptop.")
    plain, aimed = _input([advisory, parcel]), _input([advisory, parcel])
    aimed["user"]["purpose"] = purpose
    before = {d["sources"][0]["ref"]: d for d in _declared(propose_baseline(plain, "en")) if d.get("sources")}
    after = {d["sources"][0]["ref"]: d for d in _declared(propose_baseline(aimed, "en")) if d.get("sources")}
    order = ["trace", "low", "normal", "high", "critical"]
    assert order.index(after["event:e-1"]["weight"]) == order.index(before["event:e-1"]["weight"]) + 1
    assert order.index(after["event:e-2"]["weight"]) == order.index(before["event:e-2"]["weight"]) - 1
    assert "purpose" in after["event:e-1"]["reason"] and "purpose" in after["event:e-2"]["reason"]


def test_a_review_with_a_failing_source_says_its_silence_is_not_news():
    parcel = {"id": "parcel", "title": "Parcel 4411 in transit", "summary": "DHL parcel 4411; expected Oct 11.",
              "weight": "normal", "share": 6, "kind": "in-progress", "sources": [], "children": None,
              "updated_at": "2026-10-06T08:00:00+08:00", "due_at": None, "stale_after": "2026-10-08T08:00:00+08:00"}
    document = _input([], [parcel])
    document["signal"] = {"type": "review", "reason": "t", "received": 0, "window": {"from": NOW, "to": NOW},
                          "coverage": [{"source": "work-mail", "channel": "email", "status": "failed"}], "reminders": 0}
    (item,) = _declared(propose_baseline(document, "en"))
    assert item["summary"].startswith("Last known:") and "work-mail failed" in item["reason"]
    assert "silence is not news" in item["reason"]


def test_feedback_that_it_is_not_autopay_makes_the_bill_the_users_to_pay():
    bill = {"id": "bill", "title": "Power bill €82.10 Oct 28", "summary": "Autopay is set.", "weight": "low",
            "share": 3, "kind": "in-progress", "sources": [], "children": None, "updated_at": NOW,
            "due_at": "2026-10-28T23:59:00+08:00"}
    said = {"id": "fb-1", "channel": "feedback", "source": "feedback", "from": "user", "at": NOW,
            "feedback": {"target": "bill", "meaning": "input", "via": "web", "value": "This is not autopay."}}
    (item,) = _declared(propose_baseline(_input([said], [bill]), "en"))
    assert (item["weight"], item["kind"]) == ("high", "needs-you")
    lower = dict(said, id="fb-2", feedback=dict(said["feedback"], value="Not urgent, lower it."))
    parcel = dict(bill, id="bill", weight="high", kind="fyi", due_at=None)
    (item,) = _declared(propose_baseline(_input([lower], [parcel]), "en"))
    assert item["weight"] == "normal" and "summary" not in item


def test_a_colleagues_quick_call_is_not_sales():
    ask = _mail(1, "Li Na <li@work.example>", "Migration plan",
                "Can we do a quick call about the migration plan? 15 minutes is enough, before Friday please.")
    output = propose_baseline(_input([ask]), "en")
    assert output["dispositions"][0]["disposition"] == "used"
    assert _declared(output)[0]["kind"] == "needs-you"


def test_a_result_with_a_new_figure_updates_its_item_instead_of_only_confirming():
    from fold_agents.baseline.rules import thread_item_id
    first = {"id": "w-0", "channel": "worklog", "source": "agent", "from": "agent", "thread": "bench",
             "at": "2026-10-09T06:00:00+08:00", "title": "bench", "text": "Benchmark running on the new index."}
    item_id = thread_item_id(first)
    bench = {"id": item_id, "title": "bench: running", "summary": "Benchmark running on the new index.",
             "weight": "normal", "share": 6, "kind": "in-progress", "sources": [], "children": None,
             "updated_at": "2026-10-09T06:00:00+08:00", "due_at": None}
    later = dict(first, id="w-1", at="2026-10-09T07:00:00+08:00",
                 text="Benchmark still running: 3 of 5 suites done, p99 41 ms so far.")
    output = propose_baseline(_input([later], [bench]), "en")
    (item,) = _declared(output)
    assert item["id"] == item_id and item["weight"] == "normal" and item["summary"] != bench["summary"]
    assert [x["ref"] for x in item["sources"]] == ["event:w-1"] and "confirms" not in output["dispositions"][0]["why"]


def test_a_question_between_options_is_never_cut_between_them():
    # The demo's agent asks to choose; the summary used to end "需要你决定：先用 refresh_token_ttl = 0。".
    log = {"id": "w-1", "channel": "worklog", "source": "agent", "from": "coding-agent",
           "at": "2026-10-09T07:00:00+08:00", "title": "lattice-upgrade",
           "text": "api 服务已升级到 3.4.3，测试通过。worker 服务锁定在 3.4.1，升级会触发 legacyMerge 的弃用错误，"
                   "需要你决定：先用 refresh_token_ttl = 0 临时缓解，还是这周迁移到按字段合并？"}
    (item,) = _declared(propose_baseline(_input([log]), "zh"))
    summary = item["summary"]
    assert "refresh_token_ttl = 0。" not in summary and not summary.endswith("临时缓解。")
    assert "还是" in summary or "二选一" in summary  # both options, or a plain "choose between two"
    en = dict(log, text="The worker is pinned to 3.4.1. Need your decision on whether we set refresh_token_ttl = 0 "
                        "as a stopgap or migrate to per-field merge this week?")
    (item,) = _declared(propose_baseline(_input([en]), "en"))
    assert not item["summary"].rstrip(".").endswith((" on", " whether", " to", " or"))


def test_an_escalation_in_a_results_thread_is_its_own_item_and_the_result_keeps_its_figures():
    bench = {"id": "bench", "title": "同步服务基准测试运行中", "summary": "编码代理正在跑 lattice 3.4.3 的同步基准测试。",
             "weight": "low", "share": 3, "share_override": False, "kind": "in-progress", "updated_at": "2026-10-08T20:00:00+08:00",
             "sources": [{"channel": "worklog", "ref": "event:s-1", "quote": "开始跑 lattice 3.4.3 的同步基准测试"}],
             "children": None}
    result = {"id": "w-1", "channel": "worklog", "source": "agent", "from": "coding-agent", "thread": "bench",
              "at": "2026-10-09T07:20:00+08:00", "title": "同步服务基准测试",
              "text": "基准测试跑完了：lattice 3.4.3 下同步 p99 延迟 182 ms（3.4.1 是 240 ms），吞吐提升 24%。"}
    escalation = dict(result, id="w-2", at="2026-10-09T07:40:00+08:00",
                      text="升级上报：worker 依赖的 lattice 3.4.1 受 CVE-2026-41234 影响（远程代码执行）。需要你决定是否今天就升级 worker。")
    output = propose_baseline(_input([result, escalation], items=(bench,)), "zh")
    declared = {d["id"]: d for d in _declared(output)}
    assert "182" in declared["bench"]["summary"] and declared["bench"]["kind"] == "done"
    (cve,) = [d for i, d in declared.items() if i != "bench"]
    assert cve["kind"] == "needs-you" and cve["title"].startswith("CVE-2026-41234")
    assert not any(d.get("relation") == "withdraw" for d in output["batch"]["declarations"])
    assert {d["disposition"] for d in output["dispositions"]} == {"used"}


def test_a_thread_update_keeps_the_title_unless_its_fact_changed():
    parcel = {"id": "parcel", "title": "顺丰包裹 SF1234 运输中", "summary": "顺丰：包裹已从深圳发出。", "weight": "low",
              "share": 3, "share_override": False, "kind": "in-progress", "updated_at": "2026-10-08T20:00:00+08:00",
              "sources": [{"channel": "email", "ref": "event:s-1", "quote": "您的包裹 SF1234 已从深圳发出"}],
              "children": None}
    later = _mail(1, "顺丰速运 <noreply@sf.example>", "您的包裹 SF1234 运输中",
                  "您的包裹 SF1234 已到达上海转运中心，预计 10 月 11 日送达。")
    declared = {d["id"]: d for d in _declared(propose_baseline(_input([later], items=(parcel,)), "zh"))}
    assert "title" not in declared["parcel"] or declared["parcel"]["title"] == parcel["title"]
    assert "10 月 11 日" in declared["parcel"]["summary"] or "10月11日" in declared["parcel"]["summary"]


def test_one_piece_of_evidence_updates_every_item_waiting_for_it():
    def waiting(item_id, title, summary, weight):
        return {"id": item_id, "title": title, "summary": summary, "weight": weight, "share": 6,
                "share_override": False, "kind": "needs-you", "updated_at": "2026-10-08T20:00:00+08:00",
                "sources": [{"channel": "email", "ref": f"event:s-{item_id}", "quote": summary}], "children": None}
    visa = waiting("visa", "签证缺银行流水", "签证中心要求补交近六个月的银行流水。", "high")
    loan = waiting("mortgage", "房贷预审缺银行流水", "银行要求补充近六个月的银行流水后才能出预审结果。", "normal")
    bank = _mail(1, "招商银行 <service@cmb.example>", "您申请的近六个月账户流水已生成",
                 "您于 10 月 9 日申请的账户流水（4 月至 9 月）已生成，可在手机银行下载 PDF。")
    output = propose_baseline(_input([bank], items=(visa, loan)), "zh")
    declared = {d["id"]: d for d in _declared(output)}
    assert set(declared) == {"visa", "mortgage"}  # both patched, no item of its own
    assert all("已生成" in d["summary"] and d["kind"] == "needs-you" for d in declared.values())
    assert output["dispositions"][0]["related"] == ["visa", "mortgage"]
    assert "（4 月至 9。" not in declared["visa"]["summary"]  # never cut inside a bracket


def test_purpose_naming_senders_moves_their_mail_one_step_and_says_so():
    from fold_agents.baseline.purpose import Purpose

    purpose = Purpose({"purpose": "每天看到必须处理的事；李老师的邮件一定不能错过，来自猎头的消息优先级低。",
                       "background": "Never miss mail from Li Na, but anything from talenthunt.example can wait."})
    assert purpose.lean("家长会", "李老师 <li@school.example>") == ("up", "from:李老师")
    assert purpose.lean("机会", "某某猎头 <hr@hunt.example>") == ("down", "from:猎头")
    assert purpose.lean("Lunch?", '"Li Na" <li.na@work.example>') == ("up", "from:Li Na")
    assert purpose.lean("Role", "Sam <sam@talenthunt.example>") == ("down", "from:talenthunt.example")
    assert purpose.lean("Hello", "Bob <bob@else.example>") is None
    teacher = _mail(1, "李老师 <li@school.example>", "下周班级活动安排",
                    "各位家长好，下周三下午班级组织参观科技馆，回校时间约 16:30，届时请按时接孩子。")
    plain = _declared(propose_baseline(_input([teacher]), "zh"))[0]
    document = _input([teacher])
    document["user"]["purpose"] = "李老师的邮件一定不能错过。"
    named = _declared(propose_baseline(document, "zh"))[0]
    steps = ("trace", "low", "normal", "high", "critical")
    assert steps.index(named["weight"]) == steps.index(plain["weight"]) + 1
    assert "李老师的来信不能错过" in named["reason"]
    assert not named["summary"].startswith("李老师：各位家长好")  # the greeting is not the fact


def test_an_item_an_event_was_used_for_is_not_withdrawn_for_the_budget_in_that_cycle():
    def view(item_id, title, weight, kind, share, due=None):
        return {"id": item_id, "title": title, "summary": title, "weight": weight, "share": share,
                "share_override": False, "kind": kind, "due_at": due, "updated_at": "2026-10-08T20:00:00+08:00",
                "sources": [{"channel": "worklog", "ref": f"event:s-{item_id}", "quote": title}], "children": None}
    # A full root (64 of 64): the benchmark result is a finished, low item — the first to give way.
    items = (view("weekly", "周报周五前交", "critical", "needs-you", 24, "2026-10-10T17:00:00+08:00"),
             view("visa", "签证缺银行流水", "high", "needs-you", 12, "2026-10-12T17:00:00+08:00"),
             view("flight", "20日机票待确认", "high", "needs-you", 12),
             view("review", "设计评审材料", "normal", "needs-you", 6),
             view("reading", "推荐阅读：分布式快照", "low", "fyi", 3),
             view("standup", "例会改到下午", "low", "fyi", 3),
             view("bench", "基准测试 p99 182 ms", "low", "done", 3))
    again = {"id": "w-1", "channel": "worklog", "source": "agent", "from": "coding-agent",
             "at": "2026-10-09T07:20:00+08:00", "title": "基准测试 p99 182 ms", "text": "基准测试 p99 182 ms，结果同上次。"}
    urgent = _mail(2, "王芳 <wang@work.example>", "合同今天下班前签字", "合同需要你今天下班前签字，请尽快处理。")
    output = propose_baseline(_input([again, urgent], items=items), "zh")
    withdrawn = {d["id"] for d in output["batch"]["declarations"] if d.get("relation") == "withdraw"}
    used = {d["event"]: d for d in output["dispositions"]}
    assert used["w-1"]["disposition"] == "used" and "bench" in used["w-1"]["related"]
    assert "bench" not in withdrawn and withdrawn  # something else gave way


def test_an_item_raised_inside_a_low_parent_raises_the_parent():
    parcel = {"id": "parcel", "title": "显示器包裹运输中", "summary": "顺丰：显示器已从深圳发出。", "weight": "low",
              "share": 3, "share_override": False, "kind": "in-progress", "updated_at": "2026-10-08T20:00:00+08:00",
              "sources": [], "children": None}
    updates = {"id": "fold-updates", "title": "其他 1 条动态", "summary": "1 条无需你处理的动态。", "weight": "low",
               "share": 3, "share_override": False, "kind": "fyi", "updated_at": "2026-10-08T20:00:00+08:00",
               "sources": [], "children": {"budget": 64, "used": 3, "free": 61, "items": [parcel]}}
    note = {"id": "ann-1", "item": "parcel", "resolved_item": "parcel", "text": "这个包裹很重要，别错过。",
            "author": "user", "created_at": "2026-10-08T21:00:00+08:00"}
    output = propose_baseline(_input([], items=(updates,), notes=(note,)), "zh")
    declared = {d["id"]: d for d in _declared(output)}
    assert declared["parcel"]["weight"] == "high"
    assert declared["fold-updates"]["weight"] == "high"  # the parcel is seen at high, not inside a low parent
    assert "parcel" in declared["fold-updates"]["reason"]
    assert "显示器包裹运输中" in declared["fold-updates"]["summary"]  # the raised parent says which child it is for


def test_an_escalation_naming_a_new_identifier_on_a_request_is_news_not_a_confirmation():
    item = {"id": "upgrade", "title": "lattice 升级待你决定", "summary": "worker 升级方案需要你决定。", "weight": "high",
            "share": 12, "share_override": False, "kind": "needs-you", "updated_at": "2026-10-08T20:00:00+08:00",
            "sources": [], "children": None}
    log = {"id": "w-1", "channel": "worklog", "source": "agent", "from": "coding-agent",
           "at": "2026-10-09T07:20:00+08:00", "title": "lattice 升级待你决定",
           "text": "升级上报：worker 依赖的 lattice 3.4.1 受 CVE-2026-41234 影响，需要你决定是否升级。"}
    output = propose_baseline(_input([log], items=(item,)), "zh")
    (patched,) = _declared(output)
    assert patched["id"] == "upgrade" and "CVE-2026-41234" in patched["summary"]
    assert "只确认" not in output["dispositions"][0]["why"]
    assert patched["summary"].count("待你处理") <= 1
