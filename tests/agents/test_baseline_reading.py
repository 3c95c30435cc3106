"""How the baseline editor reads a message: the date grammar, bulk and automated mail, requests and weights."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from fold_agents.baseline.dates import cn_number, find_dates
from fold_agents.baseline.mail import judge, plain_claims, read_message
from fold_agents.baseline.match import matter_of, news_in, resent, same_matter

CST = timezone(timedelta(hours=8))
FRIDAY = datetime(2026, 10, 9, 8, 0, tzinfo=CST)  # a Friday morning


@pytest.mark.parametrize(("text", "due", "firm"), [
    ("请于 2026年10月12日 17:00 前通过线上系统上传", "2026-10-12T17:00", True),
    ("请在10月12日18点前送到", "2026-10-12T18:00", True),
    ("12 日前交齐", "2026-10-12T23:59", True),
    ("本周五下班前", "2026-10-09T18:00", True),
    ("明天上午评审", "2026-10-10T12:00", False),
    ("明天下午三点半之前", "2026-10-10T15:30", True),
    ("下周一例会前发我", "2026-10-12T23:59", True),
    ("请于 24 小时内办理", "2026-10-10T08:00", True),
    ("三天内", "2026-10-12T23:59", True),
    ("最后还款日 11 月 15 日", "2026-11-15T23:59", True),
    ("by Friday", "2026-10-09T23:59", True),
    ("due Oct. 20th, 5pm", "2026-10-20T17:00", True),
    ("reply before 12 October", "2026-10-12T23:59", True),
    ("please send it by 5:30 pm tomorrow", "2026-10-10T17:30", True),
    ("within 3 business days", "2026-10-14T23:59", True),
    ("next Monday", "2026-10-12T23:59", False),
    ("2026-10-20T13:05", "2026-10-20T13:05", False),
])
def test_the_date_grammar_reads_zh_and_en_relative_to_the_anchor(text, due, firm):
    found = find_dates(text, FRIDAY)
    assert found, text
    assert found[-1].at.isoformat()[:16] == due and found[-1].firm == firm


def test_the_date_grammar_leaves_words_that_are_not_dates_alone():
    assert find_dates("the monthly report", FRIDAY) == []
    assert [m.at.date().isoformat() for m in find_dates("I sat down on Sunday", FRIDAY)] == ["2026-10-11"]
    assert find_dates("订单 80012345 已完成", FRIDAY) == []
    # A year is found from the anchor: a January date written in December is next year's.
    assert find_dates("1月3日前", datetime(2026, 12, 20, tzinfo=CST))[0].at.year == 2027
    assert [cn_number(t) for t in ("十二", "二十三", "三十一", "两", "12", "百")] == [12, 23, 31, 2, 12, None]


NOW = FRIDAY.isoformat()


def mail(title, text, sender="someone@example.com", **more):
    return {"id": "m", "channel": "email", "from": sender, "at": "2026-10-09T07:00:00+08:00", "title": title,
            "text": text, **more}


def verdict(event, user=None):
    return judge(read_message(event, now=NOW, user=user))


def test_bulk_promotion_and_phishing_are_noise_whatever_urgent_words_they_use():
    bulk = mail("URGENT: renew today", "Your offer ends tonight. Act now!",
                meta={"list_unsubscribe": True, "precedence": "bulk"})
    promo = mail("双11预售：满300减50", "会员日特惠，付定金立减，紧急！仅限今日")
    phishing = mail("Action required", "Your mailbox will be suspended. Verify your account within 24 hours.")
    read = [verdict(m) for m in (bulk, promo, phishing)]
    assert [v.noise for v in read] == [True] * 3 and read[1].rule == "promotion" and read[2].rule == "phishing"
    # A notification with list headers that names the user as the one to act is not bulk.
    review = mail("[acme/api] Review requested", "Anna requested your review on #812.",
                  "notifications@github.example", meta={"list_id": "acme/api", "precedence": "list"})
    assert (verdict(review).noise, verdict(review).kind, verdict(review).weight) == (False, "needs-you", "high")


def test_automated_mail_counts_by_what_it_asks():
    approval = mail("【待您审批】采购申请", "请于 10 月 10 日 18:00 前审批。此邮件由系统自动发送。", "noreply@oa.example",
                    meta={"auto_submitted": "auto-generated"})
    build = mail("[CI] Build #4521 passed", "All checks passed.", "ci@builds.example",
                 meta={"auto_submitted": "auto-generated"})
    assert (verdict(approval).kind, verdict(approval).weight, verdict(approval).due_at) == (
        "needs-you", "critical", "2026-10-10T18:00:00+08:00")
    assert (verdict(build).kind, verdict(build).weight) == ("done", "low")


def test_urgent_words_count_only_in_mail_to_the_user():
    personal = mail("报价", "紧急：请你今天确认报价。")
    group = mail("紧急通知", "各位同事：紧急，请今天确认报价。", meta={"to": ["all-staff@example.com"]})
    assert verdict(personal).weight == "critical" and verdict(group).weight == "high"


def test_weight_follows_time_left_and_who_must_act():
    near = verdict(mail("账单", "最后还款日为明天（10 月 10 日），请按时还款。"))
    week = verdict(mail("账单", "最后还款日为 10 月 14 日，请按时还款。"))
    far = verdict(mail("账单", "最后还款日为 11 月 15 日，请按时还款。"))
    autopay = verdict(mail("账单", "最后还款日为 10 月 10 日，将从您的储蓄卡自动扣款。"))
    # A bill without autopay is the user's to pay: high however far its due day, critical within two days.
    assert [v.weight for v in (near, week, far)] == ["critical", "high", "high"]
    assert (autopay.kind, autopay.weight) == ("in-progress", "low")
    submitted = verdict(mail("还款", "还款申请已提交，银行处理中，预计 1-2 个工作日到账。"))
    staging = verdict(mail("修复", "已在 staging 验证通过，生产环境还未发布。"))
    assert submitted.kind == "in-progress" and staging.kind == "in-progress"


def test_on_duty_and_on_leave_come_from_the_users_background():
    alert = mail("[P1] checkout error rate 18% in production", "Customers are affected.", "alerts@pagerduty.example")
    on_duty = verdict(alert, {"background": "SRE; I am on call this week."})
    on_leave = verdict(alert, {"background": "SRE; I am on leave until the 16th, Li covers on-call."})
    unknown = verdict(alert, {"background": "SRE."})
    assert [(v.kind, v.weight) for v in (on_duty, on_leave, unknown)] == [
        ("needs-you", "critical"), ("fyi", "low"), ("needs-you", "high")]
    assert unknown.pressing


def test_quoted_history_is_not_the_replys_news():
    reply = mail("Re: 本周周报请周五前提交", "收到，我这边会附上校验结果。\n\n> 本周周报请在周五 18:00 前提交。")
    assert (verdict(reply).kind, verdict(reply).due_at) == ("fyi", None)


def test_matters_match_by_identifiers_and_shared_topic_not_by_a_word_or_two():
    item = matter_of("差旅报销 BX-2026-0931 已提交")
    assert same_matter(matter_of("报销单被退回", "单号 BX-2026-0931"), item)
    assert not same_matter(matter_of("报销单 BX-2026-1001"), item)  # two different numbers: two matters
    assert same_matter(matter_of("分布式快照（下）：实现细节"), matter_of("推荐阅读：分布式快照"))
    assert not same_matter(matter_of("Visa appointment"), matter_of("Dentist appointment on Friday"),
                           matter_of("Visa appointment"))
    assert not news_in("改签到 10:30", "MU5101 改到 10:30 起飞") and news_in("改到 11:30", "改到 10:30")


def test_a_withdrawn_matter_is_found_when_the_message_carries_its_whole_title():
    withdrawn = matter_of("9月差旅报销")
    returned = matter_of("报销单被退回", "您提交的 9 月差旅报销单被财务退回：缺少住宿发票。")
    assert same_matter(returned, withdrawn, matter_of("报销单被退回"))


def test_an_item_still_in_progress_never_says_it_is_finished():
    assert plain_claims("PDF 导出崩溃已修复：staging 验证通过") == "PDF 导出崩溃修复：staging 验证通过"
    assert "fixed" not in plain_claims("The crash is fixed on staging").lower()


@pytest.mark.parametrize(("background", "duty"), [
    ("后端工程师；本周（10月5日—11日）轮到我值班，负责订单服务。", "on"),
    ("后端工程师；我 10 月 5 日到 16 日休年假，这周订单服务由李强值班。", "leave"),
    ("李强休假，我值班。", "on"),
    ("我所在的团队这周由李强值班", "leave"),
    ("这周我不值班", "leave"),
    ("on call this week", "on"),
    ("Alex is on call while I am out of office", "leave"),
    ("支付组后端工程师。这周的 on-call 是我。", "on"),
    ("在上海工作的软件工程师。", None),
])
def test_who_is_on_duty_is_read_clause_by_clause(background, duty):
    alert = mail("【P1告警】订单服务错误率 15%", "生产环境订单服务 5xx 错误率 15%，部分用户下单失败。", "alert@monitor.example",
                 meta={"auto_submitted": "auto-generated"})
    expected = {"on": ("needs-you", "critical"), "leave": ("fyi", "low"), None: ("needs-you", "high")}[duty]
    found = verdict(alert, {"background": background})
    assert (found.kind, found.weight) == expected


@pytest.mark.parametrize(("title", "text", "kind"), [
    ("登录超时", "登录超时问题已修复，预发环境验证通过，生产环境明早发布后再观察。", "in-progress"),
    ("搜索超时", "补丁先放给了 5% 的用户，P99 恢复正常；还没有全量发布。", "in-progress"),
    ("登录超时", "登录超时问题已修复，预发验证通过，生产环境已发布并确认恢复。", "done"),
    ("转账到账", "您向王建国转账的 6,500.00 元已于 10 月 9 日 07:10 到账。", "done"),
    ("已接受：架构评审 @ 周四 14:00", "王芳已接受你的会议邀请：架构评审，周四 14:00。", "done"),
    ("您的账号密码已修改", "密码已于今天 09:12 修改成功。如非本人操作，请联系 IT 服务台。", "fyi"),
])
def test_results_progress_and_notices_in_other_words(title, text, kind):
    assert verdict(mail(title, text, "noreply@example.com")).kind == kind


@pytest.mark.parametrize(("title", "text", "weight"), [
    ("述职材料", "张伟，季度述职的材料明天中午12点前发我，下午要汇总。", "critical"),
    ("您的体检报告已出", "张伟先生：报告显示空腹血糖偏高，建议您两周内到内分泌科复查。", "normal"),
    ("[JIRA] OPS-221", "Wang Fang assigned OPS-221 to you: rotate the certificates before they expire on Oct 30.", "normal"),
    ("Schedule change", "Dear Mr Zhang, please accept the new time or choose another flight by Oct 11; otherwise the "
                        "booking may be cancelled.", "critical"),
    ("报销单已驳回", "您好，报销单 BX-2026-1207 已被驳回：发票抬头不一致。请更正后在系统中重新提交。", "high"),
])
def test_requests_in_other_words_need_the_user(title, text, weight):
    found = verdict(mail(title, text, "noreply@example.com"))
    assert (found.kind, found.weight) == ("needs-you", weight)


def test_thanks_for_help_and_a_group_notice_to_departments_ask_nothing():
    assert verdict(mail("谢谢昨天帮忙排查", "张伟，昨天那个问题多亏你帮忙，已经上线了，谢谢！", "wang@example.com")).kind == "fyi"
    notice = mail("元旦假期安排", "全体员工：1月1日至3日放假。请各部门做好值班安排。", "hr@example.com", meta={"to": ["all@example.com"]})
    assert verdict(notice).kind == "fyi"


def test_amounts_of_money_name_a_matter_and_forwards_pass_on_what_an_item_says():
    arrived = matter_of("转账到账通知", "向王建国转账的 6,500.00 元（10 月房租）已到账。")
    assert same_matter(arrived, matter_of("10 月房租 10 日前转给房东", "房租 6,500 元，10 日前转给房东。"))
    assert not same_matter(matter_of("费用 80 元"), matter_of("停车费 80 元"))  # a small amount names nothing
    said = "秋游回执和费用 回执在小程序提交，另交 80 元，今晚 20:00 截止。"
    assert resent("转发：秋游回执", "你看下。---------- 转发的邮件 ---------- 回执在小程序提交", said)
    assert resent("秋游回执和费用", "回执在小程序提交，另交 80 元，今晚 20:00 截止。", said)
    assert not resent("Re: 秋游回执", "回执收到了，80 元费用还没有交，请今天 20:00 前补交。", said)
