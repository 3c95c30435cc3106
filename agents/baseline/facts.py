"""The facts the baseline editor reads out of one message, and the title and summary it writes from them.

A person reading a bill says "电力公司账单 ¥236.40，11月12日到期，未设自动扣款：
请按时缴费", not the first sixty characters of the mail. ``read_facts(event,
verdict, now)`` finds what such a sentence needs, in zh and en:

* the **language of the source** (CJK characters in the subject and the first
  lines), so an English mail gets an English title whatever the skill's
  language;
* an **amount with its currency** ("¥1,234.50", "1234.50 元", "$82.10",
  "USD 40", "€12"), the one next to a bill word ("应还", "amount due", "total")
  first;
* the **issuer or sender**: the display name of ``from`` ("国家电网", "Acme
  Bank"), else the organisation of its domain; no-reply local parts are not
  names;
* whether it is a **bill** (账单, 缴费, 应还, bill, statement, amount due…);
* the **state** it reports (passed, failed, merged, approved, rejected,
  delivered, in transit, cancelled, rescheduled…), the first one found;
* the **key sentence**: the sentence with the most facts in it (amount, date,
  state, request), greetings and signatures left out.

``baseline_writing.write`` composes the title and the summary from them.
Pure: no clock, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from fold_core.timefmt import parse_instant
from fold_agents.baseline.dates import find_dates
from fold_agents.baseline.rules import clean, line, title_line

__all__ = ["AMOUNT", "about", "AUTOPAY_OFF", "BILL", "DATE_WORD", "Facts", "PAID", "PARCEL_PHISHING", "PAY_PENDING", "SALES",
           "SALES_PITCH", "SALES_STRONG", "STATE_PATTERNS", "ageing_hours", "clause", "day_of", "head_cut", "question", "read_facts",
           "source_language"]

_CJK = re.compile(r"[\u4e00-\u9fff]")
_CURRENCY_BEFORE = r"(?:US\$|HK\$|A\$|C\$|S\$|RMB|CNY|USD|EUR|GBP|JPY|HKD|¥|￥|\$|€|£)"
_CURRENCY_AFTER = r"(?:元|块|美元|欧元|英镑|港币|日元|RMB|CNY|USD|EUR|GBP|HKD)"
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d{1,2})?|\d+(?:\.\d{1,2})?"
AMOUNT = re.compile(rf"({_CURRENCY_BEFORE})\s?({_NUMBER})(?![\d%])|(?<![\d.])({_NUMBER})\s?({_CURRENCY_AFTER})(?![a-zA-Z])",
                    re.IGNORECASE)
BILL = re.compile(r"账单|缴费|应还|应缴|欠费|还款日|电费|水费|燃气费|话费|物业费|信用卡.{0,6}(?:账|还款)|付款通知"
                   r"|\bbills?\b|\bstatement\b|amount due|payment due|balance due|total due|\binvoice\b"
                   r"|minimum payment|due date", re.IGNORECASE)
_BILL_AMOUNT = re.compile(r"应还|应缴|本期|金额|合计|总计|共计|欠费|amount|total|balance|due|owe", re.IGNORECASE)
AUTOPAY_OFF = re.compile(r"(?:已|您已|你已)?(?:取消|关闭|停用|解除|未开通|没有开通|未设置|未办理|未签约)[^。；;\n]{0,6}"
                          r"(?:自动扣款|自动还款|自动缴费|代扣|代缴|托收|自动扣费)"
                          r"|(?:cancell?ed|stopped|turned off|switched off|disabled|removed|ended)\s+(?:your\s+|the\s+)?"
                          r"(?:direct debit|autopay|auto-pay|automatic payments?|standing order)"
                          r"|(?:direct debit|autopay|auto-pay|automatic payments?)\s+(?:is|was|has been)\s+"
                          r"(?:not set up|off|cancell?ed|disabled|inactive|stopped)"
                          r"|(?:not|never)\s+(?:set up|enrolled|signed up)\s+(?:for\s+)?(?:direct debit|autopay|auto-pay)"
                          r"|don't have (?:direct debit|autopay)|no (?:direct debit|autopay) (?:is )?(?:set|on file)",
                          re.IGNORECASE)
PAID = re.compile(r"已还清|还款成功|付款成功|支付成功|缴费成功|已缴费|已支付|已收到您的(?:付款|还款|缴费)"
                  r"|payment (?:has been )?received|thank you for your payment|we(?:'ve| have)? received your payment"
                  r"|has been paid|paid in full|payment (?:was )?successful|payment confirmation", re.IGNORECASE)
# A payment on its way: not a bill waiting for the user any more (the payment's own rule follows it).
PAY_PENDING = re.compile(r"已受理|处理中|已提交|还款申请|扣款中|payment (?:is )?(?:processing|pending|scheduled|submitted)"
                         r"|(?:we are|is being) processing|submitted", re.IGNORECASE)
# A parcel that "could not be delivered" because the "address is incomplete", to be fixed within hours or for a
# small fee: the classic delivery scam (real carriers try again and do not ask for card details in 24 hours).
PARCEL_PHISHING = re.compile(r"(?:地址(?:信息)?(?:不完整|不详|有误|错误|不全)|无法(?:投递|派送|配送)|address (?:is )?(?:incomplete|invalid|"
                             r"incorrect)|incomplete (?:delivery )?address|(?:could not|couldn't|unable to) (?:be )?deliver"
                             r"|delivery (?:attempt )?(?:failed|suspended|on hold))[\s\S]{0,300}?(?:24\s*小时|48\s*小时|"
                             r"\b(?:24|48|12)\s*(?:h|hrs?|hours)\b|(?:重新)?派送费|运费|redelivery fee|small fee|customs fee|"
                             r"update (?:your )?(?:address|details)[^.\n]{0,40}(?:link|here|below))", re.IGNORECASE)
# Cold sales: a follow-up to a pitch the user never answered, or an invitation with "last seats" pressure.
SALES = re.compile(r"following up on my (?:last|previous|earlier) (?:email|note|message)|circling back"
                   r"|just following up|bumping this|(?:book|schedule) a (?:quick )?(?:demo|call)|quick call|\b(?:15|20|30)[- ]?min(?:ute)?s?\b"
                   r"|free (?:trial|consultation|demo)|为贵(?:公司|司)|贵司(?:是否|有没有)|合作洽谈|免费试用|预约演示"
                   r"|最后\s*\d+\s*个名额|名额有限|仅剩\s*\d+\s*个名额|报名从速|last (?:few )?(?:\d+ )?(?:seats|spots)",
                   re.IGNORECASE)
SALES_STRONG = re.compile(r"(?:book|schedule) a (?:quick )?demo|free trial|免费试用|预约演示|最后\s*\d+\s*个名额|仅剩\s*\d+\s*个名额"
                          r"|名额有限|报名从速|last (?:few )?(?:\d+ )?(?:seats|spots)", re.IGNORECASE)
# The pitch itself: a colleague's "quick call, 15 minutes?" is not sales without one of these.
SALES_PITCH = re.compile(r"following up on my|circling back|just following up|bumping this|为贵(?:公司|司)|贵司|合作洽谈"
                         r"|our (?:platform|solution|product|team can)|我们的(?:产品|方案|平台)|节省\s*\d+\s*%|save \d+\s*%",
                         re.IGNORECASE)
# (pattern, zh, en): the state a message reports, most telling first.
_STATES = (
    (r"扣款失败|支付失败|还款失败|payment failed|card was declined|payment was declined", "扣款失败", "payment failed"),
    (r"已退回|被退回|驳回|未通过|rejected|returned|declined", "被退回", "rejected"),
    (r"构建失败|测试失败|build failed|tests? failed|failing|\bfailed\b|失败", "失败", "failed"),
    (r"已取消|取消了|cancell?ed", "已取消", "cancelled"),
    (r"改期|延期|推迟|改到|调整到|时刻变更|rescheduled|postponed|moved (?:\w+ ){0,3}to|changed to|delayed"
     r"|now (?:departs|leaves|starts|begins) at|schedule change", "改期", "rescheduled"),
    (r"已合并|合并到|\bmerged\b", "已合并", "merged"),
    (r"已批准|审批通过|已通过(?![^，。；\n]{0,6}(?:发送|发给|提交|转交))|(?<!via )\bapproved\b", "已批准", "approved"),
    (r"构建通过|测试通过|全部通过|\bpassed\b|\bsucceeded\b|\bgreen\b", "通过", "passed"),
    (r"已送达|已签收|已妥投|\bdelivered\b", "已送达", "delivered"),
    (r"运输中|派送中|已发货|已揽收|in transit|out for delivery|\bshipped\b|on its way", "运输中", "in transit"),
    (r"已付款|已支付|已还清|还款成功|付款成功|缴费成功|已缴清|payment received|\bpaid\b", "已付款", "paid"),
    (r"已提交|提交成功|\bsubmitted\b", "已提交", "submitted"),
    (r"已上线|已发布|已部署|deployed|released|shipped to production", "已上线", "released"),
    (r"已修复|已解决|\bfixed\b|\bresolved\b", "已修复", "fixed"),
    (r"已完成|跑完了|已跑完|\bfinished\b|\bcompleted\b", "已完成", "finished"),
)
_NEGATED = re.compile(r"(?:未|没|不|待|尚|等|还没有?|not|n't|awaiting|pending|waiting for|to be)\s*$", re.IGNORECASE)
STATE_PATTERNS = tuple((re.compile(p, re.IGNORECASE), zh, en) for p, zh, en in _STATES)
_SENTENCE = re.compile(r"(?:[^。！？!?\n；;.]|\.(?!\s|$))+(?:[。！？!?；;]|\.(?=\s|$)|(?=\n)|$)")
_SKIP = re.compile(r"^\s*(?:[^。！？!?\n]{0,24}?(?:您好|你好|大家好|家长好|老师好|同学们好|各位好)|(?:hi|hello|hey|dear)\b[^,:\n]{0,40}[,:]?\s*$"
                   r"|(?:thanks|thank you|best|regards|cheers|谢谢|此致|祝好)\b)", re.IGNORECASE)
_NOREPLY = re.compile(r"^(?:no[-_.]?reply|do[-_.]?not[-_.]?reply|donotreply|notifications?|notify|alerts?|info|service|"
                      r"support|billing|mailer|news|hello|team|account|accounts)$", re.IGNORECASE)
_SLUG = re.compile(r"^[a-z0-9]+(?:[-_][a-z0-9]+)+$")
_TAG = re.compile(r"^\s*(?:\[[^\]]{1,30}\]|【[^】]{1,30}】)\s*")


@dataclass(frozen=True)
class Facts:
    """What one message says, as facts a sentence can be written from."""

    lang: str  # "zh" | "en": the source's language
    topic: str  # the subject without reply prefixes, tags or slugs' dashes ("" when none)
    who: str  # the issuer or sender's name ("" when none)
    amount: str  # "¥236.40" ("" when none)
    bill: bool
    autopay_off: bool  # the message says autopay is cancelled or not set
    state: str  # in the source's language ("" when none)
    key: str  # the sentence with the most facts ("" when none)
    key_first: bool  # the key sentence is the message's first one
    ask: str = ""  # the sentence that asks something of the user ("会前最好看一下第 3、4 节")
    new_time: str = ""  # a rescheduled matter's new day and time, as written for a title
    otherwise: str = ""  # the other branch of "no action needed if …" ("reply before 12 October to change")
    where: str = ""  # the environment or platform a check covered ("staging", "预发")
    open_part: str = ""  # what the message says is not yet verified ("mobile is untested")
    person: bool = True  # a person wrote it (named in a summary that starts with their words)


def source_language(*texts: Any) -> str:
    """"zh" when the text has Chinese characters in number, else "en"."""
    sample = " ".join(str(t or "") for t in texts)[:400]
    return "zh" if len(_CJK.findall(sample)) >= 2 else "en"


_SIGN = {"EUR": "€", "GBP": "£", "USD": "$", "US$": "$", "CNY": "¥", "RMB": "¥", "￥": "¥", "JPY": "JP¥"}


def _amount(text: str) -> str:
    found = list(AMOUNT.finditer(text))
    # "balance is now ¥0.00" is not what the message is about: a zero amount only when there is no other
    found = [m for m in found if (m.group(2) or m.group(3)).strip("0.,")] or found
    if not found:
        return ""
    near = [m for m in found if _BILL_AMOUNT.search(text[max(0, m.start() - 16):m.start()])]
    match = (near or found)[0]
    if match.group(1):
        symbol = _SIGN.get(match.group(1).upper(), match.group(1))
        return f"{symbol}{match.group(2)}" if len(symbol) == 1 or symbol.endswith("$") else f"{symbol} {match.group(2)}"
    unit = match.group(4)
    if unit.upper() in _SIGN:
        return f"{_SIGN[unit.upper()]}{match.group(3)}"
    return f"{match.group(3)}{unit}" if _CJK.match(unit) else f"{match.group(3)} {unit.upper()}"


def _who(sender: str) -> str:
    """The display name of a From header, else the organisation in its domain."""
    sender = clean(sender)
    if "<" in sender:
        name = sender.split("<", 1)[0].strip().strip('"\' ')
        address = sender.rsplit("<", 1)[-1].strip(" >")
    else:
        name, address = ("", sender) if "@" in sender else (sender, "")
    name = re.sub(r"\s*[(（][^)）]*[)）]\s*$", "", name)
    if name and "@" not in name and not _NOREPLY.match(name.replace(" ", "")):
        return head_cut(name, 16)
    if "@" in address:
        local, domain = address.split("@", 1)
        parts = [p for p in domain.lower().split(".") if p not in ("mail", "email", "www", "e", "m", "info", "news")]
        org = parts[-2] if len(parts) >= 2 and parts[-2] not in ("com", "co", "org", "net", "gov", "edu") else (
            parts[-3] if len(parts) >= 3 else (parts[0] if parts else ""))
        if not _NOREPLY.match(local) and "." in local and org in ("gmail", "outlook", "qq", "163", "hotmail", "icloud"):
            return line(local.replace(".", " ").title(), 12)
        if org and org not in ("gmail", "outlook", "qq", "163", "hotmail", "icloud", "yahoo", "example", "localhost",
                               "test", "invalid"):
            return line(org.capitalize(), 12)
    return ""


def _topic(title: str) -> str:
    topic = title_line(title, 200)
    while True:
        shorter = _TAG.sub("", topic, count=1)
        if shorter == topic or not shorter:
            break
        topic = shorter
    if _SLUG.match(topic):
        topic = re.sub(r"[-_]+", " ", topic)
    return topic


_GREETING = re.compile(r"^(?:[^。！？!?\n]{0,24}?(?:您好|你好|大家好|家长好|老师好|同学们好|各位好)[！!，,：:。 ]*|(?:hi|hello|hey|dear)\b[^,:\n]{0,40}[,:]\s*)",
                       re.IGNORECASE)
_OPEN = re.compile(r"尚未|还没|未验证|未测试|待验证|没测|没有?人测|无人验证|not yet|untested|unverified|not verified|not tested"
                   r"|unchanged|(?:nobody|no one) (?:has )?(?:yet )?(?:tested|verified)|(?:hasn't|has not) been tested",
                   re.IGNORECASE)


def _sentences(text: str) -> list[str]:
    found = [_GREETING.sub("", clean(m.group(0)), count=1) for m in _SENTENCE.finditer(text)]
    return [s for s in found if len(s) >= 4 and not _SKIP.match(s)]


_ASKING = re.compile(r"(?<![申邀提])请(?!假|求已|柬)|麻烦|最好|务必|需要你|需要您|please|could you|can you|would you|let me know|need you to"
                     r"|needs? your (?:decision|input|approval|answer|call|go-ahead)",
                     re.IGNORECASE)
_TO_NEW = re.compile(r"改到|改为|改成|调整到|调整为|推迟到|延期到|延至|(?:moved|changed|rescheduled|postponed|delayed|pushed)"
                     r"(?: \w+){0,4} to\b|new (?:time|date|departure)|now (?:departs|leaves|starts)", re.IGNORECASE)


_DANGLING = re.compile(r"(?:\s+(?:on|of|to|for|with|about|at|in|by|from|and|or|the|a|an|whether|that)|的|是否|关于|对|把|和|或)+$",
                       re.IGNORECASE)
_CHOICE = re.compile(r"还是|或者|\bor\b", re.IGNORECASE)


def clause(sentence: str, limit: int, marks: str = "，,：:") -> str:
    """A sentence shortened at a clause (no "…") when it is too long; its end mark dropped. Cut at a word
    instead, it never ends on a word that leads into what was cut ("need your decision on", "是否")."""
    sentence = sentence.rstrip("。.!！;；")
    if len(sentence) <= limit:
        return sentence
    cut = max(sentence.rfind(mark, 0, limit) for mark in marks)
    short = sentence[:cut] if cut >= 6 else head_cut(sentence, limit).rstrip("…")
    for opening, closing in (("（", "）"), ("(", ")")):
        if short.count(opening) > short.count(closing):  # never end inside a bracket: cut before it
            short = short[:short.rfind(opening)].rstrip() or short
    return _DANGLING.sub("", short).rstrip(" ,，:：") or short


def question(ask: str, limit: int, lang: str) -> str:
    """An ask that fits ``limit``: a choice between options ("先用 A 临时缓解，还是这周迁移到 B？") is never
    cut between its options — too long, it says there is a choice and where to read it."""
    whole = ask.rstrip("。.!！;；")
    if len(whole) <= limit or not _CHOICE.search(whole):
        return clause(ask, limit)
    head = re.split(r"[：:]", whole, maxsplit=1)[0] if re.search(r"[：:]", whole[:limit]) else ""
    if lang == "zh":
        return f"{head or '需要你决定'}（二选一，见原文）"
    return f"{head}: choose one of two" if head and len(head) <= limit - 16 else "choose between two options"


def _ask(sentences: list[str]) -> str:
    """The clause that asks something of the user; the whole sentence when it asks to choose between options
    (its clauses are the options: cut apart, the question no longer reads)."""
    for sentence in sentences:
        for part in re.split(r"[，,]\s*", sentence):
            if _ASKING.search(part):
                return sentence if _CHOICE.search(sentence) and sentence.rstrip().endswith(("？", "?")) else part
    return ""


def _otherwise(sentences: list[str]) -> str:
    for index, sentence in enumerate(sentences):
        if _IF_NOT.search(sentence):
            rest = [c for s in sentences[index + 1:] for c in re.split(r"[，,]\s*", s)
                    if DATE_WORD.search(c) or _ASKING.search(c)]
            return clause(rest[0], 30) if rest else ""
    return ""


def _new_time(text: str, anchor: datetime | None, lang: str) -> str:
    """The new date and time of a rescheduled matter: the first date after "改到" / "moved … to"."""
    marker = _TO_NEW.search(text)
    if anchor is None or marker is None:
        return ""
    dates = find_dates(text, anchor)
    after = [m for m in dates if marker.start() <= m.start <= marker.end() + 40]
    if after:
        return day_of(after[0].at, anchor, lang)
    clock = _CLOCK.search(text[marker.end():marker.end() + 24])
    if clock and dates:  # "New departure: 10:30" on the day the message names first
        return f"{day_of(dates[0].at, anchor, lang).split(' ')[0] if lang == 'zh' else ' '.join(day_of(dates[0].at, anchor, lang).split(' ')[:2])} {clock.group(1)}"
    return ""


_WHERE = re.compile(r"staging|pre-?prod(?:uction)?|测试环境|预发(?:环境)?|灰度|sandbox|test environment", re.IGNORECASE)
_CLOCK = re.compile(r"(\d{1,2}[:：]\d{2}|\d{1,2}\s*点(?:半|\d{1,2}分?)?)")
# "No action is needed if the new time suits you" / "如无异议无需操作": not needed *unless* — the step names the
# other branch (the sentence after it that has a date or asks), so the reader knows when it would matter.
_IF_NOT = re.compile(r"no action (?:is )?(?:needed|required) (?:if|unless)|unless you|无需(?:任何)?操作[，,]?(?:如|若)|如无异议"
                     r"|如未[^。；\n]{1,20}则|若未[^。；\n]{1,20}则|如(?:需|要)(?:更改|变更|退票|退款|取消)", re.IGNORECASE)


def _score(sentence: str) -> int:
    score = 2 * bool(AMOUNT.search(sentence)) + 2 * any(p.search(sentence) for p, _, _ in STATE_PATTERNS)
    score += bool(re.search(r"\d{1,2}\s*[月日号:]|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\s+\d|"
                            r"\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|"
                            r"周[一二三四五六日]|明天|tomorrow|today|\bby\b|due", sentence, re.IGNORECASE))
    return score


def read_facts(event: Mapping[str, Any], body: str, now: datetime | None = None) -> Facts:
    """The facts of one message; ``body`` is its own words (quoted history left out); ``now`` reads its dates
    when the message has no date of its own."""
    title = str(event.get("title") or "")
    text = f"{title}\n{body[:1500]}"
    lang = source_language(title, body[:300])
    sentences = _sentences(body[:1500])
    ranked = sorted(range(len(sentences)), key=lambda i: (-_score(sentences[i]), i))
    key = sentences[ranked[0]] if ranked and _score(sentences[ranked[0]]) > 0 else (sentences[0] if sentences else "")
    state = ""
    for pattern, zh, en in STATE_PATTERNS:
        if any(not _NEGATED.search(text[max(0, m.start() - 8):m.start()]) for m in pattern.finditer(text)):
            state = zh if lang == "zh" else en
            break
    return Facts(lang=lang, topic=_topic(title), who=_who(str(event.get("from") or "")), amount=_amount(text),
                 bill=bool(BILL.search(text)), autopay_off=bool(AUTOPAY_OFF.search(text)), state=state,
                 key=key, key_first=bool(sentences) and key == sentences[0],
                 open_part=next((s.rstrip("。.;；") for s in sentences if _OPEN.search(s) and s != key), ""),
                 person=str(event.get("channel") or "") == "email",
                 ask=_ask(sentences),
                 otherwise=_otherwise(sentences),
                 where=next((m.group(0) for m in _WHERE.finditer(text)), ""),
                 new_time=_new_time(text, parse_instant(event.get("at")) or now, lang) if state in ("改期", "rescheduled") else "")


def about(facts: Facts, ident: str, body: str) -> Facts:
    """The facts of a message that escalates something named (``ident``: a CVE, a ticket): the identifier is
    the topic, with what the message says it is in brackets right after it ("CVE-2026-41234（远程代码执行）"),
    and the ask is the next step."""
    at = body.find(ident)
    after = re.match(r"\s*([（(][^）)\n]{1,24}[）)])", body[at + len(ident):]) if at >= 0 else None
    named = f"{ident}{after.group(0).rstrip()}" if after else ident
    return replace(facts, topic=ident, key=named, key_first=False, state="")


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def day_of(instant: datetime | None, now: datetime | None, lang: str) -> str:
    """A due day in the offset of ``now``: "11月12日" / "Nov 12" (the time when it is not the end of day)."""
    if instant is None:
        return ""
    local = instant.astimezone(now.tzinfo) if now is not None else instant
    hm = "" if (local.hour, local.minute) in ((23, 59), (0, 0)) else local.strftime(" %H:%M")
    return f"{local.month}月{local.day}日{hm}" if lang == "zh" else f"{_MONTHS[local.month - 1]} {local.day}{hm}"


DATE_WORD = re.compile(r"\d{1,2}\s*[月日号]|\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|\bbefore\b|周[一二三四五六日末]|星期|明天|今天|本周|下周|月底|\bby\b|\bdue\b|tomorrow|today"
                        r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday", re.IGNORECASE)


def head_cut(text: str, limit: int) -> str:
    """A title head in ``limit`` code points: at a clause, else (English) at a word, else cut with "…"."""
    if len(text) <= limit:
        return text
    short = title_line(text, limit)
    if not short.endswith("…"):
        return short
    head = text[:limit + 1]
    if " " in head[limit // 3:]:
        cut = head[:head.rindex(" ")].rstrip(" :：-–,，")
        return _DANGLING.sub("", cut).rstrip(" :：-–,，") or cut  # "Senior engineer role", not "… role in"
    return short


# Status facts that age: what they say is true only for a while (a parcel moves on, a build finishes).
_AGEING = ((re.compile(r"运输中|派送中|已发货|已揽收|配送中|in transit|out for delivery|shipped|on its way", re.IGNORECASE), 48),
           (re.compile(r"构建中|部署中|运行中|排队中|审核中|处理中|building|deploying|running|queued|pending review"
                       r"|under review|processing", re.IGNORECASE), 24))


def ageing_hours(text: str) -> int | None:
    """Hours after which an in-progress status read in ``text`` is worth re-checking, or None."""
    for pattern, hours in _AGEING:
        if pattern.search(text):
            return hours
    return None
