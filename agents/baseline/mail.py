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
from fold_agents.baseline.dates import Mention, find_dates
from fold_agents.baseline.facts import AUTOPAY_OFF, BILL, PAID, PARCEL_PHISHING, PAY_PENDING, SALES, SALES_PITCH, SALES_STRONG
from fold_agents.baseline import terms

__all__ = ["Reading", "Verdict", "judge", "own_words", "plain_claims", "read_message"]

WEIGHTS = ("critical", "high", "normal", "low", "trace")
READ_LIMIT = 1200  # code points of a message's own words read: requests, dates and signs come early


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
    bill: bool = False  # a bill or statement to pay (not one already paid)


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
    may say "已修复" of a fix seen on staging only; the item must not."""
    for claim, plain in _CLAIMS:
        text = text.replace(claim, plain)
    return _EN_CLAIMS.sub(lambda m: _EN_PLAIN[m.group(1).lower()] + " seen", text)


def own_words(text: str) -> str:
    """The message's own words: quoted lines (``>``) and the quoted history after "On … wrote:" left out."""
    if ">" in text:
        text = "\n".join(line for line in text.split("\n") if not line.lstrip().startswith(">"))
    found = terms.QUOTE_START.search(text)
    return text[:found.start()] if found and found.start() > 0 else text


def read_message(event: Mapping[str, Any], *, now: str | None, user: Mapping[str, Any] | None = None) -> Reading:
    """The ``Reading`` of one observation at ``now`` for this user."""
    title = str(event.get("title") or "")[:300]
    body = own_words(str(event.get("text") or ""))[:READ_LIMIT]
    # A reply's subject is the thread's: its request was the first message's, not this one's.
    original = body if terms.REPLY.match(title) else f"{title}\n{body}"
    text, low_title, low_body = original.lower(), title.lower(), body.lower()
    given = event.get("meta")
    meta: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    channel = str(event.get("channel") or "")
    sender = _sender(channel, str(event.get("from") or ""), meta, low_title, low_body)
    asks = bool(terms.ASK.search(text) or terms.SOFT_ASK.search(text)) and not terms.NO_ACTION.search(text)
    promotion_score = 2 * bool(terms.PROMO_STRONG.search(low_title)) + 2 * len(terms.PROMO_STRONG.found(low_body))
    promotion_score += len(terms.PROMO_WEAK.found(text)) + (sender == "bulk")
    promotion = promotion_score >= 3 or (promotion_score >= 2 and not asks)
    phishing = bool(terms.PHISHING.search(text) or PARCEL_PHISHING.search(text))
    # A cold sales follow-up is a promotion whatever urgency it claims; a sales word in a reply to the
    # user's own thread is not: one sales phrase is not enough, two or a strong one (a demo, last seats) are.
    promotion = promotion or bool(SALES_STRONG.search(text)) or (
        len({m.group(0) for m in SALES.finditer(text)}) >= 2 and bool(SALES_PITCH.search(text)))
    if promotion or phishing or sender == "bulk":
        return Reading(channel, sender, False, promotion, phishing)
    moment = parse_instant(now) if now else None
    background = " ".join(str((user or {}).get(k) or "") for k in ("background", "purpose")).lower()
    # "you cancelled your direct debit" names autopay only to say it is off: the bill is the user's to pay.
    autopay_off = bool(AUTOPAY_OFF.search(text))
    autopay, pay_failed = bool(terms.AUTOPAY.search(text)) and not autopay_off, bool(terms.PAY_FAILED.search(text))
    bill = bool(BILL.search(text)) and not PAID.search(text) and not PAY_PENDING.search(text) and \
        sender not in ("feed", "worklog")
    asks = asks or (bill and autopay_off)  # "no action needed if you pay by direct debit" no longer holds
    failure, production = bool(terms.FAILURE.search(text)), bool(terms.PRODUCTION.search(text))
    staging = bool(terms.STAGING.search(text))
    return Reading(
        channel, sender, sender in ("person", "automated", "worklog") and not terms.GENERIC_GREETING.search(low_body[:200]),
        promotion, phishing, asks=asks and (not autopay or pay_failed), asks_you=asks and bool(terms.ASKS_YOU.search(text)),
        soft=bool(terms.SOFT_ASK.search(text)), result=bool(terms.RESULT.search(text)), waiting=bool(terms.WAITING.search(text)),
        partial=bool(terms.PARTIAL.search(text)) or _staging_only(text, staging),
        failure=failure, production=production, staging=staging,
        autopay=autopay, pay_failed=pay_failed, consequence=bool(terms.CONSEQUENCE.search(text)),
        urgent=bool(terms.URGENT.search(text)), question=sender == "person" and bool(terms.QUESTION.search(body)),
        due=_deadline(original, event, moment) if moment else None, now=moment, sent=parse_instant(event.get("at")),
        incident=failure and not pay_failed and bool(terms.INCIDENT.search(text) or production or staging)
        and not (terms.RESULT.search(text) or terms.PARTIAL.search(text)),  # a fix reported is progress, not an alert
        duty=_duty(background), impact=bool(terms.IMPACT.search(text)), bill=bill)


