"""The title and summary the baseline editor writes from a message's facts (``baseline_facts``).

``write(facts, rule, kind, due_at, now)`` composes the title (≤ 24 code
points: who or what, the state, number or new time, the due day) and the
summary (≤ 60: the current fact, then the next step or what is unknown —
"金额未知" / "amount unknown" for a bill without an amount), in the source's
language. A bill's title is the longest form of issuer, amount and due day
that fits. Pure: no clock, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime

from fold_core.timefmt import parse_instant
from fold_agents.baseline.facts import DATE_WORD, STATE_PATTERNS, Facts, clause, day_of, head_cut, question
from fold_agents.baseline.rules import clean, line, title_line

__all__ = ["write"]


_NEXT = {
    "zh": {"bill": "请在{due}前缴费", "bill_nodue": "截止日未知，请查看后缴费", "autopay": "将自动扣款，留意扣款结果",
           "due": "请在{due}前处理", "ask": "需要你处理或答复", "partial": "其余范围尚未验证", "waiting": "等待结果",
           "done": "无需操作", "fyi": "仅供知悉", "failure": "需查看失败原因", "incident": "需要处理",
           "unknown_amount": "金额未知", "bill_word": "账单", "due_word": "{due}到期"},
    "en": {"bill": "pay by {due}", "bill_nodue": "due date unknown; check and pay", "autopay": "autopay will pay it",
           "due": "act by {due}", "ask": "needs your reply or action", "partial": "the rest is not yet verified",
           "waiting": "waiting for the outcome", "done": "no action needed", "fyi": "for your information",
           "failure": "check why it failed", "incident": "needs handling",
           "unknown_amount": "amount unknown", "bill_word": "bill", "due_word": "due {due}"},
}


def _next(facts: Facts, rule: str, kind: str, due: str) -> str:
    words = _NEXT[facts.lang]
    if facts.bill and kind == "needs-you":
        return words["bill"].format(due=due) if due else words["bill_nodue"]
    if rule == "autopay":
        return words["autopay"]
    if kind == "needs-you":
        return words["due"].format(due=due) if due else (words["incident"] if rule in ("incident", "on_duty")
                                                           else words["ask"])
    if rule == "partial":
        return words["partial"]
    if kind == "in-progress":
        return words["waiting"]
    if rule == "failure":
        return words["failure"]
    return words["done"] if kind == "done" else words["fyi"]


def _join(lang: str, *parts: str) -> str:
    kept = [p.rstrip("。.;；，, ") for p in parts if p and p.strip()]
    return ("，" if lang == "zh" else ", ").join(kept)


def write(facts: Facts, rule: str, kind: str, due_at: str | None, now: datetime | None) -> tuple[str, str]:
    """(title ≤ 24, summary ≤ 60) in the source's language, from the facts and the verdict's rule and kind."""
    lang, words = facts.lang, _NEXT[facts.lang]
    due = day_of(parse_instant(due_at) if due_at else None, now, lang)
    step = _next(facts, rule, kind, due)
    sep = "：" if lang == "zh" else ": "
    if facts.bill and rule not in ("result",) and facts.state not in ("已付款", "paid"):
        return _bill(facts, due, step)
    if facts.bill and facts.state in ("已付款", "paid") and (facts.who or facts.amount):
        return _paid(facts, step)
    if kind == "needs-you" and facts.key and DATE_WORD.search(facts.key) and due:
        step = "待你处理" if lang == "zh" else "yours to do"  # the key sentence already says by when
    elif kind == "needs-you" and facts.ask and (not due or DATE_WORD.search(facts.ask)):  # the ask says by when
        step = question(facts.ask, 30, lang)  # what is asked, in the source's own words
    if rule == "partial" and facts.open_part:
        step = clause(facts.open_part, 40)  # what is still unverified, in the source's own words
    if rule == "partial" and facts.where:  # what the check covered, so the reader knows what it did not
        checked = f"仅在{facts.where}验证" if lang == "zh" else f"Verified on {facts.where} only"
        if lang == "en" and len(checked) + len(step) + 3 > 60:
            checked = f"{facts.where[:1].upper()}{facts.where[1:]} only"
        facts = replace(facts, key=checked, key_first=False)
    topic = facts.topic or facts.key
    extra = facts.state if facts.state and not _said(facts.state, topic) else ""
    if facts.new_time:  # a rescheduled matter: its identifier (flight, meeting) and the new time
        ident = _IDENT.search(topic)
        topic = ident.group(0) if ident else re.sub(_MOVED_END, "",
                                                     DATE_WORD.split(topic)[0].rstrip(" ,，:：-")).rstrip(" ,，:：-")
        extra = f"改到{facts.new_time}" if lang == "zh" else f"now {facts.new_time}"
        sep = "" if lang == "zh" else " "
    if not extra and facts.amount and facts.amount not in topic:
        extra = facts.amount
    if not extra and due and kind == "needs-you" and not DATE_WORD.search(title_line(topic, 24)):
        extra = (f"{due}前" if lang == "zh" else f"by {due}")
    if rule == "partial":  # a check that covered part: whatever result it names, the matter is partly verified
        extra = "部分验证" if lang == "zh" else "partial"
    title = _fit(24, topic, extra, sep=sep) if topic else line(facts.who, 24)
    ident = _IDENT.search(topic)
    if ident and ident.group(0) not in title and len(ident.group(0)) >= 5 and re.search(r"[A-Za-z]", ident.group(0)):
        # the cut lost a named identifier (CVE-…, MU5101): it is the fact
        rest = re.sub(r"\s+(?:in|on|for|of|to|at|的)$", "", head_cut(topic[ident.start():], 24 - len(sep) - len(extra)))
        rest = rest.rstrip(" )）]】,，:：")
        title = line(f"{rest}{sep}{extra}" if extra else rest, 24)
    if kind in ("fyi", "done", "in-progress") and facts.otherwise:
        step = (f"如需变更：{facts.otherwise}" if lang == "zh" else f"to change: {facts.otherwise}")
    fact = facts.key if facts.key else topic
    if facts.new_time:  # a rescheduled matter: the new time is the fact
        fact = _fit(40, topic, extra, sep=sep)
        facts = replace(facts, key_first=False)
    if step and facts.ask and facts.ask in fact and step == question(facts.ask, 30, lang):
        fact = fact.replace(facts.ask, "").strip("，, 。.")  # the ask is said once, as the step
    room = 56 - len(step)
    lead = facts.who if facts.who and facts.who not in fact and facts.person else _LEAD[lang].get(kind, "")
    if facts.key_first and lead:  # who said it (or what it is), so the summary is not the mail's opening words
        colon = "：" if lang == "zh" else ": "
        fact = f"{lead}{colon}{fact}" if len(lead) + len(fact) + 2 <= room or lead != facts.who else \
            f"{_LEAD[lang].get(kind, '')}{colon}{fact}"
    if lead and fact.startswith(f"{lead}：" if lang == "zh" else f"{lead}: ") and step.casefold() in (
            lead.casefold(), "yours to do"):
        step = ""  # "待你处理：…；待你处理。" says it twice
    return title, _summary(fact, step, lang, 60)


_IDENT = re.compile(r"\bCVE-\d{4}-\d{4,}|\b[A-Z]{1,4}[- ]?\d{2,6}\b|#\d{2,}|[A-Z]{2,}-\d+")
_LEAD = {"zh": {"needs-you": "待你处理", "in-progress": "进展", "done": "结果", "fyi": "动态"},
         "en": {"needs-you": "For you", "in-progress": "Progress", "done": "Result", "fyi": "Note"}}


_MOVED_END = r"(?:(?:时间)?(?:调整|变更|改期|延期)|改到|改为|调整到|推迟到|moved to|changed to|(?:time )?change)$"


def _said(state: str, topic: str) -> bool:
    """The topic already says the state (in its own words: "改到" says "改期")."""
    for pattern, zh, en in STATE_PATTERNS:
        if state in (zh, en):
            return bool(pattern.search(topic)) or state.lower() in topic.lower()
    return state.lower() in topic.lower()


def _bill(facts: Facts, due: str, step: str) -> tuple[str, str]:
    """A bill: issuer, amount and due day in the title (the longest form that fits), then pay-by in the summary."""
    zh = facts.lang == "zh"
    who, amount = facts.who, facts.amount
    day = (f"{due}到期" if zh else f"due {due}") if due else ""
    short = (re.sub(r"(?:信用卡|客服|中心|服务|通知)+$", "", who)[:6] if zh else who.split(" ")[0]) if who else ""
    if zh:
        forms = [f"{who}账单{amount}，{day}", f"{who}{amount}，{day}", f"{short}{amount}，{day}", f"{short}{amount}，{due}",
                 f"账单{amount}，{day}", f"{amount}，{day}"]
    else:
        forms = [f"{who} bill {amount} {day}", f"{who} {amount} {day}", f"{who} {amount}, {due}", f"{who} {amount} {due}", f"{short} {amount} {day}",
                 f"{short} {amount}, {due}", f"Bill {amount} {day}", f"{amount} {day}"]
    forms = [" ".join(f.replace("，，", "，").strip("，, ").split()) for f in forms]
    title = next((f for f in forms if len(f) <= 24), line(forms[-1], 24))
    unknown = _NEXT[facts.lang]["unknown_amount"]
    first = (f"{who}账单{amount or '，' + unknown}" if zh else f"{who} bill {amount or '(' + unknown + ')'}").strip()
    if facts.autopay_off:
        first += "，未设自动扣款" if zh else ", autopay off"
    return title, _summary(first, step, facts.lang, 60)


def _paid(facts: Facts, step: str) -> tuple[str, str]:
    """A bill's payment confirmed: who and how much, and that it is paid (never the mail's subject cut off)."""
    zh = facts.lang == "zh"
    who, amount = facts.who, facts.amount
    short = (re.sub(r"(?:信用卡|客服|中心|服务|通知)+$", "", who)[:6] if zh else who.split(" ")[0]) if who else ""
    if zh:
        forms = [f"{who}账单{amount}已付", f"{who}{amount}已付", f"{short}{amount}已付", f"账单{amount}已付"]
        first = f"{who}确认已收到付款{amount}" if who else f"已确认收到付款{amount}"
    else:
        forms = [f"{who} bill {amount} paid", f"{who} {amount} paid", f"{short} {amount} paid", f"Bill {amount} paid"]
        first = f"{who} confirmed the payment {amount}".replace("  ", " ") if who else f"Payment {amount} confirmed"
    forms = [" ".join(f.split()) for f in forms]
    title = next((f for f in forms if len(f) <= 24), line(forms[-1], 24))
    return title, _summary(first, step, facts.lang, 60)


def _fit(limit: int, head: str, *more: str, sep: str = " ") -> str:
    """``head`` and the facts after it in ``limit`` code points: the head is shortened first."""
    tail = " ".join(m for m in more if m)
    if not tail:
        return head_cut(title_line(head, 200), limit)
    room = limit - len(tail) - len(sep)
    if room < 4:
        return line(tail, limit)
    head = head_cut(title_line(head, 200), room).rstrip(" —–-_·:：,，")  # no dangling dash before the facts
    return line(f"{head}{sep}{tail}" if head else tail, limit)


# Steps that say no more than the item's kind: they give way to a fact that would otherwise be cut mid-thought.
_GENERIC = frozenset(_NEXT[lang][key] for lang in ("zh", "en") for key in ("done", "fyi", "ask", "waiting"))


_LEADS = tuple(f"{word}{colon}" for table in _LEAD.values() for word in table.values() for colon in ("：", ": "))


def _shortened(fact: str, room: int, lang: str) -> str:
    """``fact`` in ``room`` code points: whole, else at a clause (a short label such as "Benchmark finished:" given
    up first when what follows it then says more; the lead that says what it is kept), else cut with "…"."""
    if len(fact) <= room:
        return fact
    lead = next((word for word in _LEADS if fact.startswith(word)), "")
    label = re.match(r"^(?:[^：:]{1,24}[：:]\s*)+(?=\S)", fact[len(lead):])
    if label:
        rest = lead + fact[len(lead) + label.end():]
        if len(clause(rest, room, "，,；;")) > len(clause(fact, room, "，,；;")):
            fact = rest  # "Benchmark finished: … is 182 ms": the figures matter more than the label
    if len(fact) <= room:
        return fact
    cut = clause(fact, room, "，,；;")
    if len(cut) >= room // 2 and fact[len(cut):len(cut) + 1] in ("，", ",", "；", ";"):
        return cut  # a whole clause; a cut between words is marked with "…" below
    head = fact[:max(room, 8) - 1]
    if lang == "en" and " " in head[len(head) // 2:]:
        head = head[:head.rindex(" ")]  # not in the middle of a word
    return head.rstrip("。.;；，,:： ") + "…"


def _summary(fact: str, step: str, lang: str, limit: int) -> str:
    """The fact then the next step; the fact is shortened (at a clause) so the step is said — unless the step
    says no more than the item's kind ("no action needed") and the fact would otherwise be cut mid-thought."""
    end = "。" if lang == "zh" else "."
    joiner = "；" if lang == "zh" else "; "
    fact = clean(fact).rstrip("。.;；，,:： ")
    if len(fact) > limit - len(step) - 3:  # a parenthesis is the first thing a short summary can do without
        fact = re.sub(r"\s*[（(][^）)]{0,40}[）)]", "", fact)
        if lang == "en" and len(fact) > limit - len(step) - 3:
            fact = re.sub(r"^(?:your|the|a|an|our)\s+", "", fact, flags=re.IGNORECASE)
            fact = fact[:1].upper() + fact[1:]
    room = limit - len(step) - len(joiner) - len(end)
    alone = _shortened(fact, limit - len(end), lang) if len(fact) > room and step in _GENERIC else ""
    if alone and len(alone) > len(_shortened(fact, room, lang)) + 8:  # it keeps clearly more of the fact
        step, room = "", limit - len(end)  # "no action needed" gives way to the part of the fact it would cut
    fact = _shortened(fact, room, lang)
    if lang == "en" and step[:1].isupper() and step[1:2].islower():
        step = step[0].lower() + step[1:]  # the step continues the sentence
    return line(f"{fact}{joiner}{step}{end}" if fact and step else f"{fact or step}{end}", limit)
