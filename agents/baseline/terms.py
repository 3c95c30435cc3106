"""The word lists the baseline editor reads messages with (zh and en), and a fast way to search them.

``Terms`` holds one list: whole ASCII words (a set), literal phrases and
Chinese words (substring tests) and small regexes (``r:…``); every search is
over lower-cased text. The lists below are what ``baseline_mail`` reads:
promotions and phishing, bulk mail, requests and their negations, results,
waiting, partial verification, failures and incidents, environments, urgent
words and consequences, greetings, automated senders, duty and leave.
"""

from __future__ import annotations

import re

__all__ = ["ASK", "ASKS_YOU", "AUTOMATED_LOCAL", "AUTOMATED_TEXT", "AUTOPAY", "CONSEQUENCE", "FAILURE", "GENERIC_GREETING", "GROUP_GREETING", "GROUP_LOCAL", "IMPACT", "INCIDENT", "NEWSLETTER", "NO_ACTION", "ON_DUTY", "ON_LEAVE", "PARTIAL", "PAY_FAILED", "PHISHING", "PROD_DONE", "PRODUCTION", "PROMO_STRONG", "PROMO_WEAK", "QUESTION", "QUOTE_START", "REPLY", "RESULT", "SOFT_ASK", "STAGING", "Terms", "URGENT", "WAITING", "words"]


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
_LAST: tuple = (None, frozenset())


def _tokens(text: str) -> frozenset[str]:
    """The ASCII words of a lower-cased text (the last text's are kept: every term list asks for them).

    The pair is replaced as one tuple and the words found are returned from a local, so two threads
    reading different texts never get each other's words.
    """
    global _LAST
    last = _LAST
    if last[0] is text:
        return last[1]
    found = frozenset(_TOKEN.findall(text))
    _LAST = (text, found)
    return found


def words(*terms: str) -> Terms:
    """The ``Terms`` of ``terms`` (see ``Terms``)."""
    return Terms(*terms)


PROMO_STRONG = words("双11", "双十一", "双12", "双十二", "618大促", "r:满\\s*\\d+\\s*减", "满减", "定金", "会员日", "特惠",
                      "秒杀", "抢购", "免费领取", "立即领取", "限时福利", "限时优惠", "恭喜您获得", "仅限今日", "优惠券",
                      "折扣码", "清仓", "大促", "促销", "团购", "抽奖", "领红包", "买一送一", "拼团", "r:\\d+(?:\\.\\d)?\\s*折(?:起|优惠)",
                      "r:\\d+\\s*%\\s*off", "sale ends", "flash sale", "limited time offer", "limited-time offer",
                      "black friday", "cyber monday", "promo code", "coupon", "discount code", "buy one get one",
                      "exclusive offer", "deal of the day", "shop now", "save up to", "clearance", "free gift")
PROMO_WEAK = words("优惠", "折扣", "广告", "福利", "免费", "限时", "退订", "promo", "promotion", "discount", "offer",
                    "deal", "sale", "free", "last chance", "ends tonight", "don't miss")
PHISHING = words("r:verify your (?:account|identity|email|password|information)",
                  "r:confirm your (?:account|identity|password|billing|payment)",
                  "r:(?:account|mailbox) (?:has been |will be |is )?(?:suspended|locked|disabled|deactivated|restricted)",
                  "r:update your (?:payment|billing|bank) (?:details|information|method)",
                  "r:click (?:here|below|the link) to (?:verify|confirm|restore|unlock|reactivate|claim)",
                  "r:you(?:'ve| have) won", "claim your prize", "claim your reward", "wire transfer", "gift card",
                  "r:账[户号](?:存在)?异常", "r:账[户号](?:已被|将被)?(?:冻结|封停|停用)", "r:点击(?:下方)?链接(?:进行)?(?:验证|激活|解冻|认证|领取)",
                  "r:身份(?:信息)?(?:验证|核实)失败", "中奖", "恭喜您中", "补贴申领", "退税", "r:积分(?:即将)?(?:清零|过期)",
                  "r:邮箱(?:容量)?已满")
NEWSLETTER = words("newsletter", "digest", "roundup", "this week in", "unsubscribe", "view in browser",
                    "view this email in your browser", "周刊", "月刊", "订阅号", "精选推荐", "早报", "资讯速递", "退订")