def _staging_only(text: str, staging: bool) -> bool:
    """A result seen on a test or pre-production environment, production not said to be done: still going."""
    return staging and bool(terms.RESULT.search(text)) and not terms.PROD_DONE.search(text)


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
            + bool(terms.NEWSLETTER.search(body)) + 2 * bool(terms.NEWSLETTER.search(title)))
    text = f"{title}\n{body}"  # both lower-cased by the caller
    if bulk >= 2 and not terms.ASKS_YOU.search(text):
        return "bulk"
    if meta.get("auto_submitted") or terms.AUTOMATED_LOCAL.match(address) or terms.AUTOMATED_TEXT.search(text) or bulk >= 2:
        return "automated"
    recipients = [str(r).lower() for r in list(meta.get("to") or ()) + list(meta.get("cc") or ())]
    if len(recipients) > 3 or any(terms.GROUP_LOCAL.match(r.rsplit("<", 1)[-1].strip(" >")) for r in recipients[:1]) \
            or terms.GROUP_GREETING.match(body):
        return "group"
    return "person"


_CLAUSE = re.compile(r"[，。,;；\n]|\.(?:\s|$)")
_MINE = re.compile(r"我|\b(?:i|i'm|i am|my|me)\b")
_SOMEONE_ELSE = re.compile(r"由[^，。,；;]{1,12}(?:值班|负责)|值班(?:的|人|人员)?(?:是|为)|\bcovers?\b|\bcovering\b")


def _duty(background: str) -> str | None:
    """"on" when the user's background says they are on duty, "leave" when they are on leave or someone else
    is on duty; read clause by clause (who is on duty in each); the user's own leave wins."""
    clauses = [c for c in _CLAUSE.split(background) if c.strip()]
    anyone_named = any(_MINE.search(c) for c in clauses)
    leave = on = other = False
    for clause in clauses:
        if terms.ON_LEAVE.search(clause):
            leave = leave or bool(_MINE.search(clause)) or not anyone_named
        elif terms.ON_DUTY.search(clause):
            if _SOMEONE_ELSE.search(clause) or (anyone_named and not _MINE.search(clause)):
                other = True
            else:
                on = True
    if leave or (other and not on):
        return "leave"
    return "on" if on else None


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
    return bool(terms.ASK.search(text[start:min(ends) if ends else len(text)].lower()))


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
    if r.bill and not r.autopay and not r.pay_failed and not r.partial and (r.due is not None or r.asks):
        return _bill(r, due_at)
    if r.asks and not r.partial and r.sender != "feed":
        return _request(r, due_at)
    local = r.addressed or r.sender == "worklog"  # "尊敬的客户" is not written to the user personally
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
        # The user's own submission or payment came back: theirs to fix, whoever sent the notice.
        weight = "high" if personal or r.asks_you or (r.pay_failed and r.addressed) else "normal"
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


def _bill(r: Reading, due_at: str | None) -> Verdict:
    """A bill without autopay is the user's to pay: at least high, with its due date."""
    weight = _request(r, due_at).weight  # time left, urgency and consequences as for any request
    return Verdict(False, "high" if weight in ("normal", "low", "trace") else weight, "needs-you", "bill", True, due_at)


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
