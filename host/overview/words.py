"""The overview's words in ``[host] language``, and a card's lines said in them.

``CATALOG`` holds the Chinese of the overview page's labels (its header,
legend, layer titles, details) and of the boxes' words the Pinboard shares;
``card_line`` says a card's line (its head's weight and kind, its time
words, the recommended option of a decision) in a ``Words``' language.
"""

from __future__ import annotations

import re

from fold_host.overview.layout import KINDS, WEIGHTS

__all__ = ["CATALOG", "card_line"]

CATALOG = {"zh": {
    "Fold overview": "Fold 总览", "revision {revision} · event {event_seq} · now {now} · budget {budget} per layer":
        "修订 {revision} · 事件 {event_seq} · 现在 {now} · 每层预算 {budget}",
    "scope:": "范围：", "children of {id}": "{id} 的子层", "root layer": "根层", "depth {depth}": "深度 {depth}",
    "weight ≥ {weight}": "权重 ≥ {weight}", "kinds {kinds}": "类型 {kinds}",
    "changes since event {event_seq}": "自事件 {event_seq} 以来的变化", "{count} not shown": "{count} 个未显示",
    "not shown (filtered)": "未显示（被筛选）", "free budget (blank)": "空余预算（空白）",
    "border: critical ▮▮▮ high ▮▮ normal ▮ low ╌ trace ┈": "边框：紧急 ▮▮▮ 高 ▮▮ 普通 ▮ 低 ╌ 痕迹 ┈",
    "new": "新", "changed": "已变", "overdue": "逾期", "stale": "过时",
    "text does not fit: see details": "文字放不下：见详情",
    "Card area = layer area × share / {budget}; each children layer is its own rectangle at its own scale.":
        "卡片面积 = 层面积 × 份额 / {budget}；每个子层是按自己比例画的一个矩形。",
    "Root layer": "根层", "Children of": "子层：", "used {used}/{budget} · free {free}": "已用 {used}/{budget} · 空余 {free}",
    "not shown {share}": "未显示 {share}", "not shown:": "未显示：",
    "Withdrawn or merged since event {event_seq} (outside the budget, same scale)":
        "自事件 {event_seq} 以来撤下或合并的（在预算之外，同一比例）",
    "Details of cards whose text does not fit": "文字放不下的卡片详情",
    "not shown": "未显示", "{count} items": "{count} 个条目", "1 item": "1 个条目", "{count} children": "{count} 个子条目",
    "(not drawn)": "（未画出）", "overdue {d}": "已逾期 {d}", "due in {d}": "{d} 后截止", "stale {d} ago": "已过时 {d}",
    "recommended: {label}": "推荐：{label}",
}}

_TIMES = re.compile(r"^(?:(overdue|due in|stale in|age) (\S+)|stale (\S+) ago)$")  # the time words of a card


def card_line(words):
    """A card's line in the page's language: the weight and kind of its head, the words of its times."""
    vocabulary = frozenset(WEIGHTS) | frozenset(KINDS)
    templates = {"overdue": "overdue {d}", "due in": "due in {d}", "stale in": "stale in {d}"}

    def time(part: str) -> str:
        found = _TIMES.match(part)
        if found is None:
            return part
        if found.group(3) is not None:
            return words("stale {d} ago", d=found.group(3))
        if found.group(1) == "age":
            return words("age {age}", age=found.group(2))
        return words(templates[found.group(1)], d=found.group(2))

    def line(field: str, text: str) -> str:
        parts = text.split(" · ")
        if field == "head":  # id · weight · kind · share: the id is never translated
            return " · ".join([parts[0], *(words(p) if p in vocabulary else p for p in parts[1:])])
        if field == "time":
            return " · ".join(time(part) for part in parts)
        if field == "recommended":
            return words("recommended: {label}", label=text)
        return text
    return line
