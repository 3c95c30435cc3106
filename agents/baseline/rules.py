"""The baseline editor's text rules: item ids of threads, and safe text (contract §1, §2).

No model, no clock, no randomness: every function here is a pure function of
its arguments, so the same input always gives the same batch. (How a message
is read and weighed is ``baseline_mail``; the sentences the editor writes are
``baseline_words``.)

* ``thread_item_id(event)`` — one item per thread, its id derived from the
  source and the thread key (``^[a-z0-9-]{1,64}$``);
* ``line(text, limit)`` / ``quote(text)`` — untrusted text made valid for a
  title, summary, reason or quote: control and line-break characters become
  spaces, whitespace is collapsed, and an overlong text is cut at a code point
  with "…".
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Any

__all__ = ["WEIGHT_STEPS", "clean", "heavier", "lighter", "lighter_by_one", "line", "quote", "summary_line", "thread_item_id",
           "title_line"]

WEIGHT_STEPS = ("critical", "high", "normal", "low", "trace")
_BREAKING = frozenset({"Cc", "Cs", "Zl", "Zp"})


def clean(text: Any) -> str:
    """One line: control and line-break characters become spaces, whitespace collapsed."""
    if not isinstance(text, str):
        return ""
    if not text.isprintable():
        text = "".join(" " if unicodedata.category(ch) in _BREAKING else ch for ch in text)
    return " ".join(text.split())


def line(text: Any, limit: int) -> str:
    """One line of at most ``limit`` code points ("" when nothing visible is left)."""
    return _cut(clean(text), limit)


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
    cleaned = whole = clean(text)
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
    cleaned = clean(text)
    rest = _GREETING.sub("", cleaned, count=1).lstrip()
    return _cut(rest or cleaned, limit)


def quote(text: Any, limit: int = 120) -> str | None:
    """A short quote of the source's own words, or None."""
    return line(text, limit) or None


def thread_item_id(event: dict) -> str:
    """The item id of the event's thread: ``<source slug>-<10 hex of a hash of source and thread>``."""
    source = str(event.get("source") or event.get("channel") or "item")
    key = str(event.get("thread") or event.get("id") or "")
    slug = re.sub(r"[^a-z0-9]+", "-", source.lower()).strip("-")[:40] or "item"
    digest = hashlib.sha256(f"{source}\n{key}".encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{slug}-{digest}"


def heavier(a: str, b: str) -> str:
    return a if WEIGHT_STEPS.index(a) <= WEIGHT_STEPS.index(b) else b


def lighter(a: str, b: str) -> str:
    return a if WEIGHT_STEPS.index(a) >= WEIGHT_STEPS.index(b) else b


def lighter_by_one(weight: str, floor: str = "low") -> str:
    """One step down, not below ``floor`` (and never up)."""
    index, bottom = WEIGHT_STEPS.index(weight), WEIGHT_STEPS.index(floor)
    return weight if index >= bottom else WEIGHT_STEPS[index + 1]
