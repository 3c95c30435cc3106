"""How the user's own words about what matters (``user.purpose`` and ``user.background``) move a message.

"Never miss bills or security problems; newsletters and shipping notices are
low priority" names topics and says which way they go. ``Purpose(user)``
reads the two texts clause by clause: a clause with a raising word (never
miss, must see, important, care about, 别错过, 重要, 务必, 关注) raises the
topics it names, one with a lowering word (low priority, can wait, not
important, 低优先, 不重要, 不用管) lowers them; the lowering word wins in a
clause with both. Topics: bills, security, shipping, newsletters, each a
short list of zh and en words. ``lean(text)`` gives the direction for a
message that names a raised or lowered topic ("up", "down" or None); the
editor moves it one step, up to ``high`` and down to ``low``, and says so in
the reason. Noise stays noise. Pure.
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
_LOWER = re.compile(r"low priority|lower priority|can wait|not important|less important|don't care|ignore|低优先|不重要|"
                    r"不用管|不关心|可以晚点|无所谓", re.IGNORECASE)
_RAISE = re.compile(r"never miss|must see|don't miss|important|care about|priority|别错过|不能错过|不要错过|重要|务必|关注|"
                    r"优先", re.IGNORECASE)
_CLAUSE = re.compile(r"[。；;\n]|(?<=[a-z])\.\s|；")


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

    def lean(self, text: str) -> tuple[str, str] | None:
        """("up" | "down", topic) for a message naming a topic the user raised or lowered, else None."""
        for name in sorted(self.up):
            if _TOPICS[name].search(text):
                return "up", name
        for name in sorted(self.down):
            if _TOPICS[name].search(text):
                return "down", name
        return None
