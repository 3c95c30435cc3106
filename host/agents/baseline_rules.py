"""The baseline editor's rules: how an observation reads, and safe text (contract §1, §2).

No model, no clock, no randomness: every function here is a pure function of
its arguments, so the same input always gives the same batch.

* ``classify(event)`` — a weight, a kind and a rule name from the
  observation's own words (promotions are noise; urgent words → critical
  needs-you; deadlines and requests for a reply → high needs-you; results →
  done; waiting → in-progress; newsletters → trace fyi; else by channel);
* ``thread_item_id(event)`` — one item per thread, its id derived from the
  source and the thread key (``^[a-z0-9-]{1,64}$``);
* ``line(text, limit)`` / ``quote(text)`` — untrusted text made valid for a
  title, summary, reason or quote: control and line-break characters become
  spaces, whitespace is collapsed, and an overlong text is cut at a code point
  with "…";
* ``Words`` — the few sentences the baseline writes itself, in zh and en.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

__all__ = ["WEIGHT_STEPS", "Verdict", "Words", "classify", "heavier", "lighter_by_one", "line", "quote",
           "summary_line", "thread_item_id", "title_line"]

WEIGHT_STEPS = ("critical", "high", "normal", "low", "trace")
_BREAKING = frozenset({"Cc", "Cs", "Zl", "Zp"})


def _clean(text: Any) -> str:
    if not isinstance(text, str):
        return ""
    if not text.isprintable():
        text = "".join(" " if unicodedata.category(ch) in _BREAKING else ch for ch in text)
    return " ".join(text.split())


def line(text: Any, limit: int) -> str:
    """One line of at most ``limit`` code points ("" when nothing visible is left)."""
    return _cut(_clean(text), limit)


def _cut(cleaned: str, limit: int) -> str:
    """``cleaned`` (one line already) in at most ``limit`` code points, "…" marking a cut."""
    if len(cleaned) <= limit:
        return cleaned
    return cleaned[: limit - 1].rstrip() + "…"


_REPLY_PREFIX = re.compile(r"^(?:(?:re|fwd?|aw|wg)\s*(?:\[\d+\])?\s*[:：]|(?:回复|转发|答复)\s*[:：])\s*",
                           re.IGNORECASE)
_CLAUSE_END = "：:，,；;。—|"


def title_line(text: Any, limit: int) -> str:
    """A title of at most ``limit`` code points: reply/forward prefixes dropped, cut at a clause if too long.

    "签证材料补交通知：请于10月12日前提交近六个月的银行流水" becomes "签证材料补交通知" rather
    than a sentence cut off mid-word; with no clause break early enough it is ``line``.
    """
    cleaned = whole = _clean(text)
    while True:
        shorter = _REPLY_PREFIX.sub("", cleaned, count=1)
        if shorter == cleaned:
            break
        cleaned = shorter
    cleaned = cleaned or whole  # nothing but prefixes: keep them
    if len(cleaned) <= limit:
        return cleaned
    head = cleaned[:limit]
    cut = max(head.rfind(mark) for mark in _CLAUSE_END)
    if cut >= max(4, limit // 3):
        return head[:cut].rstrip()
    return _cut(cleaned, limit)


_GREETING = re.compile(r"^(?:[^。！？!?\n]{0,24}?(?:您好|你好|大家好)[！!，,：:。 ]*"
                       r"|(?:hi|hello|hey|dear)\b[^,:\n]{0,40}[,:]\s*)", re.IGNORECASE)


def summary_line(text: Any, limit: int) -> str:
    """``line`` of a message's text without its opening greeting ("张伟您好：", "Hi Jie,")."""
    cleaned = _clean(text)
    rest = _GREETING.sub("", cleaned, count=1).lstrip()
    return _cut(rest or cleaned, limit)


def quote(text: Any, limit: int = 120) -> str | None:
    """A short quote of the source's own words, or None."""
    return line(text, limit) or None