ASK = words("r:(?<![申邀聘宴])请(?!求|问|假|柬|各部门|各单位)(?:您|你)?(?:务必|尽快)?(?:在|于)?[^。！？\n]{0,24}?(?:提交|补交|上传|缴费|缴纳|支付|付款|还款|回复|答复|确认|审批|审核|批准"
             "|签字|签署|填写|填报|选择|决定|评审|审阅|review|处理|补充|补一下|提供|安排|参加|出席|预约|办理|修改|更新|反馈|告知|告诉|联系|准备"
             "|完成|报名|发我|发给我|看一下|看看)",
             "r:(?<![申邀聘宴])请(?:您|你)(?!们)", "r:(?<![申邀聘宴])请(?!求|问|假|柬)[^。！？\n]{0,30}?(?:之前|以前|前)(?![往来进])",
             "要求你", "要求您", "你需要", "您需要", "需要您", "需要你", "麻烦您", "麻烦你", "能否", "可否", "是否可以",
             "可不可以", "r:帮忙(?:看|处理|确认|审|签|填|发|回|转|催|查一下|改|弄|跟进|提交)", "r:(?:请|能|可以|麻烦)[^。！？\n]{0,4}帮忙",
             "帮我", "待您", "待你", "发我", "发给我", "交给我", "给我发", "回我", "r:建议(?:您|你)(?!们)",
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
             "r:approval (?:needed|required|requested|pending)", "pending your", "r:assigned (?:[^.\n]{0,40} )?to you",
             "r:please accept (?!our |my |the apolog|apolog)",
             "r:you(?:'ve| have) been (?:assigned|requested)", "respond by", "reply by", "payment due", "amount due",
             "balance due", "past due", "overdue", "r:due (?:on|by|date)", "deadline", "rsvp")
ASKS_YOU = words("requested your review", "review requested", "awaiting your", "r:requires? your", "r:needs? your",
                  "pending your", "r:assigned (?:[^.\n]{0,40} )?to you", "r:waiting (?:for|on) you\\b", "待您", "待你", "请您", "需要您", "需要你")
NO_ACTION = words("无需操作", "无需处理", "无需回复", "无需任何操作", "不需要操作", "不用回复", "不用处理", "仅供参考",
                   "r:no action (?:is )?(?:needed|required)", "r:you don't need to do anything", "no need to reply",
                   "r:for your (?:information|records|reference)", "fyi only", "you can ignore this",
                   "r:[如若](?:非|不是|果不是|果非)本人(?:操作)?", "r:if (?:this|it) (?:wasn't|was not) you",
                   "r:if you did(?:n't| not) (?:make|request|do|change|authori[sz]e)")
AUTOPAY = words("自动扣款", "自动还款", "自动缴费", "自动扣费", "自动转账", "自动付款", "自动扣除", "自动划扣", "自动划款", "代扣",
                 "代缴", "托收", "autopay", "auto-pay",
                 "automatic payment", "automatic transfer", "standing order",
                 "direct debit", "r:(?:will be |is )?(?:automatically|auto) ?(?:debited|charged|paid|deducted)",
                 "r:will be (?:debited|charged|deducted) (?:automatically|from your)")
PAY_FAILED = words("扣款失败", "支付失败", "还款失败", "缴费失败", "payment failed", "r:could not be (?:charged|processed)",
                    "card was declined", "payment was declined", "被退回", "退回", "驳回", "rejected", "returned")
RESULT = words("已合并", "合并到", "已完成", "已办结", "已发布", "已上线", "已部署", "已解决", "已送达", "已签收", "已妥投",
                "已到账", "到账成功", "付款成功", "支付成功", "还款成功", "缴费成功", "已批准", "审批通过", "已通过", "已生成",
                "已出票", "已收到", "收到了", "已退款", "退款成功", "办理完成", "已修复", "已恢复", "恢复正常", "已接受", "已入账",
                "入账成功", "r:已于[^。；\n]{0,24}(?:到账|入账|送达|签收|完成|发放|办结)",
                "接受了", "跑完了", "已跑完", "accepted", "merged", "r:\\bfinished\\b",
                "completed", "resolved", "released", "delivered", "payment received", "paid", "succeeded",
                "successfully", "approved", "is ready", "are ready", "now available", "passed", "deployed", "published",
                "confirmed", "fixed", "recovered")
WAITING = words("已提交", "提交成功", "处理中", "审核中", "审批中", "进行中", "排队", "等待", "预计", "正在", "运输中",
                 "派送中", "已发货", "已揽收", "配送中", "待审核", "受理中", "已受理", "in progress", "processing",
                 "pending", "queued", "under review", "submitted", "expected", "scheduled", "on its way", "shipped",
                 "out for delivery", "in transit", "r:awaiting (?!your)", "r:waiting for (?!you)",
                 "r:we(?:'ll| will) (?:get back|reply|follow up)", "r:will be (?:processed|reviewed|delivered)")
PARTIAL = words("r:(?:还没有?|尚未|未|暂未|仍未|还未|待)(?:验证|测试|测|发布到?生产|上线)", "not yet verified", "not yet tested",
                 "r:not (?:been )?(?:verified|tested)", "untested", "r:yet to be (?:verified|tested|deployed)",
                 "r:only (?:on|in) staging", "staging only", "r:(?:仅|只)(?:在|于)?[^。；\\n]{0,12}(?:验证|测试)",
                 "r:(?:生产|线上|production)[^。；\\n]{0,8}(?:还没|尚未|未|还未|暂未|not yet)",
                 "r:(?:not yet|hasn't been|has not been) (?:deployed|released|rolled out)",
                 "r:(?:还没有?|尚未|未|没有)[^。；\n]{0,4}(?:全量|全面上线|全部上线|全面发布|全部发布)",
                 "r:not (?:yet )?(?:fully|widely) (?:rolled out|released|deployed)", "r:(?:only|still) (?:on|in) (?:canary|beta)",
                 "r:(?:nobody|no one) (?:has )?(?:yet )?(?:tested|verified|checked)",
                 "r:(?:hasn't|has not|haven't|have not) (?:yet )?(?:been )?(?:tested|verified)", "r:(?:没有?人|无人)(?:测试?|验证)")
