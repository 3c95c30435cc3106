"""How the baseline editor reads one message: who sent it to whom, what it asks of the user, and by when.

``read_message(event, now=..., user=...)`` gives a ``Reading`` — facts found in
the message's headers (the adapters' ``meta``: list and bulk headers,
``auto_submitted``, recipients), its sender and its own words (quoted history
left out) in zh and en; ``judge(reading)`` turns them into a ``Verdict``
(noise or not, weight, kind, due date, the rule that decided):

* promotions and phishing are noise whatever they say; bulk mail (mailing
  services, newsletters) is noise unless it asks something of the user
  specifically ("requested your review", "待您审批");
* automated mail (``Auto-Submitted``, no-reply senders) counts by what it
  asks: an approval waiting for the user needs the user, a passed build is a
  low result;
* a request with a deadline is weighed by the time left from ``now`` (≤ 2
  days critical, ≤ 7 days or overdue high, later normal), one step more when
  missing it has a stated consequence; urgent words count only in a message
  addressed to the user personally; a request to a group is at most high;
* results, waiting, partial verification ("verified on staging only"),
  autopay and incidents (production or staging; the user on duty or on leave,
  from ``user.background``) each have their rule.

Pure: the same event, ``now`` and user give the same reading.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from fold_core.timefmt import parse_instant
from fold_host.agents.baseline_dates import Mention, find_dates

__all__ = ["Reading", "Verdict", "judge", "own_words", "plain_claims", "read_message", "words"]

WEIGHTS = ("critical", "high", "normal", "low", "trace")
READ_LIMIT = 1200  # code points of a message's own words read: requests, dates and signs come early


class Terms:
    """Any of some terms in lower-cased text: whole ASCII words, phrases, Chinese words, or regexes (``r:…``).

    A long alternation of words costs Python's regex engine a try at every position of the text; a word set,
    plain substring tests and small regexes that each start with a literal cost a small fraction of it. The
    text must be lower-cased first (``str.lower``).
    """

    __slots__ = ("words", "literals", "patterns")

    def __init__(self, *terms: str) -> None:
        words, literals, patterns = set(), [], []
        for term in (t.lower() for t in terms):
            if term.startswith("r:"):
                patterns.append(re.compile(term[2:]))
            elif term.isascii() and re.fullmatch(r"[a-z0-9][a-z0-9'-]*", term):
                words.add(term)
            else:
                literals.append(term)
        self.words, self.literals, self.patterns = frozenset(words), tuple(literals), tuple(patterns)

    def search(self, text: str) -> bool:
        return (any(term in text for term in self.literals) or not self.words.isdisjoint(_tokens(text))
                or any(pattern.search(text) for pattern in self.patterns))

    def found(self, text: str) -> set[str]:
        """The distinct terms present (a regex counts once, as its pattern)."""
        present = {term for term in self.literals if term in text} | (self.words & _tokens(text))
        return present | {pattern.pattern for pattern in self.patterns if pattern.search(text)}


_TOKEN = re.compile(r"[a-z0-9][a-z0-9'-]*")
_LAST: list = [None, frozenset()]


def _tokens(text: str) -> frozenset[str]:
    """The ASCII words of a lower-cased text (the last text's are kept: every term list asks for them)."""
    if _LAST[0] is not text:
        _LAST[0], _LAST[1] = text, frozenset(_TOKEN.findall(text))
    return _LAST[1]


def words(*terms: str) -> Terms:
    """The ``Terms`` of ``terms`` (see ``Terms``)."""
    return Terms(*terms)


_PROMO_STRONG = words("双11", "双十一", "双12", "双十二", "618大促", "r:满\\s*\\d+\\s*减", "满减", "定金", "会员日", "特惠",
                      "秒杀", "抢购", "免费领取", "立即领取", "限时福利", "限时优惠", "恭喜您获得", "仅限今日", "优惠券",
                      "折扣码", "清仓", "大促", "促销", "团购", "抽奖", "领红包", "买一送一", "拼团", "r:\\d+(?:\\.\\d)?\\s*折(?:起|优惠)",
                      "r:\\d+\\s*%\\s*off", "sale ends", "flash sale", "limited time offer", "limited-time offer",
                      "black friday", "cyber monday", "promo code", "coupon", "discount code", "buy one get one",
                      "exclusive offer", "deal of the day", "shop now", "save up to", "clearance", "free gift")
_PROMO_WEAK = words("优惠", "折扣", "广告", "福利", "免费", "限时", "退订", "promo", "promotion", "discount", "offer",
                    "deal", "sale", "free", "last chance", "ends tonight", "don't miss")
_PHISHING = words("r:verify your (?:account|identity|email|password|information)",
                  "r:confirm your (?:account|identity|password|billing|payment)",
                  "r:(?:account|mailbox) (?:has been |will be |is )?(?:suspended|locked|disabled|deactivated|restricted)",
                  "r:update your (?:payment|billing|bank) (?:details|information|method)",
                  "r:click (?:here|below|the link) to (?:verify|confirm|restore|unlock|reactivate|claim)",
                  "r:you(?:'ve| have) won", "claim your prize", "claim your reward", "wire transfer", "gift card",
                  "r:账[户号](?:存在)?异常", "r:账[户号](?:已被|将被)?(?:冻结|封停|停用)", "r:点击(?:下方)?链接(?:进行)?(?:验证|激活|解冻|认证|领取)",
                  "r:身份(?:信息)?(?:验证|核实)失败", "中奖", "恭喜您中", "补贴申领", "退税", "r:积分(?:即将)?(?:清零|过期)",
                  "r:邮箱(?:容量)?已满")
_NEWSLETTER = words("newsletter", "digest", "roundup", "this week in", "unsubscribe", "view in browser",
                    "view this email in your browser", "周刊", "月刊", "订阅号", "精选推荐", "早报", "资讯速递", "退订")
_ASK = words("r:(?<!申)请(?!求|问)(?:您|你)?(?:务必|尽快)?(?:在|于)?[^。！？\n]{0,24}?(?:提交|补交|上传|缴费|缴纳|支付|付款|还款|回复|答复|确认|审批|审核|批准"
             "|签字|签署|填写|填报|选择|决定|评审|审阅|review|处理|补充|补一下|提供|安排|参加|出席|预约|办理|修改|更新|反馈|告知|告诉|联系|准备"
             "|完成|报名|发我|发给我|看一下|看看)",
             "r:(?<!申)请(?:您|你)(?!们)", "r:(?<!申)请(?!求|问)[^。！？\n]{0,30}?(?:之前|以前|前)(?![往来进])", "要求你", "要求您", "你需要", "您需要",
             "需要您", "需要你", "麻烦您", "麻烦你", "能否", "可否", "是否可以", "可不可以", "帮忙", "帮我", "待您", "待你",
             "等您", "等你", "烦请", "劳驾", "最后还款日", "未缴", "欠费", "补交", "还缺", "还差", "缺少", "不全", "待审批",
             "待确认", "截止时间", "截止日期", "务必", "必须", "需要提交", "需提交", "you must", "you need to",
             "r:you(?:'ll| will) need to", "required by",
             "r:please (?:reply|respond|confirm|review|approve|sign|submit|pay|complete|fill|choose|select|decide|let (?:me|us) know"
             "|send|update|provide|check|take a look|have a look|look at|register|rsvp|book|schedule|call|return|restore|add)",
             "r:\\bplease (?!note|find|see|ignore|disregard|be advised|be aware|do not reply|don't reply|do not hesitate"
             "|don't hesitate|feel free|contact us|let us know if|allow|accept)[a-z]+",
             "r:\\b(?:still )?(?:lacks|is missing|are missing)\\b", "missing document", "r:\\bstill need",
             "could you", "can you", "would you", "will you", "kindly", "action required", "action needed",
             "r:requires? your (?:approval|review|signature|response|attention|action|input|decision)",
             "awaiting your", "r:waiting (?:for|on) you\\b", "r:needs? your", "requested your review", "review requested",
             "r:approval (?:needed|required|requested|pending)", "pending your", "assigned to you",
             "r:you(?:'ve| have) been (?:assigned|requested)", "respond by", "reply by", "payment due", "amount due",
             "balance due", "past due", "overdue", "r:due (?:on|by|date)", "deadline", "rsvp")
_ASKS_YOU = words("requested your review", "review requested", "awaiting your", "r:requires? your", "r:needs? your",
                  "pending your", "assigned to you", "r:waiting (?:for|on) you\\b", "待您", "待你", "请您", "需要您", "需要你")
_NO_ACTION = words("无需操作", "无需处理", "无需回复", "无需任何操作", "不需要操作", "不用回复", "不用处理", "仅供参考",
                   "r:no action (?:is )?(?:needed|required)", "r:you don't need to do anything", "no need to reply",
                   "r:for your (?:information|records|reference)", "fyi only", "you can ignore this")
_AUTOPAY = words("自动扣款", "自动还款", "自动缴费", "自动扣费", "代扣", "autopay", "auto-pay", "automatic payment",
                 "direct debit", "r:(?:will be |is )?(?:automatically|auto) ?(?:debited|charged|paid|deducted)",
                 "r:will be (?:debited|charged|deducted) (?:automatically|from your)")
_PAY_FAILED = words("扣款失败", "支付失败", "还款失败", "缴费失败", "payment failed", "r:could not be (?:charged|processed)",
                    "card was declined", "payment was declined", "被退回", "退回", "驳回", "rejected", "returned")
_RESULT = words("已合并", "合并到", "已完成", "已办结", "已发布", "已上线", "已部署", "已解决", "已送达", "已签收", "已妥投",
                "已到账", "到账成功", "付款成功", "支付成功", "还款成功", "缴费成功", "已批准", "审批通过", "已通过", "已生成",
                "已出票", "已收到", "收到了", "已退款", "退款成功", "办理完成", "已修复", "已恢复", "恢复正常", "merged",
                "completed", "resolved", "released", "delivered", "payment received", "paid", "succeeded",
                "successfully", "approved", "is ready", "are ready", "now available", "passed", "deployed", "published",
                "confirmed", "fixed", "recovered")
_WAITING = words("已提交", "提交成功", "处理中", "审核中", "审批中", "进行中", "排队", "等待", "预计", "正在", "运输中",
                 "派送中", "已发货", "已揽收", "配送中", "待审核", "受理中", "已受理", "in progress", "processing",
                 "pending", "queued", "under review", "submitted", "expected", "scheduled", "on its way", "shipped",
                 "out for delivery", "in transit", "r:awaiting (?!your)", "r:waiting for (?!you)",
                 "r:we(?:'ll| will) (?:get back|reply|follow up)", "r:will be (?:processed|reviewed|delivered)")
_PARTIAL = words("r:(?:还没有?|尚未|未|暂未|仍未|还未|待)(?:验证|测试|测|发布到?生产|上线)", "not yet verified", "not yet tested",
                 "r:not (?:been )?(?:verified|tested)", "untested", "r:yet to be (?:verified|tested|deployed)",
                 "r:only (?:on|in) staging", "staging only", "r:(?:仅|只)(?:在|于)?[^。；\\n]{0,12}(?:验证|测试)",
                 "r:(?:生产|线上|production)[^。；\\n]{0,8}(?:还没|尚未|未|还未|暂未|not yet)",
                 "r:(?:not yet|hasn't been|has not been) (?:deployed|released|rolled out)")
_FAILURE = words("告警", "报警", "故障", "宕机", "不可用", "错误率", "失败", "出错", "中断", "崩溃", "outage", "alert",
                 "alarm", "incident", "error rate", "failed", "failure", "failing", "degraded", "unavailable", "crashed",
                 "r:\\bdown\\b")
_PRODUCTION = words("生产", "线上", "正式环境", "production", "prod", "live site", "r:customers? (?:are )?affected",
                    "用户受影响", "影响用户", "r:用户[^。；\\n]{0,6}失败")
_IMPACT = words("r:customers? (?:are )?affected", "r:users? (?:are )?affected", "用户受影响", "影响用户", "r:用户[^。；\\n]{0,6}失败",
                "r:\\bP[01]\\b", "sev1", "sev-1")
_STAGING = words("staging", "测试环境", "预发", "灰度", "test environment", "sandbox", "qa environment", "dev environment")
_URGENT = words("紧急", "加急", "十万火急", "火速", "尽快", "立即", "立刻", "马上", "急需", "urgent", "urgently", "asap",
                "immediately", "right away", "high priority", "time-sensitive")
_CONSEQUENCE = words("逾期", "否则", "不然", "将无法", "无法按期", "无法按时", "影响", "违约金", "滞纳金", "罚款", "罚金", "停机",
                     "停电", "停用", "冻结", "失效", "作废", "重新预约", "征信", "late fee", "penalty", "otherwise", "or else",
                     "r:will be (?:cancell?ed|suspended|terminated|closed|lost|charged)", "will expire", "blocks",
                     "blocked", "r:miss(?:ed)? the")
_GROUP_GREETING = re.compile(r"^\s*(?:各位|大家|诸位|全体|同事们|同学们|各位家长|家长们|dear all|hi all|hello all|hi everyone"
                             r"|hello everyone|hi team|hello team|dear colleagues|dear team|all,|team,|folks,)", re.IGNORECASE)
_GENERIC_GREETING = words("尊敬的客户", "尊敬的用户", "尊敬的会员", "尊敬的旅客", "亲爱的用户", "亲爱的会员", "dear customer",
                          "dear member", "dear user", "dear valued customer", "dear sir or madam", "dear sir/madam")
_AUTOMATED_TEXT = words("此邮件由系统自动发送", "系统自动发送", "请勿直接回复", "请勿回复", "r:this is an automated (?:message|email|notification)",
                        "r:do not reply to this (?:email|message)", "automatically generated", "auto-generated")
_AUTOMATED_LOCAL = re.compile(r"^(?:no[-_.]?reply|do[-_.]?not[-_.]?reply|donotreply|notifications?|notify|alerts?|alertmanager|monitoring"
                              r"|mailer-daemon|postmaster|bounces?|robot|bot|automated?|calendar(?:-notification)?|ci|builds?"
                              r"|jenkins|jira)(?:[+.-][^@]*)?@", re.IGNORECASE)
_GROUP_LOCAL = re.compile(r"^(?:all|everyone|staff|team|group|list|announce|dev|devs|eng|[^@]*-(?:team|all|group|list))@",
                          re.IGNORECASE)
_QUOTE_START = re.compile(r"^(?:on .{0,200}wrote:|在.{0,100}写道[:：]|-{2,}\s*(?:original message|原始邮件)\s*-{2,}"
                          r"|from:.{0,200}\n\s*sent:|发件人[:：])", re.IGNORECASE | re.MULTILINE)
_ON_DUTY = words("值班", "轮值", "on-call", "on call", "oncall", "on duty")
_ON_LEAVE = words("休假", "请假", "年假", "不值班", "不在值班", "on leave", "on vacation", "out of office", "ooo", "pto",
                  "off duty", "not on call", "off-call", "on holiday")
_MY_LEAVE = words("r:我[^，。,.]{0,4}(?:休假|请假|年假|不值班)", "r:\\bI(?:'m| am) (?:on leave|on vacation|out of office|off duty|not on call)")
_INCIDENT = words("告警", "报警", "故障", "宕机", "outage", "alert", "alarm", "incident", "pagerduty", "sev1", "sev2", "p0", "p1")
_REPLY = re.compile(r"^\s*(?:re|aw|答复|回复)\s*(?:\[\d+\])?\s*[:：]", re.IGNORECASE)
_SOFT_ASK = words("最好看一下", "最好先看", "建议先看", "有空看", "有空的话", "when you get a chance", "if you have time",
                  "would be good to", "no rush", "不着急", "不急")
_QUESTION = re.compile(r"[?？]|吗[。！!]?$|吗[，,。]", re.MULTILINE)


@dataclass(frozen=True)
class Reading:
    """What one message says, before any weighing."""

    channel: str
    sender: str  # "person" | "group" | "automated" | "bulk" | "feed" | "worklog" | "other"
    addressed: bool  # written to the user personally (urgent words count only then)
    promotion: bool
    phishing: bool
    asks: bool = False
    asks_you: bool = False  # an automated or bulk message naming the user as the one who must act
    soft: bool = False  # the request is a suggestion ("最好看一下", "when you get a chance")
    result: bool = False
    waiting: bool = False
    partial: bool = False
    failure: bool = False
    production: bool = False
    staging: bool = False
    autopay: bool = False
    pay_failed: bool = False
    consequence: bool = False
    urgent: bool = False
    question: bool = False
    due: datetime | None = None
    now: datetime | None = None
    sent: datetime | None = None  # the message's own date
    incident: bool = False  # an alert or outage (not a failed payment)
    impact: bool = False  # people are affected now ("customers affected", "用户受影响")
    duty: str | None = None  # "on" | "leave" | None: what the user's background says about being on duty


@dataclass(frozen=True)
class Verdict:
    """How the baseline weighs one message."""

    noise: bool
    weight: str
    kind: str
    rule: str
    explicit_kind: bool
    due_at: str | None = None
    pressing: bool = False  # happening now (people affected): kept at high when the budget is tight


_CLAIMS = (("已修复", "修复"), ("已解决", "解决"), ("问题解决", "问题处理"), ("已完成", "完成"), ("已还清", "还款"),
           ("还款成功", "还款"), ("付款成功", "付款"), ("已批准", "审批"), ("已通过审核", "审核"))
_EN_CLAIMS = re.compile(r"\b(?:is |are |was |were |been |has been |have been )?(fixed|resolved|completed|paid|approved)\b",
                        re.IGNORECASE)
_EN_PLAIN = {"fixed": "fix", "resolved": "resolution", "completed": "completion", "paid": "payment",
             "approved": "approval"}


def plain_claims(text: str) -> str:
    """``text`` without the words of a finished result, for an item that is still in progress: the message
    may say "已修复" of a fix seen on staging only; the item must not (seed 001: never complete facts)."""
    for claim, plain in _CLAIMS:
        text = text.replace(claim, plain)
    return _EN_CLAIMS.sub(lambda m: _EN_PLAIN[m.group(1).lower()] + " seen", text)


def own_words(text: str) -> str:
    """The message's own words: quoted lines (``>``) and the quoted history after "On … wrote:" left out."""
    if ">" in text:
        text = "\n".join(line for line in text.split("\n") if not line.lstrip().startswith(">"))
    found = _QUOTE_START.search(text)
    return text[:found.start()] if found and found.start() > 0 else text


def read_message(event: Mapping[str, Any], *, now: str | None, user: Mapping[str, Any] | None = None) -> Reading:
    """The ``Reading`` of one observation at ``now`` for this user."""
    title = str(event.get("title") or "")[:300]
    body = own_words(str(event.get("text") or ""))[:READ_LIMIT]
    # A reply's subject is the thread's: its request was the first message's, not this one's.
    original = body if _REPLY.match(title) else f"{title}\n{body}"
    text, low_title, low_body = original.lower(), title.lower(), body.lower()
    meta = event.get("meta") if isinstance(event.get("meta"), Mapping) else {}
    channel = str(event.get("channel") or "")
    sender = _sender(channel, str(event.get("from") or ""), meta, low_title, low_body)
    asks = bool(_ASK.search(text) or _SOFT_ASK.search(text)) and not _NO_ACTION.search(text)
    promotion_score = 2 * bool(_PROMO_STRONG.search(low_title)) + 2 * len(_PROMO_STRONG.found(low_body))
    promotion_score += len(_PROMO_WEAK.found(text)) + (sender == "bulk")
    promotion = promotion_score >= 3 or (promotion_score >= 2 and not asks)
    phishing = bool(_PHISHING.search(text))
    if promotion or phishing or sender == "bulk":
        return Reading(channel, sender, False, promotion, phishing)
    moment = parse_instant(now) if now else None
    background = " ".join(str((user or {}).get(k) or "") for k in ("background", "purpose")).lower()
    autopay, pay_failed = bool(_AUTOPAY.search(text)), bool(_PAY_FAILED.search(text))
    failure, production = bool(_FAILURE.search(text)), bool(_PRODUCTION.search(text))
    staging = bool(_STAGING.search(text))
    return Reading(
        channel, sender, sender in ("person", "automated", "worklog") and not _GENERIC_GREETING.search(low_body[:200]),
        promotion, phishing, asks=asks and (not autopay or pay_failed), asks_you=asks and bool(_ASKS_YOU.search(text)),
        soft=bool(_SOFT_ASK.search(text)), result=bool(_RESULT.search(text)), waiting=bool(_WAITING.search(text)),
        partial=bool(_PARTIAL.search(text)), failure=failure, production=production, staging=staging,
        autopay=autopay, pay_failed=pay_failed, consequence=bool(_CONSEQUENCE.search(text)),
        urgent=bool(_URGENT.search(text)), question=sender == "person" and bool(_QUESTION.search(body)),
        due=_deadline(original, event, moment) if moment else None, now=moment, sent=parse_instant(event.get("at")),
        incident=failure and not pay_failed and bool(_INCIDENT.search(text) or production or staging)
        and not (_RESULT.search(text) or _PARTIAL.search(text)),  # a fix reported is progress, not an alert
        duty=_duty(background), impact=bool(_IMPACT.search(text)))


def _sender(channel: str, sender: str, meta: Mapping[str, Any], title: str, body: str) -> str:
    if channel in ("rss", "atom", "feed"):
        return "feed"
    if channel == "worklog":
        return "worklog"
    if channel != "email":
        return "other"
    address = sender.rsplit("<", 1)[-1].strip(" >").lower()
    bulk = (2 * bool(meta.get("list_unsubscribe")) + 2 * (meta.get("precedence") in ("bulk", "junk"))
            + (meta.get("precedence") == "list") + bool(meta.get("list_id")) + bool(meta.get("bulk_headers"))
            + bool(_NEWSLETTER.search(body)) + 2 * bool(_NEWSLETTER.search(title)))
    text = f"{title}\n{body}"  # both lower-cased by the caller
    if bulk >= 2 and not _ASKS_YOU.search(text):
        return "bulk"
    if meta.get("auto_submitted") or _AUTOMATED_LOCAL.match(address) or _AUTOMATED_TEXT.search(text) or bulk >= 2:
        return "automated"
    recipients = [str(r).lower() for r in list(meta.get("to") or ()) + list(meta.get("cc") or ())]
    if len(recipients) > 3 or any(_GROUP_LOCAL.match(r.rsplit("<", 1)[-1].strip(" >")) for r in recipients[:1]) \
            or _GROUP_GREETING.match(body):
        return "group"
    return "person"


def _duty(background: str) -> str | None:
    """"on" when the user's background says they are on duty, "leave" when on leave (their own leave wins)."""
    leave, duty = bool(_ON_LEAVE.search(background)), bool(_ON_DUTY.search(background))
    if leave and (not duty or _MY_LEAVE.search(background)):
        return "leave"
    return "on" if duty else None


def _deadline(text: str, event: Mapping[str, Any], now: datetime) -> datetime | None:
    """The deadline the message sets: a date with a deadline marker, else a date in a sentence that asks."""
    sent = parse_instant(event.get("at"))
    anchor = sent.astimezone(now.tzinfo) if sent is not None and sent <= now else now
    mentions = find_dates(text, anchor)
    firm = [m for m in mentions if m.firm]
    if not firm:
        firm = [m for m in mentions if _in_asking_sentence(text, m)]
    if not firm:
        return None
    timed = [m for m in firm if m.timed]
    return min(m.at for m in (timed or firm)) if len({m.at.date() for m in firm}) == 1 else min(m.at for m in firm)


def _in_asking_sentence(text: str, mention: Mention) -> bool:
    start = max(text.rfind(mark, 0, mention.start) for mark in "。！？!?\n") + 1
    ends = [i for i in (text.find(mark, mention.end) for mark in "。！？!?\n") if i >= 0]
    return bool(_ASK.search(text[start:min(ends) if ends else len(text)].lower()))


def judge(r: Reading) -> Verdict:
    """Noise, weight, kind and the deciding rule for a ``Reading``."""
    if r.phishing:
        return Verdict(True, "trace", "fyi", "phishing", False)
    if r.promotion:
        return Verdict(True, "trace", "fyi", "promotion", False)
    if r.sender == "bulk":
        return Verdict(True, "trace", "fyi", "bulk", False)
    due_at = r.due.isoformat() if r.due is not None else None
    if r.incident:
        return _incident(r, due_at)
    if r.asks and not r.partial and r.sender != "feed":
        return _request(r, due_at)
    local = r.addressed or r.sender in ("worklog", "person")
    if r.partial:
        return Verdict(False, "normal" if local else "low", "in-progress", "partial", True, due_at)
    if r.autopay and not r.pay_failed:
        return Verdict(False, "low", "in-progress", "autopay", True, due_at)
    if r.waiting:  # waiting words win over result words: "submitted", "expected to arrive tomorrow"
        return Verdict(False, "normal" if local else "low", "in-progress", "waiting", True, due_at)
    if r.result:
        return Verdict(False, "normal" if local and r.sender != "automated" else "low", "done", "result", True)
    if r.failure:
        return Verdict(False, "normal", "fyi", "failure", True)
    if r.question:
        return Verdict(False, "normal", "needs-you", "question", True, due_at)
    weight = "normal" if r.sender in ("person", "worklog") else "low"
    return Verdict(False, weight, "fyi", "info", False)


def _request(r: Reading, due_at: str | None) -> Verdict:
    left = (r.due - r.now) if r.due is not None and r.now is not None else None
    if left is not None:
        weight = _by_time_left(left)
    else:
        personal = r.addressed and r.sender in ("person", "worklog") and not r.question
        weight = "high" if personal or r.asks_you else "normal"
        if r.sent is not None and r.now is not None and r.now - r.sent > timedelta(days=14):
            weight = "normal" if weight == "high" else "low"  # an old request without a date: likely handled
    if r.consequence and left is not None and timedelta(days=-3) <= left <= timedelta(days=7) \
            and r.sender != "group":
        weight = _step_up(weight)
    if r.urgent and r.addressed and r.sender == "person":
        weight = _step_up(weight)
    if (r.sender == "group" or r.soft) and weight == "critical":
        weight = "high"
    return Verdict(False, weight, "needs-you", "deadline" if left is not None else "request", True, due_at)


def _incident(r: Reading, due_at: str | None) -> Verdict:
    if r.staging and not r.production:
        return Verdict(False, "low", "fyi", "staging", True)
    if r.duty == "leave":
        return Verdict(False, "low", "fyi", "on_leave", True)
    if r.duty == "on":
        return Verdict(False, "critical", "needs-you", "on_duty", True, due_at)
    if r.asks:
        return _request(r, due_at)
    if r.production:
        return Verdict(False, "high", "needs-you", "incident", True, due_at, pressing=r.impact)
    return Verdict(False, "normal", "fyi", "failure", True)


def _by_time_left(left: timedelta) -> str:
    if timedelta(days=-3) <= left <= timedelta(days=2):
        return "critical"
    if left <= timedelta(days=7):
        return "high"
    return "normal"


def _step_up(weight: str) -> str:
    return WEIGHTS[max(0, WEIGHTS.index(weight) - 1)]
