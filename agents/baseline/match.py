"""Same matter without a shared thread: identifiers and topic words (the baseline editor's matching).

A forwarded mail, a re-sent notice, a returned expense or part two of an
article has no thread in common with the item it belongs to. ``Matter`` holds
what identifies a matter in a text:

* identifiers — letter-and-digit codes and numbers of three digits or more
  ("VS2026-104417", "MU5101", "#128", "3310048812"), not years, dates,
  times, decimals or percentages; and amounts of money ("6,500.00 元",
  "¥3,482.16": four digits or more, or cents);
* topic — Chinese character pairs and English words of four letters or more,
  without common function words.

``same_matter`` says yes when the two share an identifier, or when they have
no conflicting identifiers and the event carries at least two of the item's
topic terms and half of them, and the event's title shares half of its own —
or the message carries every topic term of the item's title. ``news_in`` says whether an event brings a
number (a time, an amount, a count) that the item does not already state: a
forward or a re-send without one is a duplicate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Matter", "advances", "matter_of", "news_in", "resent", "same_matter"]

_ID = re.compile(r"(?<![\w.,:/-])#?([A-Za-z]{0,8}-?\d[\dA-Za-z-]{2,})(?![\w%]|[.,:]\d)")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
# An amount of money names a matter too ("6,500.00 元", "¥3,482.16", "EUR 1,450"): four digits or more, or cents.
_AMOUNT = re.compile(r"(?:[¥￥$€£]|\b(?:rmb|cny|usd|eur|gbp)\s?)\s*(\d{1,3}(?:,\d{3})+|\d+)(\.\d{1,2})?"
                     r"|(\d{1,3}(?:,\d{3})+|\d+)(\.\d{1,2})?\s*(?:元|块|(?:rmb|cny|usd|eur|gbp)\b)", re.IGNORECASE)
_CJK_RUN = re.compile(r"[\u3400-\u9fff]{2,}")
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
_STOP_BIGRAMS = frozenset(
    "我们 你们 您的 你的 我的 请于 请在 已经 提醒 通知 邮件 您好 你好 谢谢 感谢 如下 以下 以上 可以 需要 是否 如果 因为 所以 但是 "
    "还是 或者 以及 进行 相关 有关 关于 这个 那个 一个 今天 明天 时间 日期 附件 回复 转发 系统 自动 发送 请勿 直接 先生 女士 尊敬 "
    "客户 用户 您于 已于 中心 服务 处理 确认 提交 完成 日前 号前 之前 以前 截止 前处 前交 前提 前回 前完 前发 前给 事项 "
    "项请".split())  # the words of any deadline ("12 日前处理") name no matter
_STOP_WORDS = frozenset(
    "this that with from your have will been about there their would could should please thanks regards dear "
    "hello here what when which while into also only just more some than then them they were what your yours "
    "note update reminder notice email message sent reply forward today tomorrow week".split())


@dataclass(frozen=True)
class Matter:
    keys: frozenset[str]
    topic: frozenset[str]
    amounts: frozenset[str] = frozenset()  # a shared amount names the same matter; different ones do not conflict


def matter_of(*texts: str | None) -> Matter:
    """The identifiers and topic terms of some texts (a title first, then a summary or a body)."""
    keys: set[str] = set()
    topic: set[str] = set()
    amounts: set[str] = set()
    for text in texts:
        if not text:
            continue
        for found in _ID.findall(text):
            key = found.lower().lstrip("#")
            digits = sum(ch.isdigit() for ch in key)
            if digits >= 3 and not re.fullmatch(r"(?:19|20)\d\d", key) and not re.fullmatch(r"\d{4}-\d{1,2}(?:-\d{1,2})?",
                                                                                          key):
                keys.add(key)
        for found in _AMOUNT.finditer(text):
            whole, cents = (found.group(1), found.group(2)) if found.group(1) else (found.group(3), found.group(4))
            digits = whole.replace(",", "")
            if len(digits) >= 4 or (cents and cents.strip(".0")):
                amounts.add(f"{int(digits)}{cents if cents and cents.strip('.0') else ''}")
        for run in _CJK_RUN.findall(text):
            topic.update(run[i:i + 2] for i in range(len(run) - 1) if run[i:i + 2] not in _STOP_BIGRAMS)
        for word in _EN_WORD.findall(text):
            # a slug's parts are words too ("sync-benchmark" is about a sync benchmark)
            for part in [word, *word.split("-")] if "-" in word else [word]:
                if len(part) >= 4 and part.lower() not in _STOP_WORDS:
                    topic.add(part.lower())
    return Matter(frozenset(keys), frozenset(topic), frozenset(amounts))


def same_matter(event: Matter, item: Matter, title: Matter | None = None) -> bool:
    """Whether an event's matter is the item's (see the module text); ``title``: the event title's own terms,
    half of which the item must share too (two different "weekly status" mails are different matters)."""
    if event.keys & item.keys or event.amounts & item.amounts:
        return True
    if event.keys and item.keys:
        return False  # both name their objects, and the names differ
    shared = event.topic & item.topic
    if len(shared) < 2:
        return False
    if shared == item.topic:
        return True  # every term of the item's title is in the message ("9月差旅报销" in "…9 月差旅报销单被退回")
    return 2 * len(shared) >= len(item.topic) and (title is None or 2 * len(title.topic & item.topic)
                                                   >= len(title.topic))


def advances(event_title: str, item_text: str) -> bool:
    """Whether a message titled ``event_title`` brings what an open item waits for: the title shares three
    topic terms or more with the item's words ("近六个月账户流水已生成" and a visa item asking for "近六个月
    的银行流水"), or an identifier."""
    event, item = matter_of(event_title), matter_of(item_text)
    return bool(event.keys & item.keys) or len(event.topic & item.topic) >= 3


def news_in(event_text: str, item_text: str) -> bool:
    """Whether the event states a number the item's text does not (a new time, amount or count)."""
    known = {n.lstrip("0") or "0" for n in _NUMBER.findall(item_text)}
    return any((n.lstrip("0") or "0") not in known for n in _NUMBER.findall(event_text))


_FORWARDED = re.compile(r"^\s*(?:fwd?|fw|转发|wg)\s*[:：]|转发的邮件|forwarded message|begin forwarded message|原始邮件",
                        re.IGNORECASE | re.MULTILINE)


def resent(title: str, own_text: str, item_text: str) -> bool:
    """Whether a message passes on what an item already says: a forward, or a re-send whose own words are
    mostly the item's (a reply in its own words, "回执收到了，费用还没交", is news even without a new number)."""
    if _FORWARDED.search(title) or _FORWARDED.search(own_text):
        return True
    own = matter_of(own_text[:600]).topic
    return bool(own) and 5 * len(own & matter_of(item_text).topic) >= 3 * len(own)