PROD_DONE = words("r:(?:生产|线上|正式)环境?[^。；，\n]{0,6}(?:已|验证通过|确认|恢复)", "已上线", "已全量", "已发布到生产",
                   "r:(?:deployed|released|rolled out|live) (?:to|in|on) production", "r:production[^.;\n]{0,12}(?:verified|confirmed)")
FAILURE = words("告警", "报警", "故障", "宕机", "不可用", "错误率", "失败", "出错", "中断", "崩溃", "outage", "alert",
                 "alarm", "incident", "error rate", "failed", "failure", "failing", "degraded", "unavailable", "crashed",
                 "r:\\bdown\\b")
PRODUCTION = words("生产", "线上", "正式环境", "production", "prod", "live site", "r:customers? (?:are )?affected",
                    "用户受影响", "影响用户", "r:用户[^。；\\n]{0,6}失败")
IMPACT = words("r:customers? (?:are )?affected", "r:users? (?:are )?affected", "用户受影响", "影响用户", "r:用户[^。；\\n]{0,6}失败",
                "r:\\bP[01]\\b", "sev1", "sev-1")
STAGING = words("staging", "测试环境", "预发", "灰度", "test environment", "sandbox", "qa environment", "dev environment")
URGENT = words("紧急", "加急", "十万火急", "火速", "尽快", "立即", "立刻", "马上", "急需", "urgent", "urgently", "asap",
                "immediately", "right away", "high priority", "time-sensitive")
CONSEQUENCE = words("逾期", "否则", "不然", "将无法", "无法按期", "无法按时", "影响", "违约金", "滞纳金", "罚款", "罚金", "停机",
                     "停电", "停用", "冻结", "失效", "作废", "重新预约", "征信", "late fee", "penalty", "otherwise", "or else",
                     "r:will be (?:cancell?ed|suspended|terminated|closed|lost|charged)", "will expire", "blocks",
                     "blocked", "r:miss(?:ed)? the")
GROUP_GREETING = re.compile(r"^\s*(?:各位|大家|诸位|全体|同事们|同学们|各位家长|家长们|dear all|hi all|hello all|hi everyone"
                             r"|hello everyone|hi team|hello team|dear colleagues|dear team|all,|team,|folks,)", re.IGNORECASE)
GENERIC_GREETING = words("尊敬的客户", "尊敬的用户", "尊敬的会员", "尊敬的旅客", "亲爱的用户", "亲爱的会员", "dear customer",
                          "dear member", "dear user", "dear valued customer", "dear sir or madam", "dear sir/madam")
AUTOMATED_TEXT = words("此邮件由系统自动发送", "系统自动发送", "请勿直接回复", "请勿回复", "r:this is an automated (?:message|email|notification)",
                        "r:do not reply to this (?:email|message)", "automatically generated", "auto-generated")
AUTOMATED_LOCAL = re.compile(r"^(?:no[-_.]?reply|do[-_.]?not[-_.]?reply|donotreply|notifications?|notify|alerts?|alertmanager|monitoring"
                              r"|mailer-daemon|postmaster|bounces?|robot|bot|automated?|calendar(?:-notification)?|ci|builds?"
                              r"|jenkins|jira)(?:[+.-][^@]*)?@", re.IGNORECASE)
GROUP_LOCAL = re.compile(r"^(?:all|everyone|staff|team|group|list|announce|dev|devs|eng|[^@]*-(?:team|all|group|list))@",
                          re.IGNORECASE)
QUOTE_START = re.compile(r"^(?:on .{0,200}wrote:|在.{0,100}写道[:：]|-{2,}\s*(?:original message|原始邮件)\s*-{2,}"
                          r"|from:.{0,200}\n\s*sent:|发件人[:：])", re.IGNORECASE | re.MULTILINE)
ON_DUTY = words("值班", "轮值", "on-call", "on call", "oncall", "on duty")
ON_LEAVE = words("休假", "请假", "年假", "不值班", "不在值班", "on leave", "on vacation", "out of office", "ooo", "pto",
                  "r:\\bi(?:'m| am) away",
                  "off duty", "not on call", "off-call", "on holiday")
INCIDENT = words("告警", "报警", "故障", "宕机", "outage", "alert", "alarm", "incident", "pagerduty", "sev1", "sev2", "p0", "p1")
REPLY = re.compile(r"^\s*(?:re|aw|答复|回复)\s*(?:\[\d+\])?\s*[:：]", re.IGNORECASE)
SOFT_ASK = words("最好看一下", "最好先看", "建议先看", "有空看", "有空的话", "when you get a chance", "if you have time",
                  "would be good to", "no rush", "不着急", "不急")
QUESTION = re.compile(r"[?？]|吗[。！!]?$|吗[，,。]", re.MULTILINE)