def _words(*terms: str) -> re.Pattern:
    """Case-insensitive match of any term; ASCII words only at word boundaries."""
    parts = [rf"\b{re.escape(t)}\b" if t.isascii() and t[0].isalnum() else re.escape(t) for t in terms]
    return re.compile("|".join(parts), re.IGNORECASE)


_PROMOTION = _words("促销", "优惠券", "折扣", "团购", "广告", "限时特惠", "秒杀", "抽奖", "领红包", "满减",
                    "coupon", "discount", "promo", "promotion", "% off", "limited time offer", "black friday")
_URGENT = _words("紧急", "加急", "立即", "马上处理", "逾期", "欠费", "最后期限", "最后通知", "停机",
                 "urgent", "asap", "immediately", "overdue", "final notice", "past due")
_NEEDS_YOU = _words("截止", "到期", "期限", "请回复", "请确认", "请审批", "待审批", "需要你", "需要您", "请你", "请您",
                    "请提交", "补交", "缺少", "还缺", "deadline", "due", "please reply", "please confirm",
                    "please review", "action required", "approval needed", "respond by", "rsvp", "needs your")
_DONE = _words("已合并", "已完成", "已发布", "已上线", "已解决", "已送达", "已签收", "已通过",
               "merged", "completed", "resolved", "shipped", "released", "delivered", "succeeded")
_WAITING = _words("进行中", "处理中", "审核中", "等待", "排队", "预计", "in progress", "waiting", "pending",
                  "queued", "under review", "expected", "scheduled")
_NEWSLETTER = _words("newsletter", "digest", "unsubscribe", "周刊", "月刊", "退订", "订阅号", "简报")
_CHANNEL_DEFAULT = {"rss": ("low", "fyi"), "email": ("normal", "fyi"), "worklog": ("normal", "fyi")}


@dataclass(frozen=True)
class Verdict:
    """How the baseline reads one observation."""

    noise: bool
    weight: str
    kind: str
    rule: str
    explicit_kind: bool  # the kind came from the observation's words (not a default)


def classify(event: dict) -> Verdict:
    """Weight, kind and the rule that decided, from the observation's title and text."""
    words = f"{event.get('title') or ''}\n{event.get('text') or ''}"
    meta = event.get("meta") or {}
    if _PROMOTION.search(words):
        return Verdict(True, "trace", "fyi", "promotion", False)
    if _URGENT.search(words):
        return Verdict(False, "critical", "needs-you", "urgent", True)
    if _NEEDS_YOU.search(words):
        return Verdict(False, "high", "needs-you", "request", True)
    if _DONE.search(words):
        return Verdict(False, "normal", "done", "result", True)
    if _WAITING.search(words):
        return Verdict(False, "normal", "in-progress", "waiting", True)
    if _NEWSLETTER.search(words) or any("unsubscribe" in str(key).lower() for key in meta):
        return Verdict(False, "trace", "fyi", "newsletter", False)
    weight, kind = _CHANNEL_DEFAULT.get(event.get("channel"), ("normal", "fyi"))
    return Verdict(False, weight, kind, "default", False)


