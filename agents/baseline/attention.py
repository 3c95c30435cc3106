"""The baseline editor's answers to the user and to time: feedback, reminders, annotations, reviews.

``Attention`` is the part of the baseline planner that does not read mail:

* feedback — ``ack`` follows the feedback policy ("kept by value": no change;
  "notification centre": trace; none given: one step down, the assumption
  said in the reason); ``snooze`` lowers to low and keeps the due date;
  ``decide`` / ``input`` / ``act`` write the user's words into the summary;
  ``decide`` and ``input`` end the wait for the user, ``act`` covers only what
  it names (a request stays needs-you when the user says only part is done);
* a reminder raises its target to at least high (restoring it if withdrawn), unless it is done by then;
* a pending annotation is acknowledged only when the batch adjusts its item
  to it: raised or lowered by its words, marked as the user's plan, or its text
  written into the summary;
* every round, items the batch leaves alone are judged against time: a stale
  basis or a past due date is rewritten once as "last known …, to be
  verified" (never withdrawn or lowered for it), and a request due within two
  days is raised to high. Zero events decide nothing in advance: without such
  items the batch is empty.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from fold_core.timefmt import parse_instant
from fold_agents.baseline.draft import Draft
from fold_agents.baseline.plan import BUNDLE_IDS
from fold_agents.baseline.terms import AUTOPAY, words
from fold_agents.baseline.rules import heavier, lighter_by_one, line

__all__ = ["Attention"]

_KEEP = words("保留", "按价值", "仍", "keep", "kept", "retain", "stays", "remain")
_DROP = words("不再占位", "通知中心", "撤下", "不再显示", "notification centre", "notification center", "dismiss",
              "remove", "no longer")
_PARTLY = words("部分", "其中", "还差", "还剩", "剩下", "还没", "只", "先", "一份", "一张", "partly", "part of", "some of",
                "one of", "still", "remaining", "except", "but not", "only")
_RAISE = words("重要", "优先", "紧急", "置顶", "关注", "别忘", "urgent", "important", "priority", "asap", "don't forget")
_LOWER = words("不重要", "不用管", "忽略", "不关心", "不需要", "别管", "不急", "以后再说", "不用再提醒", "别再提醒", "不用提醒",
               "无需提醒", "不要再提醒", "不紧急", "没那么急", "降低", "调低", "放低", "低优先", "not urgent",
               "lower it", "less important", "low priority", "not important", "ignore", "don't care", "not needed", "no rush", "later",
               "don't remind", "no need to remind", "stop reminding")
_NOT_AUTOPAY = re.compile(r"不是自动|没有自动|没开自动|并非自动|未设自动|没设自动|取消了自动|不是代扣|not (?:on )?autopay|"
                          r"isn't autopay|not (?:on )?direct debit|not automatic|no autopay|cancell?ed (?:the |my )?"
                          r"(?:autopay|direct debit)")
_ASKED = re.compile(r"[?？]|为什么|为何|怎么回事|是不是|\bwhy\b|\bwhat\b", re.IGNORECASE)
_MARKED = re.compile(r"^(?:最后已知|已过截止|Last known|Past due)")


class Attention(Draft):
    """Feedback, reminders, annotations and the time review of the baseline planner."""

    # -- feedback and reminders ------------------------------------------------------------

    def feedback(self, event: Mapping[str, Any]) -> None:
        feedback = event["feedback"]
        target = self.resolve(feedback.get("target"), restore=False)
        if target is None:
            self.dispose(event["id"], "deferred", self.words("target_gone", item=feedback.get("target")), [])
            return
        item_id = target[0]
        meaning = feedback.get("meaning")
        current = self.changes.get(item_id)
        weight = current.weighed() if current else self.known.active[item_id]["weight"]
        lowered, why = self._lowered(meaning, weight, feedback.get("until"))
        value = line(feedback.get("value"), 60)
        if (meaning in ("ack", "snooze") and lowered == weight) or meaning not in ("ack", "snooze", "decide",
                                                                                    "input", "act"):
            self.dispose(event["id"], "used", self.words("used", item=item_id), [item_id])
            return  # nothing to change: the user already sees it at the lowest useful weight
        change = self.change(item_id, "patch")
        if lowered is not None:
            change.weight, change.lowered_reason = lowered, why
        elif meaning in ("input", "decide") and _NOT_AUTOPAY.search(value.lower()):
            # "this is not autopay": the user must pay it, whatever the mail's autopay words said
            change.kind, change.weight = "needs-you", heavier(change.weighed(), "high")
            change.reason = self.words("feedback_reason", meaning=meaning)
        elif meaning in ("input", "decide") and _LOWER.search(value.lower()):
            change.weight = heavier("low", lighter_by_one(change.weighed(), "low"))
            change.lowered_reason = change.reason = self.words("feedback_reason", meaning=meaning)
        else:
            if value:
                change.summary = self.words(meaning, limit=60, value=value)
            partly = meaning == "act" and bool(_PARTLY.search(value.lower()))
            if change.kind == "needs-you" and not partly:
                change.kind = "in-progress"
            change.reason = self.words("feedback_reason", meaning=meaning)
        self.cite(change, event, with_quote=False)
        self.dispose(event["id"], "used", self.words("used", item=item_id), [item_id])

    def _shown(self, until: Any) -> str:
        """A snooze's end as people read it, in the offset of the window's now (as given when unreadable)."""
        moment = parse_instant(until) if isinstance(until, str) else None
        return self.words.when(moment, self.moment) if moment is not None and self.moment else str(until)

    def _lowered(self, meaning: str, weight: str, until: Any) -> tuple[str | None, str | None]:
        if meaning == "snooze":
            lowered = "low" if weight in ("critical", "high", "normal") else weight
            return lowered, self.words("snooze_until", until=self._shown(until)) if until else self.words("snooze")
        if meaning != "ack":
            return None, None
        policy = " ".join(str(self.user.get(k) or "") for k in ("feedback_policy", "purpose")).lower()
        if _DROP.search(policy) and not _KEEP.search(str(self.user.get("feedback_policy") or "").lower()):
            return "trace", self.words("ack_drop")
        if _KEEP.search(policy):
            return weight, self.words("ack_keep")
        return lighter_by_one(weight, "low"), self.words("ack")

    def reminder(self, event: Mapping[str, Any]) -> None:
        reminder = event["reminder"]
        target = self.resolve(reminder.get("target"), restore=True)
        if target is None:
            self.dispose(event["id"], "deferred", self.words("target_gone", item=reminder.get("target")), [])
            return
        change = self.change(*target)
        if change.kind == "done":  # finished while it was snoozed: the reminder has nothing left to raise
            self.dispose(event["id"], "used", self.words("reminder_done", item=target[0]), [target[0]])
            return
        change.weight = "high" if change.weight is None else heavier(change.weight, "high")
        change.kind = change.kind or "needs-you"
        change.reason = self.words("reminder")
        self.cite(change, event, with_quote=False)
        self.dispose(event["id"], "used", self.words("used", item=target[0]), [target[0]])

    # -- annotations ---------------------------------------------------------------------------

    def annotate(self) -> None:
        """Adjust each pending annotation's item to it, and acknowledge it only then.

        A note is an instruction to the editor, not the item's words: it moves the weight (lower, raise,
        autopay) or adds a fact the reason records; the summary is never the note (only a restored item,
        whose stored summary is not visible, says it was restored for a note). A question the rules cannot
        answer stays pending for the user or a model editor."""
        for note in self.pending:
            target = self.resolve(note.get("resolved_item") or note.get("item"), restore=True)
            text = str(note.get("text") or "")
            low = text.lower()
            lower = bool(_LOWER.search(low) or AUTOPAY.search(low))
            higher = not lower and bool(_RAISE.search(low))
            if target is None or not text.strip() or (_ASKED.search(text) and not (lower or higher)):
                continue
            change = self.change(*target)
            if change.weight is None:  # a restored item: its stored weight is not visible
                change.weight, change.kind = "normal", "fyi"
            if lower:
                change.weight = heavier("low", lighter_by_one(change.weight, "low"))
                change.lowered_reason = self.words("annotation_reason", text=text)
                if change.kind == "needs-you" and AUTOPAY.search(low):
                    change.kind = "in-progress"  # paid automatically now: nothing left for the user to do
            elif higher and change.kind != "done":  # a finished matter does not rise
                change.weight = heavier(change.weight, "high")
            if change.mode == "restore" and change.summary is None:
                change.summary = self.words("annotation", limit=60, text=text)
            change.reason = self.words("annotation_reason" if lower or higher else "annotation_fact", text=text)
            self.annotations.append(note["id"])

    # -- time ----------------------------------------------------------------------------------

    def _covered(self, reason: str) -> str:
        """A review's reason, saying which sources failed: their silence is not news."""
        if not self.failing:
            return reason
        return line(f"{reason} {self.words('coverage_failing', sources=', '.join(self.failing[:3]))}", 200)

    def review(self) -> None:
        """Stale and past-due items rewritten once as "last known"; requests due within two days raised."""
        if self.moment is None:
            return
        for item_id, view in self.known.active.items():
            if item_id in self.changes or item_id in BUNDLE_IDS:
                continue
            summary = str(view.get("summary") or view.get("title") or "")
            stale = parse_instant(view.get("stale_after"))
            due = parse_instant(view.get("due_at"))
            if _MARKED.match(summary):
                continue
            if stale is not None and stale <= self.moment:
                change = self.change(item_id, "patch")
                change.summary = self.words("stale", limit=60, summary=summary)
                change.reason = self._covered(self.words("stale_reason"))
            elif due is not None and due <= self.moment and view["kind"] in ("needs-you", "in-progress"):
                change = self.change(item_id, "patch")
                change.summary = self.words("overdue", limit=60, due=self.words.when(due, self.moment),
                                            summary=summary)
                change.reason = self._covered(self.words("overdue_reason"))
            elif (due is not None and view["kind"] == "needs-you" and due - self.moment <= timedelta(days=2)
                  and view["weight"] in ("normal", "low", "trace") and not view.get("share_override")):
                change = self.change(item_id, "patch")
                change.weight = "high"
                change.reason = self.words("approaching", left=self.words.left(due, self.moment))
