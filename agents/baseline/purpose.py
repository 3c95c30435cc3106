"""How the user's own words about what matters (``user.purpose`` and ``user.background``) move a message.

"Never miss bills or security problems; newsletters and shipping notices are
low priority" names topics and says which way they go. ``Purpose(user)``
reads the two texts clause by clause: a clause with a raising word (never
miss, must see, important, care about, 别错过, 重要, 务必, 关注) raises the
topics it names, one with a lowering word (low priority, can wait, not
important, 低优先, 不重要, 不用管) lowers them; the lowering word wins in a
clause with both. Topics: bills, security, shipping, newsletters, each a
short list of zh and en words. Senders, too: a clause that names one ("mail
from Li Na", "anything from acme.example", "Li Na's emails", "李老师的邮件",
"来自猎头的消息", "物业发来的通知") with a raising or lowering word moves that
sender's mail; the name is matched against the From header (display name or
address), either contained in the other. ``lean(text, sender)`` gives the
direction for a message from a named sender, else one that names a raised or
lowered topic ("up", "down" or None); the editor moves it one step, up to
``high`` and down to ``low``, and says so in the reason. Noise stays noise.
Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["Purpose"]

_TOPICS = {
    "bills": re.compile(r"账单|缴费|还款|电费|水费|话费|\bbills?\b|invoice|statement|payment due", re.IGNORECASE),
    "security": re.compile(r"安全|漏洞|cve-?|security|vulnerabilit|advisory|breach|sign-in alert|登录提醒", re.IGNORECASE),
    "shipping": re.compile(r"快递|包裹|物流|运单|配送|shipping|parcel|package|deliver|shipment|tracking", re.IGNORECASE),
    "newsletters": re.compile(r"newsletter|周刊|月刊|digest|订阅|资讯", re.IGNORECASE),
}
_LOWER = re.compile(r"low priority|lower priority|can wait|not important|less important|don't care|ignore|低优先|优先级(?:很|较|比较)?低|不重要|"
                    r"不用管|不关心|可以晚点|无所谓", re.IGNORECASE)
_RAISE = re.compile(r"never miss|must see|don't miss|important|care about|priority|别错过|不能错过|不要错过|重要|务必|关注|"
                    r"优先", re.IGNORECASE)
_CLAUSE = re.compile(r"[。；;\n]|(?<=[a-z])\.\s|；")
# Senders a clause names: "mail from Li Na", "anything from acme.example", "Li Na's emails"; "李老师的邮件", "来自猎头的
#消息", "物业发来的通知". A name is matched against the From header (its display name or address) either way round.
_SENDER_EN = re.compile(r"(?i:mails?|emails?|messages?|notes?|anything|everything|newsletters?)\s+(?i:from)\s+(?:the\s+)?"
                        r"([\w.+-]+@[\w.-]+|[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}|[A-Z][\w&'-]*(?:\s+[A-Z][\w&'-]*){0,3})"
                        r"|([A-Z][\w&-]*(?:\s+[A-Z][\w&-]*){0,3})'s\s+(?:mails?|emails?|messages?|notes?)")
_SENDER_ZH = re.compile(r"(?:来自)?([\u4e00-\u9fffA-Za-z·]{2,8}?)(?:的(?:邮件|来信|消息|通知)|发来的)")
_SENDER_CLAUSE = re.compile(r"[。；;\n，,]|(?<=[a-z])\.\s|\s+(?:and|but)\s+")
_NOT_NAMES = frozenset("所有 全部 这些 那些 其他 一般 我 我们 工作 群发 自动 系统 订阅 营销 推销 促销".split())


class Purpose:
    """The topics the user named as mattering more or less."""

    def __init__(self, user: Mapping[str, Any]) -> None:
        self.up: set[str] = set()
        self.down: set[str] = set()
        text = " ".join(str(user.get(k) or "") for k in ("purpose", "background"))
        for clause in _CLAUSE.split(text):
            named = {name for name, pattern in _TOPICS.items() if pattern.search(clause)}
            if not named:
                continue
            if _LOWER.search(clause):
                self.down |= named
            elif _RAISE.search(clause):
                self.up |= named
        self.up -= self.down  # named both ways: the user's lowering word is the more specific
        self.senders: list[tuple[str, str]] = []  # (name, "up" | "down"), in the order named
        for clause in _SENDER_CLAUSE.split(text):  # one sender, one way: finer clauses than the topics'
            way = "down" if _LOWER.search(clause) else ("up" if _RAISE.search(clause) else None)
            if way is None:
                continue
            names = [a or b for a, b in _SENDER_EN.findall(clause)] + _SENDER_ZH.findall(clause)
            for name in names:
                name = re.sub(r"^(?:来自|从)", "", name.strip())
                if len(name) >= 2 and name not in _NOT_NAMES and name.lower() not in ("my", "the", "all"):
                    self.senders.append((name, way))

    def lean(self, text: str, sender: str = "") -> tuple[str, str] | None:
        """("up" | "down", topic) for a message from a sender the user named (topic ``from:<name>``, before any
        topic) or naming a topic the user raised or lowered, else None."""
        said = sender.casefold()
        display = said.split("<", 1)[0].strip().strip('"\' ')
        for name, way in self.senders:
            wanted = name.casefold()
            if wanted in said or (len(display) >= 2 and display in wanted):
                return way, f"from:{name}"
        for name in sorted(self.up):
            if _TOPICS[name].search(text):
                return "up", name
        for name in sorted(self.down):
            if _TOPICS[name].search(text):
                return "down", name
        return None
