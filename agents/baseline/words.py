"""The sentences the baseline editor writes itself (reasons, whys, bundle titles), in zh and en.

``Words(lang)("key", **values)`` fills one sentence, cleans the values and
cuts it to a limit; ``Words.rule(name)`` names a rule of ``baseline_mail``;
``Words.when(instant, now)`` and ``Words.left(instant, now)`` say a due date
and the time left (or past) in the offset of ``now``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fold_agents.baseline.rules import clean, line

__all__ = ["Words"]

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

_TEXT: dict[str, dict[str, Any]] = {
    "zh": {
        "untitled": "（无标题）",
        "rule": {"promotion": "促销或推销（紧急字眼也不改变它）", "phishing": "疑似钓鱼或诈骗（限时催促点链接验证账户、更新地址或付小额费用）", "bulk": "群发或订阅邮件，没有点名要你做什么",
                 "deadline": "需要你在截止前处理", "request": "请你处理或答复", "question": "当面问你的问题",
                 "incident": "生产环境告警", "on_duty": "你值班期间的告警", "on_leave": "你休假期间的告警，由值班的人处理",
                 "staging": "测试环境的告警", "partial": "只在部分范围验证，仍在进行", "autopay": "已设自动扣款，等待扣款结果",
                 "bill": "账单未设自动扣款，需要你在到期前缴费",
                 "waiting": "已提交或进行中，等待结果", "result": "已有结果", "failure": "报告了失败",
                 "info": "仅供知悉", "default": "按渠道默认"},
        "new": "基线规则：新事项，{rule}。",
        "new_due": "基线规则：新事项，{rule}；截止 {due}（{left}）。",
        "update": "基线规则：会话有新消息，{rule}。",
        "update_due": "基线规则：会话有新消息，{rule}；截止 {due}（{left}）。",
        "progressed": "基线规则：事项有了新进展（{rule}），按新情况调整。",
        "restore": "基线规则：已撤下事项有新消息，按原 ID 恢复（{rule}）。",
        "noise": "基线规则：{rule}，与用户事项无关。",
        "duplicate": "该事件已在条目来源中。",
        "duplicate_matter": "转发或重发的是条目 {item} 已说过的内容，没有新的时间、数字或状态。",
        "used": "基线规则：归入条目 {item}。",
        "advanced": "基线规则：这条消息带来条目 {item} 在等的东西，更新该条目，不另立新事项。",
        "confirms": "只确认条目 {item} 的原结论，不改写。",
        "parent_raised": "子项 {item} 升到 {weight}：父项随之升档，子项不会比父层让人看见的更重要。",
        "late": "这条消息早于条目 {item} 的最近更新，不覆盖已确认的结果。",
        "ack": "用户已阅；暂定理解：已阅事项让出一档注意力。",
        "ack_keep": "用户已阅；按反馈策略，已阅事项仍按价值保留。",
        "ack_drop": "用户已阅；按反馈策略，已阅后不再占位，降为 trace。",
        "snooze": "用户要求稍后提醒；基线规则：降为 low，届时再提起，截止时间不变。",
        "snooze_until": "用户要求稍后提醒（{until}）；基线规则：降为 low，届时再提起，截止时间不变。",
        "decide": "用户决定：{value}",
        "input": "用户提供：{value}",
        "act": "用户报告：{value}",
        "feedback_reason": "基线规则：用户反馈（{meaning}），只覆盖反馈所指的部分。",
        "reminder": "到点提醒：用户要求此刻再关注该事项；原截止时间不变。",
        "reminder_done": "到点提醒：事项 {item} 已完成，不再提起。",
        "target_gone": "反馈针对的条目 {item} 不在当前状态中，暂缓。",
        "annotation": "按批注恢复：{text}",
        "annotation_reason": "按用户批注调整：{text}",
        "annotation_fact": "用户批注补充了事实（已记入，档位不变）：{text}",
        "withdraw_budget": "预算不足：有了结果或仅供知悉的条目先让位，资料保留、可恢复。",
        "withdraw_open": "预算不足：基线规则撤下本层价值最低的进行中条目，资料保留、可恢复。",
        "demote_budget": "预算不足：基线规则降档，为更紧要的事项让位。",
        "budget_deferred": "本层预算已满，留待下一轮。",
        "bundle_needs_you": "另有 {count} 件待你处理",
        "bundle_needs_you_summary": "{count} 件需要你动手的事，最近截止 {due}。",
        "bundle_needs_you_plain": "{count} 件需要你动手的事，按紧急程度排列。",
        "bundle_updates": "其他 {count} 条动态",
        "bundle_updates_summary": "{count} 条结果、进展与通知，需要时展开查看。",
        "bundle_raised_summary": "{count} 条动态，其中“{title}”需要关注。",
        "bundle_reason": "预算不足：多件事合放在一个父项下，各自在子层保留。",
        "stale": "最后已知：{summary}，待核实",
        "stale_reason": "依据已过期且没有新的观测：改写为最后已知，待核实。",
        "coverage_failing": "来源 {sources} 本窗口抓取失败：它的沉默不说明没有变化。",
        "overdue": "已过截止 {due}；最后已知：{summary}，待核实",
        "overdue_reason": "已过截止时间：不撤下、不降档，提醒核实现状。",
        "approaching": "截止临近（{left}），升为 high。",
        "fallback": "基线回退：上次批次被拒（{codes}），本轮只做最小批次。",
        "learned_lower": "按用户习惯：{who}的消息此前 {count} 次被稍后处理或已阅未办，降一档。",
        "learned_raise": "按用户习惯：{who}的事此前 {count} 次由用户动手处理，升一档。",
        "who": {"sender": "该发件人", "thread": "该会话"},
        "purpose_up": "按用户目的：{topic}不能错过，升一档。", "purpose_down": "按用户目的：{topic}优先级低，降一档。",
        "topics": {"bills": "账单", "security": "安全问题", "shipping": "快递物流", "newsletters": "订阅资讯"},
        "sender": "{name}的来信",
        "left": "还剩 {n} {unit}", "past": "已过 {n} {unit}", "day": "天", "hour": "小时",
        "date": "{month}月{day}日 {hm}",
    },
    "en": {
        "untitled": "(untitled)",
        "rule": {"promotion": "a promotion or sales pitch (urgent words do not change that)", "phishing": "looks like phishing or a scam (hours to click a link to verify, update an address or pay a fee)",
                 "bulk": "bulk or subscription mail that asks nothing of you",
                 "deadline": "it needs you before a deadline", "request": "it asks you to act or answer",
                 "question": "a question to you", "incident": "a production alert",
                 "on_duty": "an alert while you are on duty", "on_leave": "an alert while you are on leave",
                 "staging": "an alert from a test environment", "partial": "verified only in part, still going",
                 "autopay": "autopay is set; waiting for the debit",
                 "bill": "a bill without autopay, yours to pay by its due date", "waiting": "submitted or in progress",
                 "result": "a reported result", "failure": "a reported failure", "info": "for your information",
                 "default": "the channel's default"},
        "new": "Baseline rule: a new matter, {rule}.",
        "new_due": "Baseline rule: a new matter, {rule}; due {due} ({left}).",
        "update": "Baseline rule: a new message in the thread, {rule}.",
        "update_due": "Baseline rule: a new message in the thread, {rule}; due {due} ({left}).",
        "progressed": "Baseline rule: the matter moved on ({rule}); adjusted to it.",
        "restore": "Baseline rule: a withdrawn matter has a new message; restored under its old id ({rule}).",
        "noise": "Baseline rule: {rule}, unrelated to the user's matters.",
        "duplicate": "This event is already among the item's sources.",
        "duplicate_matter": "A forward or re-send of what item {item} already says: no new time, number or status.",
        "used": "Baseline rule: filed under item {item}.",
        "advanced": "Baseline rule: this message brings what item {item} waits for; that item is updated, no new one.",
        "confirms": "It only confirms what item {item} says; no rewrite.",
        "parent_raised": "Its child {item} rose to {weight}: the parent rises with it, so the child is seen at that weight.",
        "late": "Older than item {item}'s last update: it does not override a confirmed result.",
        "ack": "The user acknowledged it; assumed: acknowledged items give up one step of attention.",
        "ack_keep": "The user acknowledged it; by the feedback policy it stays by its value.",
        "ack_drop": "The user acknowledged it; by the feedback policy it no longer takes room (trace).",
        "snooze": "The user asked to be reminded later; baseline rule: low until then, the due date unchanged.",
        "snooze_until": "The user asked to be reminded at {until}; baseline rule: low until then, the due date unchanged.",
        "decide": "User decided: {value}",
        "input": "User input: {value}",
        "act": "User reports: {value}",
        "feedback_reason": "Baseline rule: user feedback ({meaning}); it covers only the part it names.",
        "reminder": "Reminder: the user asked to look at this matter again now; the due date is unchanged.",
        "reminder_done": "Reminder: item {item} is done by now; nothing to raise.",
        "target_gone": "The feedback's item {item} is not in the current state; deferred.",
        "annotation": "Restored for a note: {text}",
        "annotation_reason": "Adjusted to the user's note: {text}",
        "annotation_fact": "The user's note adds a fact (recorded; weight unchanged): {text}",
        "withdraw_budget": "Over budget: finished and for-your-information items give way first (kept, restorable).",
        "withdraw_open": "Over budget: the layer's least valuable open item gives way (kept, restorable).",
        "demote_budget": "Over budget: lowered to make room for more pressing matters.",
        "budget_deferred": "The layer's budget is full; left for a later round.",
        "bundle_needs_you": "{count} more things need you",
        "bundle_needs_you_summary": "{count} things you must act on; the nearest is due {due}.",
        "bundle_needs_you_plain": "{count} things you must act on, most pressing first.",
        "bundle_updates": "{count} more updates",
        "bundle_updates_summary": "{count} results, progress notes and notices; open when needed.",
        "bundle_raised_summary": "{count} updates, among them “{title}”, which needs your attention.",
        "bundle_reason": "Over budget: several matters share one parent, each kept in its layer.",
        "stale": "Last known: {summary}; to be verified",
        "stale_reason": "The basis is stale and nothing new was observed: rewritten as last known, to verify.",
        "coverage_failing": "Source {sources} failed in this window: its silence is not news.",
        "overdue": "Past due {due}; last known: {summary}; to verify",
        "overdue_reason": "Past its due time: not withdrawn, not lowered; asks to verify where it stands.",
        "approaching": "Due soon ({left}): raised to high.",
        "fallback": "Baseline fallback: the last batch was rejected ({codes}); a minimal batch this time.",
        "learned_lower": "By the user's habit: {who} was put off or only acknowledged {count} times; one step lower.",
        "learned_raise": "By the user's habit: the user acted on {who} {count} times; one step higher.",
        "who": {"sender": "this sender", "thread": "this thread"},
        "purpose_up": "By the user's purpose: {topic} must not be missed; one step higher.",
        "purpose_down": "By the user's purpose: {topic} are low priority; one step lower.",
        "topics": {"bills": "bills", "security": "security problems", "shipping": "shipping notices",
                   "newsletters": "newsletters"},
        "sender": "messages from {name}",
        "left": "{n} {unit} left", "past": "{n} {unit} past", "day": "days", "hour": "hours",
        "date": "{month_en} {day} {hm}",
    },
}


class Words:
    """The baseline's own sentences in zh or en."""

    def __init__(self, lang: str) -> None:
        self.lang = lang if lang in _TEXT else "en"
        self._table = _TEXT[self.lang]

    def rule(self, name: str) -> str:
        return self._table["rule"].get(name, self._table["rule"]["default"])

    def __call__(self, key: str, limit: int = 200, **values: Any) -> str:
        """The sentence ``key`` with ``values`` (cleaned) filled in, cut to ``limit`` code points."""
        filled = self._table[key].format(**{k: clean(str(v)) for k, v in values.items()})
        return line(filled, limit)

    def topic(self, name: str) -> str:
        """A topic of the user's purpose (``baseline_purpose``) in words."""
        if name.startswith("from:"):  # a sender the user named
            return str(self._table["sender"]).format(name=clean(name[5:]))
        return self._table["topics"].get(name, name)

    def habit(self, direction: str, by: str, count: int) -> str:
        """Why the user's feedback moved a message (``user.learned``)."""
        return self(f"learned_{direction}", who=self._table["who"][by], count=count)

    def when(self, instant: datetime, now: datetime) -> str:
        """A due time in the offset of ``now``: "10月12日 17:00" / "Oct 12 17:00"."""
        local = instant.astimezone(now.tzinfo)
        return self._table["date"].format(month=local.month, month_en=_MONTHS[local.month - 1], day=local.day,
                                          hm=local.strftime("%H:%M"))

    def left(self, instant: datetime, now: datetime) -> str:
        """The time left until ``instant`` (or past it), in whole days or hours."""
        seconds = (instant - now).total_seconds()
        hours = int(abs(seconds) // 3600)
        n, unit = (hours // 24, self._table["day"]) if hours >= 24 else (max(hours, 1), self._table["hour"])
        return self._table["left" if seconds >= 0 else "past"].format(n=n, unit=unit)