def thread_item_id(event: dict) -> str:
    """The item id of the event's thread: ``<source slug>-<10 hex of a hash of source and thread>``."""
    source = str(event.get("source") or event.get("channel") or "item")
    key = str(event.get("thread") or event.get("id") or "")
    slug = re.sub(r"[^a-z0-9]+", "-", source.lower()).strip("-")[:40] or "item"
    digest = hashlib.sha256(f"{source}\n{key}".encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{slug}-{digest}"


def heavier(a: str, b: str) -> str:
    return a if WEIGHT_STEPS.index(a) <= WEIGHT_STEPS.index(b) else b


def lighter_by_one(weight: str, floor: str = "low") -> str:
    """One step down, not below ``floor`` (and never up)."""
    index, bottom = WEIGHT_STEPS.index(weight), WEIGHT_STEPS.index(floor)
    return weight if index >= bottom else WEIGHT_STEPS[index + 1]


class Words:
    """The baseline's own sentences (reasons, whys, fallback titles) in zh or en."""

    _TEXT = {
        "zh": {
            "untitled": "（无标题）",
            "rule": {"urgent": "含紧急字样", "request": "含截止或请求回复字样", "result": "含完成字样",
                     "waiting": "含进行中字样", "newsletter": "订阅或简报", "default": "按渠道默认",
                     "promotion": "促销广告"},
            "new": "基线规则：新会话，{rule}。",
            "update": "基线规则：会话有新消息，{rule}。",
            "restore": "基线规则：已撤下事项有新消息，按原 ID 恢复。",
            "noise": "基线规则：{rule}，与用户事项无关。",
            "duplicate": "该事件已在条目来源中。",
            "used": "基线规则：归入条目 {item}。",
            "ack": "用户已阅；基线规则：已阅事项让出注意力。",
            "snooze": "用户要求稍后提醒{until}；基线规则：降为 low，届时再提起。",
            "decide": "用户决定：{value}",
            "input": "用户提供：{value}",
            "act": "用户报告已处理：{value}",
            "feedback_reason": "基线规则：用户反馈（{meaning}）。",
            "reminder": "到点提醒：用户要求此刻再关注该事项。",
            "target_gone": "反馈针对的条目 {item} 不在当前状态中，暂缓。",
            "withdraw_budget": "预算不足：基线规则撤下本层排名最低的条目，为新内容让位。",
            "demote_budget": "预算不足：基线规则降为 trace。",
            "budget_deferred": "本层预算已满，留待下一轮。",
            "fallback": "基线回退：上次批次被拒（{codes}），本轮只做最小批次。",
            "checked": "复核：无新事件，无业务变化。",
        },
        "en": {
            "untitled": "(untitled)",
            "rule": {"urgent": "urgent wording", "request": "a deadline or a request for a reply",
                     "result": "a reported result", "waiting": "something in progress",
                     "newsletter": "a newsletter or digest", "default": "the channel's default",
                     "promotion": "a promotion"},
            "new": "Baseline rule: a new thread, {rule}.",
            "update": "Baseline rule: a new message in the thread, {rule}.",
            "restore": "Baseline rule: a withdrawn matter has a new message; restored under its old id.",
            "noise": "Baseline rule: {rule}, unrelated to the user's matters.",
            "duplicate": "This event is already among the item's sources.",
            "used": "Baseline rule: filed under item {item}.",
            "ack": "The user acknowledged it; baseline rule: acknowledged items make room.",
            "snooze": "The user asked to be reminded later{until}; baseline rule: lowered to low until then.",
            "decide": "User decided: {value}",
            "input": "User input: {value}",
            "act": "User reports done: {value}",
            "feedback_reason": "Baseline rule: user feedback ({meaning}).",
            "reminder": "Reminder: the user asked to look at this matter again now.",
            "target_gone": "The feedback's item {item} is not in the current state; deferred.",
            "withdraw_budget": "Over budget: the baseline withdraws the layer's lowest-ranked item to make room.",
            "demote_budget": "Over budget: the baseline lowers it to trace.",
            "budget_deferred": "The layer's budget is full; left for a later round.",
            "fallback": "Baseline fallback: the last batch was rejected ({codes}); a minimal batch this time.",
            "checked": "Review: no new events, no business change.",
        },
    }

    def __init__(self, lang: str) -> None:
        self.lang = lang if lang in self._TEXT else "en"
        self._table = self._TEXT[self.lang]

    def rule(self, name: str) -> str:
        return self._table["rule"][name]

    def __call__(self, key: str, limit: int = 200, **values: Any) -> str:
        """The sentence ``key`` with ``values`` (cleaned) filled in, cut to ``limit`` code points."""
        filled = self._table[key].format(**{k: _clean(str(v)) for k, v in values.items()})
        return line(filled, limit)
